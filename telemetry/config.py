"""Prometheus and Alertmanager configuration for the simulated site, generated from the inventory.

`write_config(directory, ...)` writes everything scripts/telemetry-up starts the daemons with:

    prometheus.yml           scrape jobs `dcgm` and `node` over file-based service discovery
    targets/dcgm.json        one target per node: the exporter's address, the node's path in
    targets/node.json        `__metrics_path__`, the node's hostname as `instance`
    rules/portal.rules.yml   alerts: XID from DCGM_FI_DEV_XID_ERRORS, NIC link down
    alertmanager.yml         one route to the portal's webhook (/api/faults/alertmanager/),
                             authenticated with a portal API token read from a file
    exporter-spec.json       the nodes, GPUs and NICs the exporter serves (telemetry/exporter)
    telemetry.env            ports, read back by scripts/telemetry-up

Prometheus re-reads the target files by itself (file_sd), so a changed inventory needs only
`manage.py telemetry_config` again; the other files are read at start (or on reload).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from faults.policies import KNOWN_XIDS


@dataclass(frozen=True)
class TelemetryPorts:
    prometheus: int = 9090
    alertmanager: int = 9093
    exporter: int = 9400


@dataclass(frozen=True)
class Intervals:
    """Seconds. The site defaults are Prometheus's usual 15 s and Alertmanager's 30 s wait;
    tests use 1 s throughout so an alert reaches the portal in a few seconds."""

    scrape: float = 15
    evaluation: float = 15
    group_wait: float = 30
    group_interval: float = 60
    repeat_interval: float = 4 * 3600


def _duration(seconds: float) -> str:
    return f"{int(seconds * 1000)}ms"


def alert_rules(evaluation_seconds: float) -> dict:
    """The alerting rules. Each alert carries the labels the portal's intake maps
    (faults/parsing.py parse_alertmanager): `node`, `gpu` or `device`, `xid`, `severity`."""
    # One copy of the XID metric per job on the GPU (hpc_job): the alert is about the GPU.
    xid = "max without (hpc_job) (DCGM_FI_DEV_XID_ERRORS)"
    # Only XIDs the portal has a policy for fire: an unknown one would be refused (400).
    known = " or ".join(f"{xid} == {number}" for number in KNOWN_XIDS)
    return {
        "groups": [
            {
                "name": "portal-gpu-and-links",
                "interval": _duration(evaluation_seconds),
                "rules": [
                    {
                        "alert": "GPUXidError",
                        "expr": known,
                        "labels": {
                            "severity": "critical",
                            "node": "{{ $labels.Hostname }}",
                            "xid": "{{ $value }}",
                        },
                        "annotations": {
                            "summary": "XID {{ $value }} on {{ $labels.Hostname }} GPU "
                            "{{ $labels.gpu }} ({{ $labels.UUID }})",
                        },
                    },
                    {
                        "alert": "NICLinkDown",
                        # node_exporter's InfiniBand collector: 1 = down (4 = active).
                        "expr": "node_infiniband_state_id == 1",
                        "labels": {"severity": "warning", "node": "{{ $labels.instance }}"},
                        "annotations": {
                            "summary": "{{ $labels.device }} port {{ $labels.port }} on "
                            "{{ $labels.instance }} is down",
                        },
                    },
                ],
            }
        ]
    }


def _targets(nodes: list[dict], exporter_port: int, kind: str) -> list[dict]:
    return [
        {
            "targets": [f"127.0.0.1:{exporter_port}"],
            "labels": {
                "__metrics_path__": f"/{kind}/{node['hostname']}/metrics",
                "instance": node["hostname"],
            },
        }
        for node in nodes
    ]


def _write(path: Path, text: str) -> None:
    """Atomic: Prometheus may read a target file at any moment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def write_targets(directory: Path, nodes: list[dict], exporter_port: int) -> None:
    """The exporter's node list and the file-based service discovery targets."""
    _write(directory / "exporter-spec.json", json.dumps({"nodes": nodes}, indent=1))
    for kind in ("dcgm", "node"):
        _write(
            directory / "targets" / f"{kind}.json",
            json.dumps(_targets(nodes, exporter_port, kind), indent=1),
        )


def write_config(
    directory: Path,
    *,
    nodes: list[dict],
    webhook_url: str,
    token_file: Path,
    ports: TelemetryPorts | None = None,
    intervals: Intervals | None = None,
) -> None:
    """Write every file the daemons start with (see the module docstring)."""
    ports, intervals = ports or TelemetryPorts(), intervals or Intervals()
    directory = Path(directory).resolve()
    write_targets(directory, nodes, ports.exporter)
    prometheus = {
        "global": {
            "scrape_interval": _duration(intervals.scrape),
            "scrape_timeout": _duration(min(intervals.scrape, 10)),
            "evaluation_interval": _duration(intervals.evaluation),
        },
        "rule_files": [str(directory / "rules" / "*.yml")],
        "alerting": {
            "alertmanagers": [
                {"static_configs": [{"targets": [f"127.0.0.1:{ports.alertmanager}"]}]}
            ]
        },
        "scrape_configs": [
            {
                "job_name": kind,
                "file_sd_configs": [
                    {
                        "files": [str(directory / "targets" / f"{kind}.json")],
                        "refresh_interval": "5s",
                    }
                ],
            }
            for kind in ("dcgm", "node")
        ],
    }
    _write(directory / "prometheus.yml", yaml.safe_dump(prometheus, sort_keys=False))
    _write(
        directory / "rules" / "portal.rules.yml",
        yaml.safe_dump(alert_rules(intervals.evaluation), sort_keys=False),
    )
    alertmanager = {
        "route": {
            "receiver": "portal",
            # Every alert its own notification: one the portal refuses cannot take others along.
            "group_by": ["..."],
            "group_wait": _duration(intervals.group_wait),
            "group_interval": _duration(intervals.group_interval),
            "repeat_interval": _duration(intervals.repeat_interval),
        },
        "receivers": [
            {
                "name": "portal",
                "webhook_configs": [
                    {
                        "url": webhook_url,
                        "send_resolved": True,
                        "http_config": {
                            # prometheus/common reads the file on every request: a rotated
                            # token needs no restart.
                            "authorization": {
                                "type": "Token",
                                "credentials_file": str(Path(token_file).resolve()),
                            }
                        },
                    }
                ],
            }
        ],
    }
    _write(directory / "alertmanager.yml", yaml.safe_dump(alertmanager, sort_keys=False))
    _write(
        directory / "telemetry.env",
        f"PROMETHEUS_PORT={ports.prometheus}\nALERTMANAGER_PORT={ports.alertmanager}\n"
        f"EXPORTER_PORT={ports.exporter}\n",
    )


def inventory_nodes() -> list[dict]:
    """The exporter spec's nodes from the inventory: GPUs and RDMA NICs (mlx5_*)."""
    from inventory.models import Node

    nodes = []
    for node in Node.objects.order_by("hostname").prefetch_related("gpus", "nics"):
        nodes.append(
            {
                "hostname": node.hostname,
                "gpus": [
                    {"index": gpu.index, "uuid": gpu.uuid, "pci_bus_id": gpu.pci_bus_id}
                    for gpu in sorted(node.gpus.all(), key=lambda gpu: gpu.index)
                ],
                "nics": sorted(
                    nic.device for nic in node.nics.all() if nic.device.startswith("mlx5_")
                ),
            }
        )
    return nodes

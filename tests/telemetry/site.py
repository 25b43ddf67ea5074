"""A real Prometheus 2.42 and Alertmanager 0.25 with the simulated exporters, started through
scripts/telemetry-up in a directory of the test's own, with 1 s scrape, evaluation and grouping
so a sample or an alert arrives within seconds. Used as one module-scoped fixture."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from telemetry.config import Intervals, TelemetryPorts, write_config
from telemetry.job_mapping import write_job_mapping
from tests.support import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
HOSTNAMES = ("gpu001", "gpu002", "gpu003", "gpu004")


def gpu_uuid(number: int, index: int) -> str:
    """The UUIDs tests/faults/conftest.py build_fleet gives gpu00N's GPUs."""
    return f"GPU-{number:04d}{index:04d}-0000-0000-0000-000000000000"


def exporter_nodes() -> list[dict]:
    return [
        {
            "hostname": hostname,
            "gpus": [
                {"index": index, "uuid": gpu_uuid(number, index),
                 "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0"}
                for index in range(8)
            ],
            "nics": ["mlx5_0", "mlx5_1"],
        }
        for number, hostname in enumerate(HOSTNAMES, start=1)
    ]


class TelemetrySite:
    def __init__(self, directory: Path):
        self.directory = directory
        self.token_file = directory / "webhook-token"
        self.token_file.write_text("")
        self.ports = TelemetryPorts(
            prometheus=free_port(), alertmanager=free_port(), exporter=free_port()
        )
        # Nothing listens there until a test points the webhook at its live server.
        self._write_config(f"http://127.0.0.1:{free_port()}/api/faults/alertmanager/")
        self.env = {**os.environ, "TELEMETRY_DIR": str(directory)}
        self.prometheus_url = f"http://127.0.0.1:{self.ports.prometheus}"
        self.exporter_url = f"http://127.0.0.1:{self.ports.exporter}"

    def _write_config(self, webhook_url: str) -> None:
        write_config(
            self.directory,
            nodes=exporter_nodes(),
            webhook_url=webhook_url,
            token_file=self.token_file,
            ports=self.ports,
            intervals=Intervals(scrape=1, evaluation=1, group_wait=1, group_interval=1,
                                repeat_interval=3600),
        )

    def point_webhook_at(self, url: str) -> None:
        """Rewrite Alertmanager's receiver and have it reload (POST /-/reload), as an operator
        changing the portal's address would."""
        self._write_config(url)
        reload = urllib.request.Request(
            f"http://127.0.0.1:{self.ports.alertmanager}/-/reload", method="POST"
        )
        with urllib.request.urlopen(reload, timeout=10):
            pass

    def start(self) -> None:
        proc = subprocess.run([str(REPO_ROOT / "scripts" / "telemetry-up")], env=self.env,
                              capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"scripts/telemetry-up failed:\n{proc.stderr[-4000:]}")
        self.info = json.loads(proc.stdout.strip().splitlines()[-1])

    def stop(self) -> None:
        subprocess.run([str(REPO_ROOT / "scripts" / "telemetry-down")], env=self.env,
                       timeout=60, check=False)

    # --- what the simulated nodes do ------------------------------------------------------------

    def run_jobs(self, assignments: dict, profiles: dict | None = None) -> None:
        """assignments: {host: {gpu: [job ids]}}; profiles: {job id: percent} pinned."""
        (self.directory / "job-profiles.json").write_text(json.dumps(profiles or {}))
        write_job_mapping(self.directory, assignments, HOSTNAMES)

    def inject_faults(self, xid: dict | None = None, link_down: list | None = None) -> None:
        (self.directory / "faults.json").write_text(
            json.dumps({"xid": xid or {}, "link_down": link_down or []})
        )

    # --- reading Prometheus directly (never through the driver under test) ----------------------

    def query(self, promql: str, at: float | None = None) -> list[dict]:
        params = {"query": promql, **({"time": at} if at is not None else {})}
        url = f"{self.prometheus_url}/api/v1/query?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())["data"]["result"]

    def wait_for_samples(self, job_ids, minimum: int, timeout: float = 20.0) -> None:
        """Until every job has at least `minimum` scraped samples on each of its GPUs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            counts = {
                row["metric"]["hpc_job"]: float(row["value"][1])
                for row in self.query(
                    'min by (hpc_job) (count_over_time(DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}[1h]))'
                )
            }
            if all(counts.get(job_id, 0) >= minimum for job_id in job_ids):
                return
            time.sleep(0.25)
        raise AssertionError(f"Prometheus has not {minimum} samples of {job_ids}: {counts}")

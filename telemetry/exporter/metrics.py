"""What the simulated nodes' exporters say: dcgm-exporter's GPU metrics and node_exporter's
InfiniBand port state, in the Prometheus text format, following the jobs on each GPU.

No Django here: the exporter runs as its own process (`python -m telemetry.exporter`) and reads
only files in its state directory, as a real node's exporters read only the node:

    exporter-spec.json     {"nodes": [{"hostname", "gpus": [{"index", "uuid", "pci_bus_id"}],
                            "nics": ["mlx5_0", ...]}]}  (written from the inventory)
    hpc-jobs/<host>/<gpu>  job ids on that GPU, one a line: dcgm-exporter's HPC job mapping
                           directory, which a real site's Slurm prolog/epilog writes
    job-profiles.json      {"<job id>": percent}: pins a job's utilisation (tests, demos)
    faults.json            {"xid": {"<host>/<gpu>": 79}, "link_down": ["<host>/mlx5_4"]}

Formats modelled on the real tools (read in their source):
- dcgm-exporter 4.5.3-4.8.2 (NVIDIA/dcgm-exporter @ 691c927): the line shape is
  `gpuMetricsFormat` in internal/pkg/rendermetrics/render_metrics.go (labels gpu, UUID,
  pci_bus_id, device, modelName, Hostname, then extra attributes); HELP texts and types come
  from etc/default-counters.csv; the job label `hpc_job` is `hpcJobAttribute` in
  internal/pkg/transformation/const.go, added by `hpcMapper.Process` (transformation/hpc.go),
  which copies each GPU's metric once per job id listed in the mapping file named after the GPU
  index. A GPU with no job keeps its metric without the label.
- node_exporter (prometheus/node_exporter collector/infiniband_linux.go,
  NewInfiniBandCollector/Update): `node_infiniband_state_id{device, port}`, 1 = down,
  4 = active, for every RDMA device (mlx5_N, RoCE ones included).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MODEL_NAME = "NVIDIA H100 80GB HBM3"
FRAMEBUFFER_MIB = 81559
LOW_UTILISATION_PERCENT = 20

# etc/default-counters.csv: name, type, help.
DCGM_COUNTERS = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
)
INFINIBAND_STATE_HELP = (
    "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, "
    "5: act defer)"
)
PORT_STATE_DOWN, PORT_STATE_ACTIVE = 1, 4
# Paper Observation 3: the share of time a job of this many nodes spends below 20%
# (1-2 nodes ~70-76%, 3-16 nodes moderate, 17-64 nodes ~1%).
LOW_PHASE_PROBABILITY = ((2, 0.72), (16, 0.35), (None, 0.02))
PHASE_SECONDS = 5


@dataclass
class ExporterState:
    """Everything read from the state directory for one scrape."""

    nodes: dict[str, dict]
    jobs_by_gpu: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    job_node_counts: dict[str, int] = field(default_factory=dict)
    profiles: dict[str, float] = field(default_factory=dict)
    xid: dict[str, int] = field(default_factory=dict)
    links_down: set[str] = field(default_factory=set)


def _read_json(path: Path, default):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def read_state(directory: Path) -> ExporterState:
    spec = _read_json(directory / "exporter-spec.json", {"nodes": []})
    nodes = {node["hostname"]: node for node in spec.get("nodes", [])}
    state = ExporterState(nodes=nodes)
    hosts_by_job: dict[str, set[str]] = {}
    mapping = directory / "hpc-jobs"
    for hostname in nodes:
        host_dir = mapping / hostname
        if not host_dir.is_dir():
            continue
        for gpu_file in host_dir.iterdir():
            if not gpu_file.name.isdigit():  # hpc.go validGPUFile: plain GPU ids only here
                continue
            try:
                job_ids = [line.strip() for line in gpu_file.read_text().splitlines()]
            except OSError:
                continue
            job_ids = [job_id for job_id in job_ids if job_id]
            state.jobs_by_gpu[(hostname, int(gpu_file.name))] = job_ids
            for job_id in job_ids:
                hosts_by_job.setdefault(job_id, set()).add(hostname)
    state.job_node_counts = {job: len(hosts) for job, hosts in hosts_by_job.items()}
    state.profiles = {
        str(job): float(value)
        for job, value in _read_json(directory / "job-profiles.json", {}).items()
    }
    faults = _read_json(directory / "faults.json", {})
    state.xid = {str(key): int(value) for key, value in faults.get("xid", {}).items()}
    state.links_down = {str(key) for key in faults.get("link_down", [])}
    return state


def _unit(*parts) -> float:
    """A stable pseudo-random number in [0, 1) for these parts (same on every scrape)."""
    return zlib.crc32("|".join(map(str, parts)).encode()) / 2**32


def simulated_utilisation(job_id: str, node_count: int, gpu_key: str, now: float) -> float:
    """A job's GPU utilisation in percent at `now`: phases of PHASE_SECONDS, low (below 20%)
    with the probability the paper's Observation 3 gives for its size, busy otherwise."""
    probability = next(
        p for limit, p in LOW_PHASE_PROBABILITY if limit is None or node_count <= limit
    )
    phase = int(now // PHASE_SECONDS)
    if _unit(job_id, phase) < probability:
        return float(int(_unit(job_id, phase, gpu_key) * 15))
    floor = 85 if node_count > 16 else 45
    return float(floor + int(_unit(job_id, phase, gpu_key) * (101 - floor)))


def _gpu_values(utilisation: float | None, job_count: int) -> dict[str, float]:
    if utilisation is None:  # no job: an idle GPU with the driver loaded
        return {"util": 0.0, "active": 0.0, "fb": 0.0, "power": 69.0}
    return {
        "util": utilisation,
        "active": round(utilisation / 100 * 0.97, 4),
        "fb": float(2048 + int(utilisation / 100 * 70000)) if job_count else 0.0,
        "power": round(72.0 + utilisation * 6.2, 1),
    }


def render_dcgm(state: ExporterState, hostname: str, now: float) -> str:
    """dcgm-exporter's page for one node (render_metrics.go gpuMetricsFormat)."""
    node = state.nodes[hostname]
    rows: dict[str, list[str]] = {name: [] for name, _, _ in DCGM_COUNTERS}
    for gpu in node.get("gpus", []):
        index = int(gpu["index"])
        base = (
            f'gpu="{index}",UUID="{gpu.get("uuid", "")}",pci_bus_id="{gpu.get("pci_bus_id", "")}",'
            f'device="nvidia{index}",modelName="{MODEL_NAME}",Hostname="{hostname}"'
        )
        job_ids = state.jobs_by_gpu.get((hostname, index), [])
        xid = state.xid.get(f"{hostname}/{index}", 0)
        # hpcMapper.Process: one copy of each metric per job on the GPU, else one without it.
        for job_id in job_ids or [None]:
            if job_id is None:
                values = _gpu_values(None, 0)
                labels = base
            else:
                utilisation = state.profiles.get(job_id)
                if utilisation is None:
                    utilisation = simulated_utilisation(
                        job_id, state.job_node_counts.get(job_id, 1), f"{hostname}/{index}", now
                    )
                values = _gpu_values(utilisation, len(job_ids))
                labels = f'{base},hpc_job="{job_id}"'
            rows["DCGM_FI_DEV_GPU_UTIL"].append(f"{{{labels}}} {values['util']:g}")
            rows["DCGM_FI_PROF_GR_ENGINE_ACTIVE"].append(f"{{{labels}}} {values['active']:g}")
            rows["DCGM_FI_DEV_FB_USED"].append(f"{{{labels}}} {values['fb']:g}")
            rows["DCGM_FI_DEV_POWER_USAGE"].append(f"{{{labels}}} {values['power']:g}")
            rows["DCGM_FI_DEV_XID_ERRORS"].append(f"{{{labels}}} {xid}")
    lines = []
    for name, prom_type, help_text in DCGM_COUNTERS:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {prom_type}")
        lines.extend(f"{name}{row}" for row in rows[name])
    return "\n".join(lines) + "\n"


def render_node(state: ExporterState, hostname: str) -> str:
    """node_exporter's InfiniBand port state for one node (collector/infiniband_linux.go)."""
    node = state.nodes[hostname]
    lines = [
        f"# HELP node_infiniband_state_id {INFINIBAND_STATE_HELP}",
        "# TYPE node_infiniband_state_id gauge",
    ]
    for device in node.get("nics", []):
        down = f"{hostname}/{device}" in state.links_down
        value = PORT_STATE_DOWN if down else PORT_STATE_ACTIVE
        lines.append(f'node_infiniband_state_id{{device="{device}",port="1"}} {value}')
    return "\n".join(lines) + "\n"

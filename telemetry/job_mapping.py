"""dcgm-exporter's HPC job mapping directory for the simulated nodes.

On a real site a Slurm prolog writes the job id into `<dir>/<gpu index>` on each node the job
gets, and the epilog removes it (dcgm-exporter --hpc-job-mapping-dir; the exporter reads these
files on every scrape: transformation/hpc.go hpcMapper.Process). The simulated nodes have no
prolog, so the portal writes the same files from the running jobs it knows (any Slurm driver):
`manage.py telemetry_job_mapping --dir var/telemetry --loop 5` in the demo.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

GPUS_PER_NODE = 8
Assignments = Mapping[str, Mapping[int, list[str]]]  # hostname -> GPU index -> job ids


def write_job_mapping(directory: Path, assignments: Assignments, hostnames) -> None:
    """Make `<directory>/hpc-jobs/<host>/<gpu>` say exactly `assignments` for `hostnames`:
    each file replaced atomically, files of GPUs without a job removed."""
    root = Path(directory) / "hpc-jobs"
    for hostname in hostnames:
        host_dir = root / hostname
        host_dir.mkdir(parents=True, exist_ok=True)
        wanted = {str(index): jobs for index, jobs in assignments.get(hostname, {}).items() if jobs}
        for existing in host_dir.iterdir():
            if existing.name.isdigit() and existing.name not in wanted:
                existing.unlink(missing_ok=True)
        for name, jobs in wanted.items():
            temporary = host_dir / f".{name}.tmp"
            temporary.write_text("".join(f"{job}\n" for job in jobs))
            os.replace(temporary, host_dir / name)


def running_job_assignments() -> dict[str, dict[int, list[str]]]:
    """GPU indexes of the running jobs on each node, as Slurm's gres/gpu would hand them out:
    jobs in start order take the lowest free indexes, `gpus / node_count` on each node."""
    from jobs.selectors import running_jobs

    assignments: dict[str, dict[int, list[str]]] = {}
    jobs = running_jobs().filter(gpus__gt=0).order_by("start_time", "pk").prefetch_related("nodes")
    for job in jobs:
        nodes = list(job.nodes.all())
        if not nodes:
            continue
        per_node = max(1, min(GPUS_PER_NODE, job.gpus // len(nodes)))
        for node in nodes:
            used = assignments.setdefault(node.hostname, {})
            free = [index for index in range(GPUS_PER_NODE) if index not in used]
            for index in free[:per_node]:
                used[index] = [job.job_id]
    return assignments

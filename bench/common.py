"""Pieces the benchmark scripts share: latency summaries, stopping what they started, and the
SAKURAONE spec past the importer's limit of copies.

The scripts run as `python bench/<name>.py`, so this module is importable by its plain name.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p95/min/max of millisecond samples (p95 as the nearest rank)."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(p95, 2),
        "min_ms": round(ordered[0], 2),
        "max_ms": round(ordered[-1], 2),
        "n": len(ordered),
    }


def stop_process_group(process: subprocess.Popen, timeout: float = 10) -> None:
    """SIGTERM the process's group (started with start_new_session), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


MAX_IMPORT_SCALE = 50  # inventory.topology refuses more copies of a spec's pods
MAX_SCALE = 125  # the 100,000-GPU plan: 12,500 nodes, 2,010 switches


def spec_at_scale(spec: dict, scale: int) -> tuple[dict, int]:
    """The spec and the --scale that give `scale` copies of its pods: beyond the importer's
    limit (125 is 250 pods), the spec's own pods are repeated first, renamed and renumbered as
    the importer's copies would be, so p1..p250 and gpu001..gpu12500 come out the same."""
    if scale <= MAX_IMPORT_SCALE:
        return spec, scale
    repeat = next(f for f in range(2, scale + 1)
                  if scale % f == 0 and scale // f <= MAX_IMPORT_SCALE)
    base = spec["pods"]
    nodes_per_pod = 50
    pods = []
    for copy in range(repeat):
        for index, pod in enumerate(base):
            number = copy * len(base) + index + 1
            first = (number - 1) * nodes_per_pod + 1
            pods.append({**pod, "name": f"p{number}", "description": f"Pod {number}",
                         "nodes": [{**pod["nodes"][0],
                                    "range": f"gpu[{first:03d}-{first + nodes_per_pod - 1:03d}]"}]})
    # Switches with scale_ports (spines, storage) grow with --scale; they must also hold the
    # repeated pods, as they would with --scale 125: a template with `repeat` times the ports.
    templates = dict(spec["switch_templates"])
    groups = []
    for group in spec["switch_groups"]:
        if group.get("scale_ports"):
            name = f"{group['template']}-x{repeat}"
            template = templates[group["template"]]
            templates[name] = {**template, "port_count": template["port_count"] * repeat}
            group = {**group, "template": name}
        groups.append(group)
    return ({**spec, "pods": pods, "switch_templates": templates, "switch_groups": groups},
            scale // repeat)


def analyze_like_autovacuum() -> None:
    """ANALYZE the bench database once its data is in, as a production server's autovacuum does
    within a minute of a load. This machine's PostgreSQL runs with autovacuum off, and a small
    import (scale 1: 6,400 rows, under the importer's own threshold) left every table without
    statistics: the planner then guessed, e.g. 8.9 instead of 3.3 ms for a page's far ports."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")

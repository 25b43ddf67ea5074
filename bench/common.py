"""Pieces the benchmark scripts share: latency summaries and stopping what they started.

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

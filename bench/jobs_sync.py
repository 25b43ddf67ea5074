"""Cost of the node-state and live-job syncs against the simulator, for 100 and 2,000 nodes.

    DATABASE_URL=... .venv/bin/python bench/jobs_sync.py [--repeat 20]

Everything runs inside one transaction that is rolled back: the database is left as it was.
Prints JSON: per fleet size, milliseconds (median and p95) and queries per sync, with no change
and with 10% of the nodes changing state.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")


class Rollback(Exception):
    pass


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(function, repeat: int, prepare=None) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    timings, queries = [], []
    for _ in range(repeat):
        if prepare:
            prepare()
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            function()
            timings.append((time.perf_counter() - start) * 1000)
        queries.append(len(captured))
    return {
        "median_ms": round(statistics.median(timings), 2),
        "p95_ms": round(percentile(timings, 0.95), 2),
        "queries": max(queries),
    }


def bench_fleet(size: int, repeat: int) -> dict:
    from django.db import transaction

    from inventory.models import Node
    from jobs.drivers.simulator import SimulatorDriver
    from jobs.sync import sync_live_jobs, sync_node_states

    result = {}
    try:
        with transaction.atomic():
            names = [f"bench{number:05d}" for number in range(1, size + 1)]
            Node.objects.bulk_create([Node(hostname=name) for name in names], batch_size=1000)
            driver = SimulatorDriver(
                cluster=f"bench-{size}", node_names=names, history_hours=24,
                mean_arrival_seconds=2700 * 100 / size, mean_failure_seconds=0,
            )
            sync_node_states(driver=driver)
            sync_live_jobs(driver=driver)
            result["node_sync_no_change"] = measure(lambda: sync_node_states(driver=driver), repeat)
            changing = names[: max(1, size // 10)]
            flip = {"drained": False}

            def toggle():
                if flip["drained"]:
                    driver.resume(changing)
                else:
                    driver.drain(changing, "bench")
                flip["drained"] = not flip["drained"]

            result["node_sync_10pct_change"] = measure(
                lambda: sync_node_states(driver=driver), repeat, prepare=toggle
            )
            result["driver_nodes_call"] = measure(driver.nodes, repeat)
            result["live_job_sync"] = measure(lambda: sync_live_jobs(driver=driver), repeat)
            raise Rollback
    except Rollback:
        pass
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    import django

    django.setup()
    from django.db import connection

    report = {"database": connection.vendor, "repeat": args.repeat}
    for size in (100, 2000):
        report[f"{size}_nodes"] = bench_fleet(size, args.repeat)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""The telemetry driver against a real Prometheus 2.42: 1,000 jobs' GPU utilisation.

    .venv/bin/python bench/telemetry.py [--jobs 1000] [--seconds 20] [--repeat 5]

Starts scripts/telemetry-up in a temporary directory (1 s scrapes) with the simulated exporters
serving jobs/8 nodes of 8 GPUs, one job per GPU, waits `--seconds` of samples, then times the
driver's reads (each repeated): Observation 3's three queries for every job at once
(`job_summaries` over the last hour), the same restricted to the 1,000 job ids (the tenant page's
form), one job's series (the job page) and the idle-GPU view's query. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

import django  # noqa: E402

django.setup()

from common import percentiles  # noqa: E402
from django.conf import settings  # noqa: E402

from telemetry.config import Intervals, TelemetryPorts, write_config  # noqa: E402
from telemetry.drivers.prometheus import PrometheusDriver  # noqa: E402
from telemetry.job_mapping import write_job_mapping  # noqa: E402
from tests.support import free_port  # noqa: E402


def timed(function, repeat: int) -> dict:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        samples.append((time.perf_counter() - started) * 1000)
    return {**percentiles(samples), "result_size": len(result)}


def wait_until_scraped(port: int, targets: int, timeout: float = 120) -> None:
    """Until every target has answered a scrape (file SD and the first scrapes take a while)."""
    query = urllib.parse.urlencode({"query": "count(up == 1)"})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{query}") as response:
            result = json.loads(response.read())["data"]["result"]
        if result and int(float(result[0]["value"][1])) >= targets:
            return
        time.sleep(0.5)
    raise SystemExit(f"not every one of {targets} targets answered within {timeout}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    node_count = -(-args.jobs // 8)
    hostnames = [f"gpu{n:04d}" for n in range(1, node_count + 1)]
    nodes = [{"hostname": host, "gpus": [{"index": i, "uuid": f"GPU-{host}-{i}"} for i in range(8)],
              "nics": ["mlx5_0"]} for host in hostnames]
    job_ids = [f"{100000 + n}" for n in range(args.jobs)]
    assignments: dict = {}
    for position, job_id in enumerate(job_ids):
        assignments.setdefault(hostnames[position // 8], {})[position % 8] = [job_id]
    with tempfile.TemporaryDirectory(prefix="bench-telemetry-") as temporary:
        directory = Path(temporary)
        ports = TelemetryPorts(free_port(), free_port(), free_port())
        (directory / "webhook-token").write_text("")
        write_config(directory, nodes=nodes, webhook_url=f"http://127.0.0.1:{free_port()}/",
                     token_file=directory / "webhook-token", ports=ports,
                     intervals=Intervals(scrape=1, evaluation=1, group_wait=1, group_interval=1))
        write_job_mapping(directory, assignments, hostnames)
        env = {**os.environ, "TELEMETRY_DIR": str(directory)}
        subprocess.run([str(ROOT / "scripts" / "telemetry-up")], env=env, check=True,
                       capture_output=True)
        try:
            wait_until_scraped(ports.prometheus, 2 * node_count)
            time.sleep(args.seconds)
            settings.TELEMETRY_STEP_SECONDS = 1.0
            driver = PrometheusDriver(f"http://127.0.0.1:{ports.prometheus}")
            end = datetime.now(tz=UTC)
            start = end - timedelta(hours=1)
            figures = {
                "jobs": args.jobs,
                "gpu_series": args.jobs,
                "seconds_of_samples": args.seconds,
                "job_summaries_all_jobs": timed(lambda: driver.job_summaries(start, end),
                                                args.repeat),
                "job_summaries_1000_ids": timed(
                    lambda: driver.job_summaries(start, end, job_ids=job_ids), args.repeat
                ),
                "job_series_one_job": timed(
                    lambda: driver.job_series(job_ids[0], end - timedelta(minutes=5), end, 1),
                    args.repeat,
                ),
                "gpus_in_jobs": timed(lambda: driver.gpus_in_jobs(300), args.repeat),
            }
        finally:
            subprocess.run([str(ROOT / "scripts" / "telemetry-down")], env=env, check=False)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

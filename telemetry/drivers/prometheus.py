"""Telemetry from Prometheus's HTTP API (/api/v1/query, /api/v1/query_range), over the series
dcgm-exporter writes with its HPC job mapping: `DCGM_FI_DEV_GPU_UTIL{hpc_job="<job id>",
Hostname, gpu, UUID}` (NVIDIA/dcgm-exporter internal/pkg/transformation/hpc.go; see
telemetry/exporter/metrics.py for the exact format).

Every aggregation is done by Prometheus, in three instant queries for all jobs of a period at
once, so the analytics page costs the same for ten jobs or a hundred thousand.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime

from django.conf import settings

from telemetry.drivers.base import (
    LOW_UTILISATION_PERCENT,
    GpuInJob,
    JobUtilisation,
    TelemetryDriver,
    TelemetryUnavailable,
    UtilisationPoint,
)

UTILISATION = "DCGM_FI_DEV_GPU_UTIL"
IN_A_JOB = f'{UTILISATION}{{hpc_job!=""}}'
MAX_SUBQUERY_STEPS = 20000


def _label_value(value: str) -> str:
    """A PromQL string literal's content (job ids come from Slurm, but never trust them)."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


class PrometheusDriver(TelemetryDriver):
    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.timeout = float(getattr(settings, "PROMETHEUS_TIMEOUT", 5.0))
        self.step_seconds = float(getattr(settings, "TELEMETRY_STEP_SECONDS", 60.0))

    # --- HTTP -----------------------------------------------------------------------------------

    def _get(self, path: str, params: dict) -> dict:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            # The URL is PROMETHEUS_URL from settings, not user input.
            with urllib.request.urlopen(url, timeout=self.timeout) as response:  # noqa: S310
                body = json.loads(response.read())
        except urllib.error.HTTPError as error:
            # Prometheus answers a bad query with 400/422 and a JSON error.
            try:
                detail = json.loads(error.read()).get("error", "")
            except ValueError:
                detail = ""
            message = f"Prometheus refused {path}: {error.code} {detail}"
            raise TelemetryUnavailable(message) from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise TelemetryUnavailable(f"Prometheus at {self.url} unreachable: {error}") from None
        if body.get("status") != "success":
            raise TelemetryUnavailable(f"Prometheus: {body.get('error', 'query failed')}")
        return body["data"]

    def _instant(self, query: str, at: datetime) -> list[dict]:
        return self._get("/api/v1/query", {"query": query, "time": at.timestamp()})["result"]

    # --- the interface --------------------------------------------------------------------------

    def ping(self) -> None:
        self._get("/api/v1/status/buildinfo", {})

    def job_series(self, job_id, start, end, step_seconds):
        selector = f'{UTILISATION}{{hpc_job="{_label_value(job_id)}"}}'
        data = self._get(
            "/api/v1/query_range",
            {
                "query": selector,
                "start": start.timestamp(),
                "end": end.timestamp(),
                "step": max(1.0, float(step_seconds)),
            },
        )
        by_time: dict[float, list[float]] = {}
        for series in data["result"]:
            for timestamp, value in series["values"]:
                by_time.setdefault(float(timestamp), []).append(float(value))
        return [
            UtilisationPoint(
                at=datetime.fromtimestamp(timestamp, tz=UTC),
                mean_percent=sum(values) / len(values),
                gpus=len(values),
            )
            for timestamp, values in sorted(by_time.items())
        ]

    def job_summaries(self, start, end, job_ids=None):
        seconds = max(1, int((end - start).total_seconds()))
        # The subquery's cost grows with range / step: past MAX_SUBQUERY_STEPS the resolution
        # coarsens instead (a year at 60 s would be 525,600 steps per GPU).
        # A range shorter than ten steps gets a finer step, or it could miss every sample.
        step = max(1, min(int(self.step_seconds), seconds // 10),
                   math.ceil(seconds / MAX_SUBQUERY_STEPS))
        selector = IN_A_JOB
        if job_ids is not None:
            if not job_ids:
                return {}
            pattern = "|".join(re.escape(job_id) for job_id in job_ids)
            selector = f'{UTILISATION}{{hpc_job=~"{_label_value(pattern)}"}}'
        # Per GPU, its mean over the range; per job, the mean of its GPUs (Observation 3).
        per_gpu = "avg by (hpc_job, Hostname, gpu)"
        means = self._instant(
            f"avg by (hpc_job) ({per_gpu} (avg_over_time({selector}[{seconds}s])))", end
        )
        # Per GPU, the share of its samples below 20% (a subquery of 0/1 at each step).
        low = self._instant(
            f"avg by (hpc_job) ({per_gpu} (avg_over_time(({selector} < bool "
            f"{LOW_UTILISATION_PERCENT:g})[{seconds}s:{step}s])))",
            end,
        )
        # GPUs, not series: one GPU may have several (e.g. an exporter restarted with new labels).
        gpus = self._instant(
            f"count by (hpc_job) (count by (hpc_job, Hostname, gpu) "
            f"(count_over_time({selector}[{seconds}s])))",
            end,
        )
        low_by_job = {row["metric"].get("hpc_job"): float(row["value"][1]) for row in low}
        gpus_by_job = {row["metric"].get("hpc_job"): int(float(row["value"][1])) for row in gpus}
        summaries = {}
        for row in means:
            job_id = row["metric"].get("hpc_job")
            if not job_id:
                continue
            summaries[job_id] = JobUtilisation(
                job_id=job_id,
                mean_percent=float(row["value"][1]),
                low_share=low_by_job.get(job_id),
                gpus=gpus_by_job.get(job_id, 0),
            )
        return summaries

    def gpus_in_jobs(self, window_seconds):
        now = datetime.now(tz=UTC)
        rows = self._instant(
            f"avg_over_time({IN_A_JOB}[{max(1, int(window_seconds))}s])", now
        )
        gpus = []
        for row in rows:
            labels = row["metric"]
            try:
                index = int(labels.get("gpu", ""))
            except ValueError:
                continue
            gpus.append(
                GpuInJob(
                    job_id=labels["hpc_job"],
                    hostname=labels.get("Hostname") or labels.get("instance", ""),
                    gpu_index=index,
                    uuid=labels.get("UUID", ""),
                    mean_percent=float(row["value"][1]),
                )
            )
        return gpus

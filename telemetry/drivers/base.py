"""The telemetry driver interface (DESIGN.md sections 4 and 11): what the portal reads from the
site's GPU telemetry, by Slurm job id.

Implementation chosen by dotted path in `settings.TELEMETRY_DRIVER`; the one real driver is
`telemetry.drivers.prometheus.PrometheusDriver` (dcgm-exporter's metrics with the HPC job label,
read through `settings.PROMETHEUS_URL`). Without PROMETHEUS_URL there is no driver at all
(`get_telemetry_driver()` is None) and every page says "no telemetry configured".
Drivers return these dataclasses, never models, and raise only TelemetryUnavailable.
The contract is tested against a real Prometheus in tests/telemetry/test_prometheus.py.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.conf import settings

LOW_UTILISATION_PERCENT = 20.0  # paper Observation 3: "low-utilization states (below 20%)"


class TelemetryUnavailable(Exception):
    """The telemetry server could not be reached, timed out or refused the query."""


@dataclass(frozen=True)
class UtilisationPoint:
    at: datetime
    mean_percent: float  # over the job's GPUs at that moment
    gpus: int  # how many of its GPUs reported


@dataclass(frozen=True)
class JobUtilisation:
    """One job over a time range: the mean of its GPUs' mean utilisation (Observation 3), and
    the share of its GPU time spent below LOW_UTILISATION_PERCENT (0..1; None when no step of
    the share's subquery fell on a sample, e.g. a job shorter than the step)."""

    job_id: str
    mean_percent: float
    low_share: float | None
    gpus: int


@dataclass(frozen=True)
class GpuInJob:
    """A GPU a running job holds, with its mean utilisation over the recent window."""

    job_id: str
    hostname: str
    gpu_index: int
    uuid: str
    mean_percent: float


class TelemetryDriver(ABC):
    @abstractmethod
    def ping(self) -> None:
        """Return when the server answers; raise TelemetryUnavailable otherwise."""

    @abstractmethod
    def job_series(
        self, job_id: str, start: datetime, end: datetime, step_seconds: float
    ) -> list[UtilisationPoint]:
        """The job's mean GPU utilisation every `step_seconds` from start to end (points
        where no GPU of the job reported are absent)."""

    @abstractmethod
    def job_summaries(
        self, start: datetime, end: datetime, job_ids: Sequence[str] | None = None
    ) -> dict[str, JobUtilisation]:
        """Every job (or only `job_ids`) with GPU samples in [start, end], by job id."""

    @abstractmethod
    def gpus_in_jobs(self, window_seconds: float) -> list[GpuInJob]:
        """Every GPU reporting a job now, with its mean utilisation over the last window."""


@cache
def _driver_for(path: str, url: str) -> TelemetryDriver:
    module_name, _, class_name = path.rpartition(".")
    return getattr(importlib.import_module(module_name), class_name)(url)


def get_telemetry_driver() -> TelemetryDriver | None:
    """The configured driver, or None where no PROMETHEUS_URL is set (no telemetry)."""
    url = (getattr(settings, "PROMETHEUS_URL", "") or "").strip()
    if not url:
        return None
    return _driver_for(settings.TELEMETRY_DRIVER, url)

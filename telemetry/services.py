"""Writes of the telemetry app: each finished GPU job's utilisation, summarised once.

`summarise_finished_jobs` asks Prometheus (through the telemetry driver) for the jobs that have
no settled summary yet, in batches of job ids over the batch's time range, and stores what it
says. A job whose end is less than TELEMETRY_SUMMARY_SETTLE_SECONDS ago is stored unsettled and
asked again on a later run: its last samples may not be scraped yet. A job Prometheus has no
sample of is stored with no mean (counted in Observation 3, not measured), once settled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from jobs.models import LIVE_STATES, Job
from telemetry.drivers.base import TelemetryDriver, get_telemetry_driver
from telemetry.models import JobUtilisationSummary

# Job ids per Prometheus query: the ids go into one regex matcher of the query string.
IDS_PER_QUERY = 500


@dataclass
class SummaryRun:
    asked: int = 0
    stored: int = 0
    settled: int = 0
    without_samples: int = 0


def summary_pending(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """The finished GPU jobs of `jobs` with no settled summary."""
    return (
        jobs.exclude(state__in=LIVE_STATES)
        .filter(gpus__gt=0, start_time__isnull=False, end_time__isnull=False)
        .filter(Q(utilisation_summary__isnull=True) | Q(utilisation_summary__settled=False))
    )


def _settle_seconds() -> float:
    return float(settings.TELEMETRY_SUMMARY_SETTLE_SECONDS)


def _batches(jobs: list[Job]) -> Iterable[list[Job]]:
    for offset in range(0, len(jobs), IDS_PER_QUERY):
        yield jobs[offset : offset + IDS_PER_QUERY]


def summarise_finished_jobs(
    *,
    jobs: QuerySet[Job] | None = None,
    limit: int | None = None,
    driver: TelemetryDriver | None = None,
    now: datetime | None = None,
) -> SummaryRun:
    """Summarise up to `limit` (TELEMETRY_SUMMARY_BATCH) pending jobs of `jobs` (all jobs),
    earliest end first. Raises TelemetryUnavailable when Prometheus does not answer (nothing of
    that batch is stored); returns counts."""
    driver = driver or get_telemetry_driver()
    run = SummaryRun()
    if driver is None:
        return run
    now = now or timezone.now()
    limit = int(limit or settings.TELEMETRY_SUMMARY_BATCH)
    pending = list(
        summary_pending(jobs if jobs is not None else Job.objects.all())
        .order_by("end_time", "pk")
        .only("pk", "job_id", "start_time", "end_time")[:limit]
    )
    settled_before = now - timedelta(seconds=_settle_seconds())
    for batch in _batches(pending):
        start = min(job.start_time for job in batch)
        end = min(max(job.end_time for job in batch), now)
        answers = driver.job_summaries(start, end, job_ids=[job.job_id for job in batch])
        rows = []
        for job in batch:
            answer = answers.get(job.job_id)
            settled = job.end_time <= settled_before
            rows.append(JobUtilisationSummary(
                job_id=job.pk,
                mean_percent=None if answer is None else answer.mean_percent,
                low_share=None if answer is None else answer.low_share,
                gpus_reporting=0 if answer is None else answer.gpus,
                summarised_at=now,
                settled=settled,
            ))
            run.settled += settled
            run.without_samples += answer is None
        JobUtilisationSummary.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["job"],
            update_fields=["mean_percent", "low_share", "gpus_reporting", "summarised_at",
                           "settled"],
        )
        run.asked += len(batch)
        run.stored += len(rows)
    return run

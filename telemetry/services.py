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
from django.db.models import BigIntegerField, F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from jobs.analytics import node_bucket_expression
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


# Jobs per statement when copying accounted jobs beside their summaries.
RECORD_BATCH = 2000


def finished_gpu_jobs(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """The jobs of `jobs` that keep a summary row: finished GPU jobs with an end."""
    return jobs.exclude(state__in=LIVE_STATES).filter(gpus__gt=0, end_time__isnull=False)


def job_gpu_time():
    """A job's GPU time: gpu_seconds as accounted, else its runtime times its GPUs."""
    return Coalesce(F("gpu_seconds"), F("elapsed_seconds") * F("gpus"), Value(0),
                    output_field=BigIntegerField())


def _with_copied_columns(jobs: QuerySet[Job]) -> QuerySet[Job]:
    return jobs.annotate(copied_bucket=node_bucket_expression(), copied_weight=job_gpu_time())


def _copied_columns(job: Job) -> dict:
    return {"end_time": job.end_time, "node_bucket": job.copied_bucket,
            "gpu_time_weight": int(job.copied_weight or 0), "tenant_id": job.tenant_id}


COPIED_FIELDS = ["end_time", "node_bucket", "gpu_time_weight", "tenant"]


def record_finished_jobs(job_pks: Iterable[int]) -> None:
    """Keep a summary row beside each finished GPU job of `job_pks` (jobs.hooks'
    accounted-jobs listener, called by the accounting import in bulk): a new one is pending
    (counted in Observation 3 as not summarised yet); an existing one gets the job's columns
    again and keeps its figures. A job that is no longer a finished GPU job loses its row."""
    pks = list(job_pks)
    for offset in range(0, len(pks), RECORD_BATCH):
        part = pks[offset : offset + RECORD_BATCH]
        finished = list(
            _with_copied_columns(finished_gpu_jobs(Job.objects.filter(pk__in=part)))
            .only("pk", "end_time", "tenant_id")
        )
        JobUtilisationSummary.objects.bulk_create(
            [JobUtilisationSummary(job_id=job.pk, settled=False, **_copied_columns(job))
             for job in finished],
            update_conflicts=True, unique_fields=["job"], update_fields=COPIED_FIELDS,
        )
        kept = {job.pk for job in finished}
        JobUtilisationSummary.objects.filter(
            job_id__in=[pk for pk in part if pk not in kept]).delete()


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
        _with_copied_columns(summary_pending(jobs if jobs is not None else Job.objects.all()))
        .order_by("end_time", "pk")
        .only("pk", "job_id", "start_time", "end_time", "tenant_id")[:limit]
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
                **_copied_columns(job),
            ))
            run.settled += settled
            run.without_samples += answer is None
        JobUtilisationSummary.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["job"],
            update_fields=["mean_percent", "low_share", "gpus_reporting", "summarised_at",
                           "settled", *COPIED_FIELDS],
        )
        run.asked += len(batch)
        run.stored += len(rows)
    return run

"""Reads that join the portal's jobs with GPU telemetry (DESIGN.md section 11).

Every answer carries `configured` (a PROMETHEUS_URL is set) and `available` (Prometheus
answered), with `message` saying why not: without telemetry the pages say so, and a number
the portal does not have is None, never 0. Role scoping is the jobs app's (`visible_jobs`):
tenant admins only ever see their own tenant's jobs.

- `job_utilisation`: one job's mean GPU utilisation over its runtime (the job page).
- `observation3`: the paper's Observation 3 per node-count bucket over finished GPU jobs:
  per-job mean utilisation (median and CDF) and the share of GPU time below 20% (the GPU-time
  weighted share over the bucket's jobs, and the CDF of the per-job shares), aggregated in the
  database over the jobs' stored summaries (telemetry/models.py).
- `idle_gpus`: GPUs held by running jobs whose recent mean utilisation is below 20%.
- `tenant_efficiency`: the tenant's GPU-time weighted mean utilisation over a period.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections
from django.db.models import Count, F, FloatField, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone

from jobs.analytics import (
    PercentilesDisc,
    Period,
    analytics_scope,
    node_bucket_label,
    tuned_for_analytics,
)
from jobs.buckets import SIZE_BUCKET_LABELS
from jobs.models import Job
from jobs.selectors import visible_jobs
from portal.roles import may
from telemetry.drivers.base import (
    LOW_UTILISATION_PERCENT,
    TelemetryUnavailable,
    get_telemetry_driver,
)
from telemetry.models import JobUtilisationSummary
from telemetry.services import summarise_finished_jobs

NOT_CONFIGURED = "No telemetry configured: set PROMETHEUS_URL to the site's Prometheus."
CDF_FRACTIONS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MAX_SERIES_POINTS = 240


def _status(configured: bool, available: bool, message: str = "") -> dict:
    return {"configured": configured, "available": available, "message": message}


def _quantiles(values: list[float]) -> list[float]:
    """Values at CDF_FRACTIONS by PostgreSQL's percentile_disc rule (jobs/analytics.py)."""
    ordered = sorted(values)
    return [ordered[max(1, math.ceil(f * len(ordered))) - 1] for f in CDF_FRACTIONS]


def _rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


# --- one job ---------------------------------------------------------------------------------


def job_utilisation(*, user, job_id: str, now: datetime | None = None) -> dict:
    """The job's mean GPU utilisation over time, its mean and share below 20%."""
    job = visible_jobs(user=user).filter(job_id=job_id).first()
    if job is None:
        raise Http404(f"No job {job_id} you may see.")
    now = now or timezone.now()
    answer = {"job_id": job.job_id, "start": None, "end": None, "points": [],
              "mean_percent": None, "low_share_percent": None, "gpus_reporting": None,
              "step_seconds": None}
    driver = get_telemetry_driver()
    if driver is None:
        return {**answer, **_status(False, False, NOT_CONFIGURED)}
    if job.start_time is None or job.gpus == 0:
        message = "The job has not started." if job.start_time is None else "A CPU-only job."
        return {**answer, **_status(True, True, message)}
    end = min(job.end_time or now, now)
    start = job.start_time
    step = max(float(settings.TELEMETRY_STEP_SECONDS) / 4,
               (end - start).total_seconds() / MAX_SERIES_POINTS, 1.0)
    try:
        points = driver.job_series(job.job_id, start, end, step)
        summary = driver.job_summaries(start, end, job_ids=[job.job_id]).get(job.job_id)
    except TelemetryUnavailable as error:
        return {**answer, **_status(True, False, str(error))}
    answer.update(
        start=start.isoformat(),
        end=end.isoformat(),
        step_seconds=round(step, 3),
        points=[
            {"at": point.at.isoformat(), "mean_percent": round(point.mean_percent, 2),
             "gpus": point.gpus}
            for point in points
        ],
    )
    if summary is None:
        return {**answer, **_status(True, True, "Prometheus has no samples for this job.")}
    answer.update(
        mean_percent=_rounded(summary.mean_percent, 2),
        low_share_percent=(
            None if summary.low_share is None else _rounded(100 * summary.low_share, 2)
        ),
        gpus_reporting=summary.gpus,
    )
    return {**answer, **_status(True, True)}


# --- Observation 3 ---------------------------------------------------------------------------


def observation3(*, user, period: Period, tenant_slug: str | None = None,
                 now: datetime | None = None) -> dict:
    """Observation 3 over the GPU jobs that ended in the period, per node-count bucket: one
    grouped query over the stored summaries alone (telemetry.models: a row per finished GPU
    job, pending until summarised, with the job's bucket, end, GPU time and tenant copied),
    after summarising the jobs that ended since the periodic task last ran."""
    now = now or timezone.now()
    summaries = JobUtilisationSummary.objects.filter(
        analytics_scope(user=user, tenant_slug=tenant_slug),
        end_time__gte=period.start, end_time__lt=period.end, node_bucket__gte=0,
    )
    answer = {
        "period": {"since": period.since.isoformat(), "until": period.until.isoformat()},
        "tenant": tenant_slug if tenant_slug and may(user, "read_tenant_data") else None,
        "threshold_percent": LOW_UTILISATION_PERCENT,
        "jobs": None,
        "jobs_with_telemetry": None,
        "jobs_not_summarised": None,
        "rows": [],
    }
    driver = get_telemetry_driver()
    if driver is None:
        return {**answer, **_status(False, False, NOT_CONFIGURED)}
    with tuned_for_analytics():
        try:
            _summarise_just_ended(summaries, driver=driver, now=now)
        except TelemetryUnavailable as error:
            return {**answer, **_status(True, False, str(error))}
        if connections[summaries.db].vendor == "postgresql":
            rows = _rows_in_database(summaries)
        else:
            rows = _rows_in_python(summaries)
    pending = sum(row.pop("not_summarised") for row in rows.values())
    answer["jobs"] = sum(row["jobs"] for row in rows.values())
    answer["jobs_not_summarised"] = pending
    answer["jobs_with_telemetry"] = sum(row["jobs_with_telemetry"] for row in rows.values())
    answer["rows"] = [rows.get(label) or _bucket_row(label, [], jobs=0)
                      for label in SIZE_BUCKET_LABELS]
    message = (f"{pending} finished jobs are not summarised yet: the worker asks Prometheus "
               "for them in the background." if pending else "")
    return {**answer, **_status(True, True, message)}


def _summarise_just_ended(summaries: QuerySet, *, driver, now: datetime) -> None:
    """Summarise the jobs that ended since the periodic task's last runs (at most
    TELEMETRY_SUMMARY_ON_REQUEST), so a page shows a job that just ended; older jobs without a
    summary are the task's, and the answer counts them."""
    recently = now - timedelta(seconds=3 * float(settings.TELEMETRY_SUMMARY_INTERVAL)
                               + float(settings.TELEMETRY_SUMMARY_SETTLE_SECONDS))
    limit = int(settings.TELEMETRY_SUMMARY_ON_REQUEST)
    just_ended = list(summaries.filter(end_time__gte=recently, settled=False)
                      .values_list("job_id", flat=True)[: limit + 1])
    if 0 < len(just_ended) <= limit:
        summarise_finished_jobs(jobs=Job.objects.filter(pk__in=just_ended), limit=limit,
                                driver=driver, now=now)


def _rows_in_python(summaries: QuerySet) -> dict[str, dict]:
    """The embedded default's SQLite has no percentile_disc: each job's bucket, mean, share
    and weight are read, and the rows made by PostgreSQL's rule in Python."""
    measured: dict[str, list[tuple[float, float | None, int]]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    pending: dict[str, int] = defaultdict(int)
    rows = (summaries.order_by()
            .values_list("node_bucket", "summarised_at", "mean_percent", "low_share",
                         "gpu_time_weight"))
    for bucket, summarised_at, mean, low, weight in rows.iterator():
        label = node_bucket_label(bucket)
        counts[label] += 1
        pending[label] += summarised_at is None
        if mean is not None:
            measured[label].append((mean, low, int(weight or 0)))
    return {label: {**_bucket_row(label, measured.get(label, []), jobs=count),
                    "not_summarised": pending[label]}
            for label, count in counts.items()}


def _rows_in_database(summaries: QuerySet) -> dict[str, dict]:
    """One grouped query over the summaries: counts, the GPU-time weighted share below 20%,
    and both CDFs by percentile_disc (which skips jobs without a mean, as every figure but the
    count does)."""
    measured = Q(mean_percent__isnull=False)
    with_low = measured & Q(low_share__isnull=False)
    grouped = (
        summaries.order_by()
        .values("node_bucket")
        .annotate(
            job_count=Count("pk"),
            not_summarised=Count("pk", filter=Q(summarised_at__isnull=True)),
            measured_jobs=Count("pk", filter=measured),
            total_weight=Sum("gpu_time_weight", filter=measured),
            low_total_weight=Sum("gpu_time_weight", filter=with_low),
            low_weight=Sum(F("low_share") * F("gpu_time_weight"),
                           output_field=FloatField(), filter=with_low),
            mean_cdf=PercentilesDisc("mean_percent", CDF_FRACTIONS, element_field=FloatField()),
            low_cdf=PercentilesDisc("low_share", CDF_FRACTIONS, element_field=FloatField(),
                                    filter=measured),
        )
    )
    rows = {}
    for row in grouped:
        label = node_bucket_label(row["node_bucket"])
        low_total = int(row["low_total_weight"] or 0)
        rows[label] = {
            **_row(label, jobs=row["job_count"], jobs_with_telemetry=row["measured_jobs"],
                   total_weight=int(row["total_weight"] or 0),
                   low_percent=(round(100 * (row["low_weight"] or 0) / low_total, 2)
                                if low_total else None),
                   mean_cdf=row["mean_cdf"] or [], low_cdf=row["low_cdf"] or []),
            "not_summarised": row["not_summarised"],
        }
    return rows


def _bucket_row(label: str, measured: list[tuple[float, float | None, int]], *,
                jobs: int) -> dict:
    """A bucket's row from its measured jobs' (mean, share below 20%, GPU-time weight)."""
    means = [mean for mean, _, _ in measured]
    lows = [low for _, low, _ in measured if low is not None]
    # The share below 20% over the jobs that have one (a job shorter than a step may not).
    low_total_weight = sum(weight for _, low, weight in measured if low is not None)
    low_weight = sum(low * weight for _, low, weight in measured if low is not None)
    return _row(
        label,
        jobs=jobs,
        jobs_with_telemetry=len(measured),
        total_weight=sum(weight for _, _, weight in measured),
        low_percent=round(100 * low_weight / low_total_weight, 2) if low_total_weight else None,
        mean_cdf=_quantiles(means) if means else [],
        low_cdf=_quantiles(lows) if lows else [],
    )


def _row(label: str, *, jobs: int, jobs_with_telemetry: int, total_weight: int,
         low_percent: float | None, mean_cdf: list[float], low_cdf: list[float]) -> dict:
    return {
        "bucket": label,
        "jobs": jobs,
        "jobs_with_telemetry": jobs_with_telemetry,
        "gpu_hours_with_telemetry": round(total_weight / 3600, 2),
        "median_mean_percent": (
            _rounded(mean_cdf[CDF_FRACTIONS.index(0.5)], 2) if mean_cdf else None
        ),
        "low_gpu_time_percent": low_percent,
        "mean_percent_cdf": [
            {"fraction": f, "value": round(v, 2)}
            for f, v in zip(CDF_FRACTIONS, mean_cdf, strict=False)
        ],
        "low_share_cdf": [
            {"fraction": f, "value": round(100 * v, 2)}
            for f, v in zip(CDF_FRACTIONS, low_cdf, strict=False)
        ],
    }


# --- idle GPUs in running jobs -----------------------------------------------------------------


def idle_gpus(*, user) -> dict:
    """Running jobs holding GPUs whose mean utilisation over the last
    TELEMETRY_IDLE_WINDOW_SECONDS is below 20%, most idle GPUs first."""
    window = float(settings.TELEMETRY_IDLE_WINDOW_SECONDS)
    answer = {"window_seconds": window, "threshold_percent": LOW_UTILISATION_PERCENT,
              "idle_gpu_count": None, "reporting_gpu_count": None, "jobs": []}
    driver = get_telemetry_driver()
    if driver is None:
        return {**answer, **_status(False, False, NOT_CONFIGURED)}
    try:
        gpus = driver.gpus_in_jobs(window)
    except TelemetryUnavailable as error:
        return {**answer, **_status(True, False, str(error))}
    by_job = defaultdict(list)
    for gpu in gpus:
        by_job[gpu.job_id].append(gpu)
    running = (
        visible_jobs(user=user)
        .filter(state="RUNNING", left_queue_at__isnull=True, job_id__in=list(by_job))
        .select_related("tenant")
    )
    rows, idle_count, reporting = [], 0, 0
    for job in running:
        held = by_job[job.job_id]
        idle = [gpu for gpu in held if gpu.mean_percent < LOW_UTILISATION_PERCENT]
        reporting += len(held)
        idle_count += len(idle)
        if not idle:
            continue
        rows.append({
            "job_id": job.job_id,
            "user": job.user,
            "account": job.account,
            "tenant": job.tenant.slug if job.tenant else None,
            "node_count": job.node_count,
            "gpus": job.gpus,
            "start_time": job.start_time.isoformat() if job.start_time else None,
            "reporting_gpus": len(held),
            "idle_gpus": [
                {"hostname": gpu.hostname, "gpu_index": gpu.gpu_index, "uuid": gpu.uuid,
                 "mean_percent": round(gpu.mean_percent, 1)}
                for gpu in sorted(idle, key=lambda gpu: (gpu.hostname, gpu.gpu_index))
            ],
        })
    rows.sort(key=lambda row: (-len(row["idle_gpus"]), row["job_id"]))
    answer.update(idle_gpu_count=idle_count, reporting_gpu_count=reporting, jobs=rows)
    return {**answer, **_status(True, True)}


# --- a tenant's efficiency ---------------------------------------------------------------------


def tenant_efficiency(*, user, tenant, start: datetime, end: datetime | None = None) -> dict:
    """GPU-time weighted mean utilisation of the tenant's GPU jobs that ran in [start, end]."""
    end = end or timezone.now()
    answer = {"mean_percent": None, "low_gpu_time_percent": None, "jobs": None,
              "jobs_with_telemetry": None}
    driver = get_telemetry_driver()
    if driver is None:
        return {**answer, **_status(False, False, NOT_CONFIGURED)}
    jobs = list(
        visible_jobs(user=user)
        .filter(tenant=tenant, gpus__gt=0, start_time__lt=end)
        .exclude(end_time__lt=start)
        .only("job_id", "gpus", "start_time", "end_time", "elapsed_seconds", "gpu_seconds",
              "state", "left_queue_at")
    )
    answer["jobs"] = len(jobs)
    if not jobs:
        answer["jobs_with_telemetry"] = 0
        return {**answer, **_status(True, True)}
    # Prometheus's work grows with the range: ask only from the first of these jobs' starts.
    first_start = max(start, min(job.start_time for job in jobs))
    try:
        summaries = driver.job_summaries(first_start, end, job_ids=[job.job_id for job in jobs])
    except TelemetryUnavailable as error:
        return {**answer, **_status(True, False, str(error))}
    total = weighted_mean = weighted_low = low_total = 0.0
    measured = 0
    for job in jobs:
        summary = summaries.get(job.job_id)
        if summary is None:
            continue
        measured += 1
        # GPU time inside the period: the overlap of the job's run with [start, end].
        run_start = max(job.start_time, start)
        run_end = min(job.end_time or end, end)
        weight = max(0.0, (run_end - run_start).total_seconds()) * job.gpus
        total += weight
        weighted_mean += weight * summary.mean_percent
        if summary.low_share is not None:
            low_total += weight
            weighted_low += weight * summary.low_share
    answer["jobs_with_telemetry"] = measured
    if total:
        answer["mean_percent"] = round(weighted_mean / total, 1)
    if low_total:
        answer["low_gpu_time_percent"] = round(100 * weighted_low / low_total, 1)
    return {**answer, **_status(True, True)}


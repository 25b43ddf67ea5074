"""Workload analytics (DESIGN.md section 9, the paper's Observations 1, 2, 4 and 5).

Pure reads over the jobs a user may see (`visible_jobs`): everything is aggregated in
PostgreSQL, in four queries whatever the number of jobs (plus one to resolve a ?tenant= slug),
inside one transaction tuned for big aggregates (`tuned_for_analytics`).
The embedded default (SQLite) has no `percentile_disc`: there the runtime percentiles are picked
from the sorted runtimes in Python by PostgreSQL's own rule (`percentile_disc_position`), so both
databases give the same numbers (tests/portal/test_embedded_default.py compares them).

Definitions (the page and the API state the same):
- The jobs: GPU jobs (at least one GPU allocated, or asked for by a job that never started) by
  default; `kind=cpu` for CPU-only jobs, `kind=all` for both.
- In the period: jobs that ended in it, plus jobs running now (RUNNING, COMPLETING, CONFIGURING,
  SUSPENDED, still in the queue) that started before its end. A running job's GPU time is counted
  from its start up to now, or up to the period's end if that is earlier, and is reported apart
  (`running_count`, `running_gpu_hours`) so no share hides it. A running job imported from a
  trace is counted no further than when the trace was taken (`Job.observed_until`, until squeue
  lists it again), so the same query answers the same on any later day; a period that starts
  after that holds none of it. `running_from_traces` says how many were stopped there.
- GPU-occupied time: elapsed x allocated GPUs (the stored `gpu_seconds`, else computed).
- Observation 1: jobs in the period by state, by count and by GPU-occupied time.
- Observation 2: the same jobs by node-count bucket, and by GPU count (1, 2, 4, 8, more than 8,
  other), count share vs GPU-time share.
- Observation 4: runtimes of the finished jobs only (a running job's runtime is not known yet):
  p50/p90/p99 by PostgreSQL's `percentile_disc` (the value at sorted position
  max(1, ceil(f x n)), no interpolation), the share over one week, and CDF points for a chart.
- Observation 5: jobs per day by bucket, counted on the day they were submitted, whatever
  happened next: jobs cancelled before they started are a series of their own ("never started").

Observation 3 (per-job GPU utilisation) needs DCGM samples: telemetry/selectors.py reads them
from the site's Prometheus (`observation3`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.contrib.postgres.fields import ArrayField
from django.db import connections, transaction
from django.db.models import (
    Aggregate,
    BigIntegerField,
    Case,
    Count,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    Max,
    Min,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Least, TruncDate
from django.utils import timezone

from jobs.buckets import SIZE_BUCKET_LABELS, SIZE_BUCKETS
from jobs.models import LIVE_STATES, RUNNING_STATES, Job
from jobs.selectors import job_visibility
from portal.errors import InvalidInput
from portal.models import Tenant
from portal.roles import may

DEFAULT_PERIOD_DAYS = 90
JOB_KINDS = ("gpu", "cpu", "all")
DEFAULT_JOB_KIND = "gpu"
PERCENTILE_METHOD = (
    "discrete (PostgreSQL percentile_disc): the runtime at position max(1, ceil(f x n)) of the "
    "n sorted runtimes, a real job's runtime, never interpolated"
)
NEVER_STARTED = "never started"
# GPU-count buckets beside the node buckets: whole nodes' worth of GPUs and the usual
# power-of-two slices of one 8-GPU node; anything else is "other".
GPU_COUNT_LABELS = ("1", "2", "4", "8", "more than 8", "other", "none")
# The answer carries a daily series per size bucket: ten thousand years of days took 15 s.
MAX_PERIOD_DAYS = 3 * 366
ONE_WEEK_SECONDS = 7 * 24 * 3600
# Fractions at which the runtime CDF is sampled; they include the reported percentiles.
CDF_FRACTIONS: tuple[float, ...] = (
    0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
)
PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
# States in the order the paper's Figure 3 lists them; others follow alphabetically.
KNOWN_FINAL_STATES = (
    "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
)


class PercentilesDisc(Aggregate):
    """PostgreSQL `percentile_disc(ARRAY[...]) WITHIN GROUP (ORDER BY x)`: for each fraction,
    the smallest observed value whose cumulative share reaches it (a real job's runtime)."""

    function = "percentile_disc"
    template = "%(function)s(%(fractions)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression, fractions: tuple[float, ...], *, element_field=None,
                 **extra):
        literal = "ARRAY[" + ", ".join(f"{float(f)!r}" for f in fractions) + "]::float8[]"
        super().__init__(
            expression,
            fractions=literal,
            output_field=ArrayField(element_field or BigIntegerField()),
            **extra,
        )


def percentile_disc_position(fraction: float, count: int) -> int:
    """The 1-based position in `count` sorted values that `percentile_disc(fraction)` returns:
    PostgreSQL computes max(1, ceil(fraction * count)) in double precision (setup_pct_info in
    src/backend/utils/adt/orderedsetaggs.c), and so does this, float for float."""
    return max(1, math.ceil(fraction * count))


def _runtime_quantiles_in_python(sized: QuerySet[Job]) -> dict[str, list[int]]:
    """`PercentilesDisc(runtime, CDF_FRACTIONS)` per bucket for databases without it: one query
    for the runtimes, sorted by the database, picked by PostgreSQL's rule."""
    runtimes: dict[str, list[int]] = defaultdict(list)
    rows = (
        sized.annotate(bucket=node_bucket_expression(), runtime=_runtime_expression())
        .order_by("bucket", "runtime")
        .values_list("bucket", "runtime")
    )
    for bucket, runtime in rows.iterator():
        runtimes[node_bucket_label(bucket)].append(int(runtime))
    return {
        bucket: [values[percentile_disc_position(f, len(values)) - 1] for f in CDF_FRACTIONS]
        for bucket, values in runtimes.items()
    }


@dataclass(frozen=True)
class Period:
    since: date
    until: date  # inclusive

    @property
    def start(self) -> datetime:
        return datetime.combine(self.since, time.min, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        """Exclusive: midnight after `until`."""
        return datetime.combine(self.until + timedelta(days=1), time.min, tzinfo=UTC)

    @property
    def days(self) -> list[date]:
        return [self.since + timedelta(days=n) for n in range((self.until - self.since).days + 1)]


def _parse_day(name: str, value: str | None) -> date | None:
    if value in (None, ""):
        return None
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise InvalidInput({name: [f"{value!r} is not a date; use YYYY-MM-DD"]}) from None


def parse_period(since: str | None = None, until: str | None = None,
                 today: date | None = None) -> Period:
    """The period from ?since=&until= (inclusive dates); default the last 90 days."""
    today = today or timezone.now().date()
    until_day = _parse_day("until", until) or today
    if until_day == date.max:  # the period ends at the midnight after `until`
        raise InvalidInput({"until": [f"use a day before {date.max}"]})
    since_day = _parse_day("since", since)
    if since_day is None:  # 90 days before `until`, or the first day there is
        days_before = min(DEFAULT_PERIOD_DAYS, (until_day - date.min).days)
        since_day = until_day - timedelta(days=days_before)
    if since_day > until_day:
        raise InvalidInput({"since": [f"{since_day} is after until ({until_day})"]})
    if (until_day - since_day).days >= MAX_PERIOD_DAYS:
        raise InvalidInput({"since": [f"a period of at most {MAX_PERIOD_DAYS} days"]})
    return Period(since_day, until_day)


def analytics_jobs(*, user, tenant_slug: str | None = None) -> QuerySet[Job]:
    """The jobs `user` may see; cluster-wide job readers may narrow to one tenant. A tenant
    admin's ?tenant= is ignored: they only ever see their own tenant's jobs."""
    return Job.objects.filter(analytics_scope(user=user, tenant_slug=tenant_slug))


def analytics_scope(*, user, tenant_slug: str | None = None, tenant_field: str = "tenant_id") -> Q:
    """analytics_jobs' rule as a filter on a tenant column named `tenant_field` (telemetry's
    copy of the finished GPU jobs is scoped by it without joining the jobs)."""
    scope = job_visibility(user=user, tenant_field=tenant_field)
    if tenant_slug and may(user, "read_tenant_data"):
        tenant = Tenant.objects.filter(slug=tenant_slug).only("pk").first()
        if tenant is None:
            raise InvalidInput({"tenant": [f"no tenant {tenant_slug!r}"]})
        scope &= Q(**{tenant_field: tenant.pk})
    return scope


def parse_kind(value: str | None) -> str:
    """?kind=gpu (default), cpu or all."""
    kind = (value or DEFAULT_JOB_KIND).strip().lower()
    if kind not in JOB_KINDS:
        raise InvalidInput({"kind": [f"{value!r} is not one of {', '.join(JOB_KINDS)}"]})
    return kind


def _of_kind(jobs: QuerySet[Job], kind: str) -> QuerySet[Job]:
    if kind == "gpu":
        return jobs.filter(gpus__gt=0)
    if kind == "cpu":
        return jobs.filter(gpus=0)
    return jobs


class EpochSeconds(Func):
    """Seconds since 1970 of a timestamp column, in SQL on both databases."""

    output_field = BigIntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(
            compiler, connection, template="CAST(EXTRACT(EPOCH FROM %(expressions)s) AS bigint)",
            **extra,
        )

    def as_sqlite(self, compiler, connection, **extra):
        # julianday() of Django's stored UTC text; 2440587.5 is 1970-01-01 as a Julian day.
        return self.as_sql(
            compiler, connection,
            template="CAST(ROUND((julianday(%(expressions)s) - 2440587.5) * 86400) AS integer)",
            **extra,
        )


# Buckets are grouped by their position, not their label: sorting a million rows by an integer
# is several times cheaper than by collated text (percentile_disc needs the rows sorted).
NO_BUCKET = -1


def node_bucket_expression() -> Case:
    """The index of the job's node bucket in SIZE_BUCKETS; NO_BUCKET without a node."""
    whens = []
    for index, bucket in enumerate(SIZE_BUCKETS):
        condition = Q(node_count__gte=bucket.min_nodes)
        if bucket.max_nodes is not None:
            condition &= Q(node_count__lte=bucket.max_nodes)
        whens.append(When(condition, then=Value(index)))
    return Case(*whens, default=Value(NO_BUCKET), output_field=IntegerField())


def node_bucket_label(index: int) -> str:
    return SIZE_BUCKET_LABELS[index] if 0 <= index < len(SIZE_BUCKET_LABELS) else ""


def _gpu_count_expression() -> Case:
    """The index of the job's GPU count in GPU_COUNT_LABELS."""
    position = {label: index for index, label in enumerate(GPU_COUNT_LABELS)}
    return Case(
        When(gpus=0, then=Value(position["none"])),
        *(When(gpus=count, then=Value(position[str(count)])) for count in (1, 2, 4, 8)),
        When(gpus__gt=8, then=Value(position["more than 8"])),
        default=Value(position["other"]),
        output_field=IntegerField(),
    )


def _running_q(period: Period, counted_until: datetime) -> Q:
    """Running now and started before `counted_until`; one from a trace taken before the period
    began says nothing about the period (as a job that ended before it)."""
    return Q(
        state__in=RUNNING_STATES,
        left_queue_at__isnull=True,
        start_time__isnull=False,
        start_time__lt=counted_until,
    ) & (Q(observed_until__isnull=True) | Q(observed_until__gte=period.start))


def _stopped_at_trace_q(counted_until: datetime) -> Q:
    """Running jobs whose GPU time stops where their trace was taken, before `counted_until`."""
    return Q(state__in=RUNNING_STATES, observed_until__lt=counted_until)


def _gpu_seconds_expression(counted_until: datetime) -> Case:
    """Finished: the stored GPU time, else elapsed x GPUs. Running: GPUs x the time from its
    start up to `counted_until`, or up to when its trace was taken if that is earlier."""
    computed = ExpressionWrapper(F("elapsed_seconds") * F("gpus"), output_field=BigIntegerField())
    until = Value(int(counted_until.timestamp()), output_field=BigIntegerField())
    # LEAST is MIN(a, b) on SQLite, which is NULL if either is: hence the Coalesce.
    counted_to = Least(Coalesce(EpochSeconds("observed_until"), until), until)
    so_far = ExpressionWrapper(
        F("gpus") * (counted_to - EpochSeconds("start_time")),
        output_field=BigIntegerField(),
    )
    return Case(
        When(state__in=RUNNING_STATES, then=so_far),
        default=Coalesce(F("gpu_seconds"), computed, Value(0), output_field=BigIntegerField()),
        output_field=BigIntegerField(),
    )


def _runtime_expression():
    return Coalesce(F("elapsed_seconds"), Value(0), output_field=BigIntegerField())


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def _hours(seconds: int) -> float:
    return round(seconds / 3600, 2)


def _finished_q(period: Period) -> Q:
    """Jobs that ended in the period (accounting's view of them)."""
    return ~Q(state__in=LIVE_STATES) & Q(end_time__gte=period.start, end_time__lt=period.end)


def _counted_until(period: Period, now: datetime) -> datetime:
    return min(now, period.end)


def state_shares(in_period: QuerySet[Job], counted_until: datetime) -> dict:
    """Observation 1: jobs and GPU-occupied time per state, running ones marked (one query)."""
    from_trace = _stopped_at_trace_q(counted_until)
    rows = list(
        in_period.order_by()
        .values("state")
        .annotate(
            count=Count("pk"),
            gpu_time=Sum(_gpu_seconds_expression(counted_until)),
            from_trace=Count("pk", filter=from_trace),
            taken_earliest=Min("observed_until", filter=from_trace),
            taken_latest=Max("observed_until", filter=from_trace),
        )
    )
    order = {state: index for index, state in enumerate(KNOWN_FINAL_STATES + RUNNING_STATES)}
    rows.sort(key=lambda row: (order.get(row["state"], len(order)), row["state"]))
    total_count = sum(row["count"] for row in rows)
    total_gpu = sum(int(row["gpu_time"] or 0) for row in rows)
    running = [row for row in rows if row["state"] in RUNNING_STATES]
    earliest = [row["taken_earliest"] for row in running if row["taken_earliest"]]
    latest = [row["taken_latest"] for row in running if row["taken_latest"]]
    return {
        "total_count": total_count,
        "total_gpu_hours": _hours(total_gpu),
        "running_count": sum(row["count"] for row in running),
        "running_gpu_hours": _hours(sum(int(row["gpu_time"] or 0) for row in running)),
        # Of those, the ones imported from a trace taken before `counted_until`: counted up to
        # then (a time between these two).
        "running_from_traces": {
            "count": sum(row["from_trace"] for row in running),
            "taken_at_earliest": min(earliest).isoformat() if earliest else None,
            "taken_at_latest": max(latest).isoformat() if latest else None,
        },
        "rows": [
            {
                "state": row["state"],
                "running": row["state"] in RUNNING_STATES,
                "count": row["count"],
                "count_share": _percent(row["count"], total_count),
                "gpu_hours": _hours(int(row["gpu_time"] or 0)),
                "gpu_time_share": _percent(int(row["gpu_time"] or 0), total_gpu),
            }
            for row in rows
        ],
    }


@contextmanager
def tuned_for_analytics(using: str = "default"):
    """One transaction for the observations (one snapshot), tuned for big aggregates on
    PostgreSQL: percentile_disc needs the jobs sorted by bucket, and with the default 4 MB of
    work_mem a million of them spill to disk (the sort takes about 100 MB in memory, measured
    with bench/analytics.py); JIT compiling these queries costs more than it saves. SET LOCAL
    ends with the transaction (with the request's, inside one)."""
    with transaction.atomic(using=using):
        if connections[using].vendor == "postgresql":
            with connections[using].cursor() as cursor:
                cursor.execute("SET LOCAL work_mem = '192MB'")
                cursor.execute("SET LOCAL jit = off")
        yield


def size_buckets(in_period: QuerySet[Job], counted_until: datetime) -> dict:
    """Observations 2 and 4 per node-count bucket (one query; two without percentile_disc):
    count and GPU-time shares over the jobs in the period (running ones too), and runtime
    percentiles, share over one week and CDF points over the finished ones. Jobs that never got
    a node (cancelled while pending) have no size and are left out."""
    sized = in_period.filter(node_count__gte=1)
    # Within the period's jobs, "not live" is "finished in the period".
    finished, running = ~Q(state__in=LIVE_STATES), Q(state__in=RUNNING_STATES)
    aggregates = {
        "count": Count("pk"),
        "running_count": Count("pk", filter=running),
        "finished_count": Count("pk", filter=finished),
        "gpu_time": Sum(_gpu_seconds_expression(counted_until)),
        "running_gpu_time": Sum(_gpu_seconds_expression(counted_until), filter=running),
        "over_week": Count("pk", filter=finished & Q(elapsed_seconds__gt=ONE_WEEK_SECONDS)),
    }
    percentiles_in_database = connections[sized.db].vendor == "postgresql"
    if percentiles_in_database:
        aggregates["quantiles"] = PercentilesDisc(
            _runtime_expression(), CDF_FRACTIONS, filter=finished
        )
    grouped = {
        node_bucket_label(row["bucket"]): row
        for row in sized.order_by()
        .annotate(bucket=node_bucket_expression())
        .values("bucket")
        .annotate(**aggregates)
    }
    quantiles_by_bucket = (
        {bucket: row["quantiles"] for bucket, row in grouped.items()}
        if percentiles_in_database
        else _runtime_quantiles_in_python(sized.filter(finished))
    )
    total_count = sum(row["count"] for row in grouped.values())
    total_gpu = sum(int(row["gpu_time"] or 0) for row in grouped.values())
    rows = []
    for label in SIZE_BUCKET_LABELS:
        row = grouped.get(label) or {}
        count = row.get("count", 0)
        finished_count = row.get("finished_count", 0)
        gpu_seconds = int(row.get("gpu_time") or 0)
        quantiles = [int(value) for value in quantiles_by_bucket.get(label) or []]
        rows.append(
            {
                "bucket": label,
                "count": count,
                "running_count": row.get("running_count", 0),
                "count_share": _percent(count, total_count),
                "gpu_hours": _hours(gpu_seconds),
                "running_gpu_hours": _hours(int(row.get("running_gpu_time") or 0)),
                "gpu_time_share": _percent(gpu_seconds, total_gpu),
                "finished_count": finished_count,
                "runtime_seconds": {
                    name: quantiles[CDF_FRACTIONS.index(fraction)] if quantiles else None
                    for name, fraction in PERCENTILES.items()
                },
                "over_one_week": row.get("over_week", 0),
                "over_one_week_share": _percent(row.get("over_week", 0), finished_count),
                "cdf": [
                    {"fraction": fraction, "runtime_seconds": value}
                    for fraction, value in zip(CDF_FRACTIONS, quantiles, strict=True)
                ] if quantiles else [],
            }
        )
    return {
        "total_count": total_count,
        "total_gpu_hours": _hours(total_gpu),
        "rows": rows,
    }


def gpu_counts(in_period: QuerySet[Job], counted_until: datetime) -> dict:
    """Observation 2 by allocated GPUs instead of nodes (one query): the same jobs as the node
    buckets (those that got a node), so both tables add up to the same totals."""
    grouped = {
        GPU_COUNT_LABELS[row["gpu_bucket"]]: row
        for row in in_period.filter(node_count__gte=1)
        .order_by()
        .annotate(gpu_bucket=_gpu_count_expression())
        .values("gpu_bucket")
        .annotate(
            count=Count("pk"),
            running_count=Count("pk", filter=Q(state__in=RUNNING_STATES)),
            gpu_time=Sum(_gpu_seconds_expression(counted_until)),
        )
    }
    total_count = sum(row["count"] for row in grouped.values())
    total_gpu = sum(int(row["gpu_time"] or 0) for row in grouped.values())
    rows = []
    for label in GPU_COUNT_LABELS:
        row = grouped.get(label) or {}
        gpu_seconds = int(row.get("gpu_time") or 0)
        rows.append(
            {
                "gpus": label,
                "count": row.get("count", 0),
                "running_count": row.get("running_count", 0),
                "count_share": _percent(row.get("count", 0), total_count),
                "gpu_hours": _hours(gpu_seconds),
                "gpu_time_share": _percent(gpu_seconds, total_gpu),
            }
        )
    return {"total_count": total_count, "total_gpu_hours": _hours(total_gpu), "rows": rows}


def daily_submissions(jobs: QuerySet[Job], period: Period) -> dict:
    """Observation 5: jobs per day and bucket, counted on the day they were submitted (one
    query), whatever their state now; jobs that never got a node are their own series."""
    rows = (
        jobs.filter(submit_time__gte=period.start, submit_time__lt=period.end)
        .order_by()
        .annotate(day=TruncDate("submit_time", tzinfo=UTC), bucket=node_bucket_expression())
        .values("day", "bucket")
        # COUNT(*), not COUNT(id): the id is not in job_submitted_size, whose columns are all
        # this query reads, so PostgreSQL answers from that index alone (bench/analytics.py).
        .annotate(count=Count("*"))
    )
    days = period.days
    index = {day: position for position, day in enumerate(days)}
    labels = (*SIZE_BUCKET_LABELS, "")
    counts = {label: [0] * len(days) for label in labels}
    for row in rows:
        label = node_bucket_label(row["bucket"])
        if label in counts and row["day"] in index:
            counts[label][index[row["day"]]] = row["count"]
    return {
        "days": [day.isoformat() for day in days],
        "series": [
            {
                "bucket": label,
                "label": f"{label} nodes" if label else NEVER_STARTED,
                "counts": counts[label],
            }
            for label in labels
        ],
    }


@dataclass(frozen=True)
class PeriodJobs:
    """The jobs the observations read: all of the kind (daily submissions), those in the period
    (ended in it, or running), and the moment running jobs' GPU time is counted up to."""

    jobs: QuerySet[Job]
    in_period: QuerySet[Job]
    counted_until: datetime


def period_jobs(*, user, period: Period, tenant_slug: str | None = None,
                kind: str = DEFAULT_JOB_KIND, now: datetime | None = None) -> PeriodJobs:
    jobs = _of_kind(analytics_jobs(user=user, tenant_slug=tenant_slug), kind)
    counted_until = _counted_until(period, now or timezone.now())
    in_period = jobs.filter(_finished_q(period) | _running_q(period, counted_until))
    return PeriodJobs(jobs, in_period, counted_until)


def workload_analytics(*, user, period: Period, tenant_slug: str | None = None,
                       kind: str = DEFAULT_JOB_KIND, now: datetime | None = None) -> dict:
    """Everything the analytics page and API show, in at most five queries (six without
    percentile_disc)."""
    selected = period_jobs(user=user, period=period, tenant_slug=tenant_slug, kind=kind, now=now)
    counted_until = selected.counted_until
    with tuned_for_analytics(selected.jobs.db):
        return {
            "period": {"since": period.since.isoformat(), "until": period.until.isoformat()},
            "tenant": tenant_slug if tenant_slug and may(user, "read_tenant_data") else None,
            "kind": kind,
            "gpu_time_counted_until": counted_until.isoformat(),
            "percentile_method": PERCENTILE_METHOD,
            "states": state_shares(selected.in_period, counted_until),
            "sizes": size_buckets(selected.in_period, counted_until),
            "gpu_counts": gpu_counts(selected.in_period, counted_until),
            "daily_submissions": daily_submissions(selected.jobs, period),
        }

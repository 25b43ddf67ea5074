"""Workload analytics (DESIGN.md section 9, the paper's Observations 1, 2, 4 and 5).

Pure reads over the jobs a user may see (`visible_jobs`): everything is aggregated in
PostgreSQL, in four queries whatever the number of jobs (plus one to resolve a ?tenant= slug).
The embedded default (SQLite) has no `percentile_disc`: there the runtime percentiles are picked
from the sorted runtimes in Python by PostgreSQL's own rule (`percentile_disc_position`), so both
databases give the same numbers (tests/portal/test_embedded_default.py compares them).

- Observation 1: finished jobs by final state, by count and by GPU-occupied time
  (elapsed x allocated GPUs; the stored `gpu_seconds`, else computed).
- Observation 2: finished jobs by node-count bucket, count share vs GPU-time share.
- Observation 4: runtime distribution per bucket: p50/p90/p99, the share running over one week,
  and CDF points (runtime at fixed fractions) for a chart.
- Observation 5: jobs per day by bucket, counted on the day they started.

Observation 3 (per-job GPU utilisation) needs DCGM samples, which the portal does not collect.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.contrib.postgres.fields import ArrayField
from django.db import connections
from django.db.models import (
    Aggregate,
    BigIntegerField,
    Case,
    CharField,
    Count,
    ExpressionWrapper,
    F,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from jobs.buckets import SIZE_BUCKET_LABELS, SIZE_BUCKETS
from jobs.models import LIVE_STATES, Job
from jobs.selectors import visible_jobs
from portal.errors import InvalidInput
from portal.models import Tenant
from portal.models.accounts import TENANT_DATA_ROLES

DEFAULT_PERIOD_DAYS = 90
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

    def __init__(self, expression, fractions: tuple[float, ...], **extra):
        literal = "ARRAY[" + ", ".join(f"{float(f)!r}" for f in fractions) + "]::float8[]"
        super().__init__(
            expression,
            fractions=literal,
            output_field=ArrayField(BigIntegerField()),
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
        sized.annotate(bucket=_bucket_expression(), runtime=_runtime_expression())
        .order_by("bucket", "runtime")
        .values_list("bucket", "runtime")
    )
    for bucket, runtime in rows.iterator():
        runtimes[bucket].append(int(runtime))
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
    jobs = visible_jobs(user=user)
    if tenant_slug and user.role in TENANT_DATA_ROLES:
        tenant = Tenant.objects.filter(slug=tenant_slug).only("pk").first()
        if tenant is None:
            raise InvalidInput({"tenant": [f"no tenant {tenant_slug!r}"]})
        jobs = jobs.filter(tenant_id=tenant.pk)
    return jobs


def _bucket_expression() -> Case:
    whens = []
    for bucket in SIZE_BUCKETS:
        condition = Q(node_count__gte=bucket.min_nodes)
        if bucket.max_nodes is not None:
            condition &= Q(node_count__lte=bucket.max_nodes)
        whens.append(When(condition, then=Value(bucket.label)))
    return Case(*whens, default=Value(""), output_field=CharField())


def _gpu_seconds_expression():
    computed = ExpressionWrapper(F("elapsed_seconds") * F("gpus"), output_field=BigIntegerField())
    return Coalesce(F("gpu_seconds"), computed, Value(0), output_field=BigIntegerField())


def _runtime_expression():
    return Coalesce(F("elapsed_seconds"), Value(0), output_field=BigIntegerField())


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def _finished_in(jobs: QuerySet[Job], period: Period) -> QuerySet[Job]:
    """Jobs that ended in the period (accounting's view of them)."""
    return jobs.exclude(state__in=LIVE_STATES).filter(
        end_time__gte=period.start, end_time__lt=period.end
    )


def state_shares(finished: QuerySet[Job]) -> dict:
    """Observation 1: jobs and GPU-occupied time per final state (one query)."""
    rows = list(
        finished.order_by()
        .values("state")
        .annotate(count=Count("pk"), gpu_seconds=Sum(_gpu_seconds_expression()))
    )
    order = {state: index for index, state in enumerate(KNOWN_FINAL_STATES)}
    rows.sort(key=lambda row: (order.get(row["state"], len(order)), row["state"]))
    total_count = sum(row["count"] for row in rows)
    total_gpu = sum(int(row["gpu_seconds"] or 0) for row in rows)
    return {
        "total_count": total_count,
        "total_gpu_hours": round(total_gpu / 3600, 2),
        "rows": [
            {
                "state": row["state"],
                "count": row["count"],
                "count_share": _percent(row["count"], total_count),
                "gpu_hours": round(int(row["gpu_seconds"] or 0) / 3600, 2),
                "gpu_time_share": _percent(int(row["gpu_seconds"] or 0), total_gpu),
            }
            for row in rows
        ],
    }


def size_buckets(finished: QuerySet[Job]) -> dict:
    """Observations 2 and 4 per node-count bucket (one query; two without percentile_disc):
    count and GPU-time shares, runtime percentiles, share over one week, and CDF points. Jobs
    that never got a node (cancelled while pending) have no size and are left out."""
    sized = finished.filter(node_count__gte=1)
    aggregates = {
        "count": Count("pk"),
        "gpu_seconds": Sum(_gpu_seconds_expression()),
        "over_week": Count("pk", filter=Q(elapsed_seconds__gt=ONE_WEEK_SECONDS)),
    }
    percentiles_in_database = connections[sized.db].vendor == "postgresql"
    if percentiles_in_database:
        aggregates["quantiles"] = PercentilesDisc(_runtime_expression(), CDF_FRACTIONS)
    grouped = {
        row["bucket"]: row
        for row in sized.order_by()
        .annotate(bucket=_bucket_expression())
        .values("bucket")
        .annotate(**aggregates)
    }
    quantiles_by_bucket = (
        {bucket: row["quantiles"] for bucket, row in grouped.items()}
        if percentiles_in_database
        else _runtime_quantiles_in_python(sized)
    )
    total_count = sum(row["count"] for row in grouped.values())
    total_gpu = sum(int(row["gpu_seconds"] or 0) for row in grouped.values())
    rows = []
    for label in SIZE_BUCKET_LABELS:
        row = grouped.get(label)
        count = row["count"] if row else 0
        gpu_seconds = int(row["gpu_seconds"] or 0) if row else 0
        quantiles = [int(value) for value in quantiles_by_bucket.get(label) or []]
        rows.append(
            {
                "bucket": label,
                "count": count,
                "count_share": _percent(count, total_count),
                "gpu_hours": round(gpu_seconds / 3600, 2),
                "gpu_time_share": _percent(gpu_seconds, total_gpu),
                "runtime_seconds": {
                    name: quantiles[CDF_FRACTIONS.index(fraction)] if quantiles else None
                    for name, fraction in PERCENTILES.items()
                },
                "over_one_week": row["over_week"] if row else 0,
                "over_one_week_share": _percent(row["over_week"], count) if row else 0.0,
                "cdf": [
                    {"fraction": fraction, "runtime_seconds": value}
                    for fraction, value in zip(CDF_FRACTIONS, quantiles, strict=True)
                ] if quantiles else [],
            }
        )
    return {
        "total_count": total_count,
        "total_gpu_hours": round(total_gpu / 3600, 2),
        "rows": rows,
    }


def daily_submissions(jobs: QuerySet[Job], period: Period) -> dict:
    """Observation 5: jobs per day and bucket, counted on the day they started (one query);
    a job running over several days counts once, on its first."""
    rows = (
        jobs.filter(start_time__gte=period.start, start_time__lt=period.end, node_count__gte=1)
        .order_by()
        .annotate(day=TruncDate("start_time", tzinfo=UTC), bucket=_bucket_expression())
        .values("day", "bucket")
        .annotate(count=Count("pk"))
    )
    days = period.days
    index = {day: position for position, day in enumerate(days)}
    counts = {label: [0] * len(days) for label in SIZE_BUCKET_LABELS}
    for row in rows:
        if row["bucket"] in counts and row["day"] in index:
            counts[row["bucket"]][index[row["day"]]] = row["count"]
    return {
        "days": [day.isoformat() for day in days],
        "series": [{"bucket": label, "counts": counts[label]} for label in SIZE_BUCKET_LABELS],
    }


def workload_analytics(*, user, period: Period, tenant_slug: str | None = None) -> dict:
    """Everything the analytics page and API show, in at most five queries."""
    jobs = analytics_jobs(user=user, tenant_slug=tenant_slug)
    finished = _finished_in(jobs, period)
    return {
        "period": {"since": period.since.isoformat(), "until": period.until.isoformat()},
        "tenant": tenant_slug if tenant_slug and user.role in TENANT_DATA_ROLES else None,
        "states": state_shares(finished),
        "sizes": size_buckets(finished),
        "daily_submissions": daily_submissions(jobs, period),
    }

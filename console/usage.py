"""Reads for a tenant's own pages: their jobs, the GPU-hours they used per day and per
user against what their allocations offered, and open faults on their nodes told without
internal detail.

Every read starts from the role-aware selectors (jobs.selectors.visible_jobs,
inventory.selectors.allocation_list), so a tenant admin can only ever be handed their own
tenant's rows and a viewer (no access to tenant-private data) gets nothing; aggregates are
computed from those rows only.

GPU time is GPU-occupied time (paper Observation 1): runtime x allocated GPUs. A job's time is
split over the UTC days it ran in and clipped to the period; a running job counts up to now.
Capacity is what the tenant's allocations held in the same period: nodes x 8 GPUs x hours.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from faults.models import FaultTicket
from faults.workflow import OPEN_STATUSES
from inventory.models import Allocation
from inventory.selectors import allocation_list
from jobs.models import LIVE_STATES, Job
from jobs.selectors import visible_jobs
from portal.models import Tenant

GPUS_PER_NODE = 8  # SAKURAONE: 8 x H100 per node
USAGE_DAYS = 30
PAST_JOBS_SHOWN = 50
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class TenantUsage:
    """GPU-seconds (exact integers) per UTC day and user over [start, end); hours for display."""

    tenant: Tenant
    start: datetime
    end: datetime
    days: list[date]
    users: list[str]
    used_seconds: dict[tuple[date, str], int]  # (day, user) -> GPU-seconds; only non-zero ones
    capacity_seconds_by_day: dict[date, int]

    @property
    def used_seconds_by_user(self) -> dict[str, int]:
        totals = dict.fromkeys(self.users, 0)
        for (_day, user), seconds in self.used_seconds.items():
            totals[user] += seconds
        return totals

    @property
    def total_used_seconds(self) -> int:
        return sum(self.used_seconds.values())

    @property
    def total_capacity_seconds(self) -> int:
        return sum(self.capacity_seconds_by_day.values())

    @property
    def utilisation_percent(self) -> float | None:
        """Used over offered; None when the tenant held no nodes in the period."""
        capacity = self.total_capacity_seconds
        return None if capacity == 0 else 100 * self.total_used_seconds / capacity

    def rows(self) -> list[tuple[date, str, float]]:
        """(day, user, GPU-hours) for every day and user with usage, oldest day first."""
        return [
            (day, user, gpu_hours(self.used_seconds[(day, user)]))
            for day in self.days
            for user in self.users
            if (day, user) in self.used_seconds
        ]

    def chart(self) -> dict:
        """The page chart's data: GPU-hours per day, per user stacked, and the capacity."""
        return {
            "days": [day.isoformat() for day in self.days],
            "users": [
                {
                    "label": user,
                    "hours": [
                        gpu_hours(self.used_seconds.get((day, user), 0)) for day in self.days
                    ],
                }
                for user in self.users
            ],
            "capacity": [gpu_hours(self.capacity_seconds_by_day[day]) for day in self.days],
            # An empty chart says "no data" instead of drawing an empty frame.
            "has_data": bool(self.total_used_seconds or self.total_capacity_seconds),
        }


def gpu_hours(seconds: int) -> float:
    return round(seconds / SECONDS_PER_HOUR, 2)


def usage_period(now: datetime | None = None, days: int = USAGE_DAYS) -> tuple[datetime, datetime]:
    """The last `days` UTC calendar days, today included, up to `now`."""
    now = (now or timezone.now()).astimezone(UTC)
    first_day = now.date() - timedelta(days=days - 1)
    return datetime.combine(first_day, time.min, tzinfo=UTC), now


def _split_by_day(start: datetime, end: datetime) -> list[tuple[date, int]]:
    """(UTC day, whole seconds) of [start, end) on each day it touches."""
    pieces = []
    cursor = start
    while cursor < end:
        next_midnight = datetime.combine(cursor.date() + timedelta(days=1), time.min, tzinfo=UTC)
        piece_end = min(end, next_midnight)
        pieces.append((cursor.date(), int((piece_end - cursor).total_seconds())))
        cursor = piece_end
    return pieces


def tenant_jobs(*, user, tenant: Tenant) -> QuerySet[Job]:
    """The tenant's jobs as `user` may see them (none of another tenant's, ever)."""
    return visible_jobs(user=user).filter(tenant=tenant)


def _live() -> Q:
    return Q(state__in=LIVE_STATES, left_queue_at__isnull=True)


def tenant_running_jobs(*, user, tenant: Tenant) -> QuerySet[Job]:
    return tenant_jobs(user=user, tenant=tenant).filter(_live()).order_by("-submit_time", "-id")


def tenant_past_jobs(*, user, tenant: Tenant, limit: int = PAST_JOBS_SHOWN) -> list[Job]:
    jobs = tenant_jobs(user=user, tenant=tenant).exclude(_live())
    return list(jobs.order_by("-end_time", "-id")[:limit])


def tenant_usage(*, user, tenant: Tenant, now: datetime | None = None) -> TenantUsage:
    """GPU-hours per day and user over the last USAGE_DAYS days, and the allocations' capacity."""
    start, end = usage_period(now)
    days = [start.date() + timedelta(days=n) for n in range((end.date() - start.date()).days + 1)]

    jobs = (
        tenant_jobs(user=user, tenant=tenant)
        .filter(start_time__isnull=False, start_time__lt=end, gpus__gt=0)
        .filter(Q(end_time__isnull=True) | Q(end_time__gt=start))
        .only("user", "state", "left_queue_at", "start_time", "end_time", "elapsed_seconds", "gpus")
        .order_by()
    )
    used: dict[tuple[date, str], int] = defaultdict(int)
    for job in jobs.iterator():
        ran_from = job.start_time
        ran_until = ran_from + timedelta(seconds=job.runtime_seconds(end))
        for day, seconds in _split_by_day(max(ran_from, start), min(ran_until, end)):
            used[(day, job.user)] += seconds * job.gpus

    capacity = dict.fromkeys(days, 0)
    allocations = (
        allocation_list(user=user)
        .filter(tenant=tenant, start__lt=end)
        .filter(Q(end__isnull=True) | Q(end__gt=start))
        .annotate(node_total=Count("nodes"))
    )
    for allocation in allocations:
        held_until = min(allocation.end or end, end)
        for day, seconds in _split_by_day(max(allocation.start, start), held_until):
            capacity[day] += seconds * allocation.node_total * GPUS_PER_NODE

    used = {key: seconds for key, seconds in used.items() if seconds}
    return TenantUsage(
        tenant=tenant,
        start=start,
        end=end,
        days=days,
        users=sorted({user_name for _day, user_name in used}),
        used_seconds=used,
        capacity_seconds_by_day=capacity,
    )


@dataclass(frozen=True)
class NodeFaultSummary:
    hostname: str
    status: str
    status_label: str
    count: int


def tenant_open_faults(*, user, tenant: Tenant) -> list[NodeFaultSummary]:
    """Open fault tickets on the nodes the tenant holds now: count per node and ticket state
    only. Summaries, components and responders are internal and are not read here."""
    held = allocation_list(user=user, current_only=True).filter(tenant=tenant)
    node_ids = Allocation.nodes.through.objects.filter(
        allocation__in=held.order_by().values("pk")
    ).values("node_id")
    rows = (
        FaultTicket.objects.filter(node_id__in=node_ids, status__in=OPEN_STATUSES)
        .values("node__hostname", "status")
        .annotate(count=Count("id"))
        .order_by("node__hostname", "status")
    )
    labels = dict(FaultTicket._meta.get_field("status").choices)
    return [
        NodeFaultSummary(
            hostname=row["node__hostname"],
            status=row["status"],
            status_label=str(labels.get(row["status"], row["status"])),
            count=row["count"],
        )
        for row in rows
    ]

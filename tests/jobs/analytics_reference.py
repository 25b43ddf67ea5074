"""The analytics' definitions computed again in plain Python, row by row, from the same job specs
the tests write to the database: what the service must answer, found without its SQL.

Definitions (jobs/analytics.py states them too):
- kind "gpu": jobs with at least one GPU; "cpu": none; "all".
- In the period: jobs in a final state that ended in [since, until + 1 day), plus jobs running
  (RUNNING, COMPLETING, CONFIGURING, SUSPENDED, still in the queue) that started before the
  moment GPU time is counted up to: now, or the period's end if that is earlier; one imported
  from a trace (`observed_until`) only if the trace was taken in the period or after it.
- GPU time: the stored value, else elapsed x GPUs; a running job's is GPUs x (until - start),
  `until` being its trace's time if that is earlier.
- Sizes and GPU counts: those of them that got a node. Runtime statistics: finished ones only.
- Daily submissions: every job of the kind by the day it was submitted, whatever its state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

FINAL_EXCLUDED = ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING", "SUSPENDED")
RUNNING = ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED")
NODE_BUCKETS = (
    ("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-8", 5, 8), ("9-16", 9, 16),
    ("17-32", 17, 32), ("33-64", 33, 64), ("65+", 65, 10**9),
)
GPU_LABELS = ("1", "2", "4", "8", "more than 8", "other", "none")


@dataclass(frozen=True)
class Spec:
    job_id: str
    state: str
    nodes: int
    gpus: int
    submit: datetime
    start: datetime | None = None
    end: datetime | None = None
    store_gpu_seconds: bool = True
    left_queue: bool = False
    observed_until: datetime | None = None  # running in a trace taken then

    @property
    def elapsed(self) -> int | None:
        if self.state in FINAL_EXCLUDED:
            return None
        if self.start is None:
            return 0
        return int((self.end - self.start).total_seconds())


def node_bucket(nodes: int) -> str:
    return next((label for label, low, high in NODE_BUCKETS if low <= nodes <= high), "")


def gpu_label(gpus: int) -> str:
    if gpus == 0:
        return "none"
    if gpus in (1, 2, 4, 8):
        return str(gpus)
    return "more than 8" if gpus > 8 else "other"


def share(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def expected(specs, since: date, until: date, now: datetime, kind: str = "gpu") -> dict:
    period_start = datetime.combine(since, time.min, tzinfo=UTC)
    period_end = datetime.combine(until + timedelta(days=1), time.min, tzinfo=UTC)
    counted_until = min(now, period_end)
    of_kind = [
        spec for spec in specs
        if kind == "all" or (spec.gpus > 0) == (kind == "gpu")
    ]

    def running(spec: Spec) -> bool:
        return (spec.state in RUNNING and not spec.left_queue and spec.start is not None
                and spec.start < counted_until
                and (spec.observed_until is None or spec.observed_until >= period_start))

    def finished(spec: Spec) -> bool:
        return (spec.state not in FINAL_EXCLUDED and spec.end is not None
                and period_start <= spec.end < period_end)

    def gpu_seconds(spec: Spec) -> int:
        if running(spec):
            until = min(counted_until, spec.observed_until or counted_until)
            return spec.gpus * int((until - spec.start).total_seconds())
        return spec.elapsed * spec.gpus

    in_period = [spec for spec in of_kind if finished(spec) or running(spec)]

    def table(groups: dict[str, list[Spec]]) -> dict:
        total_count = sum(len(group) for group in groups.values())
        total_gpu = sum(gpu_seconds(spec) for group in groups.values() for spec in group)
        return {
            label: {
                "count": len(group),
                "running_count": sum(running(spec) for spec in group),
                "count_share": share(len(group), total_count),
                "gpu_hours": round(sum(gpu_seconds(spec) for spec in group) / 3600, 2),
                "gpu_time_share": share(sum(gpu_seconds(spec) for spec in group), total_gpu),
            }
            for label, group in groups.items()
        }

    states: dict[str, list[Spec]] = {}
    for spec in in_period:
        states.setdefault(spec.state, []).append(spec)
    sized = [spec for spec in in_period if spec.nodes >= 1]
    sizes = {label: [s for s in sized if node_bucket(s.nodes) == label]
             for label, _, _ in NODE_BUCKETS}
    gpu_counts = {label: [s for s in sized if gpu_label(s.gpus) == label] for label in GPU_LABELS}

    def percentiles(group: list[Spec]) -> dict:
        runtimes = sorted(spec.elapsed for spec in group if not running(spec))
        if not runtimes:
            return {"p50": None, "p90": None, "p99": None}
        # Discrete percentile: the value at position max(1, ceil(f x n)), 1-based.
        return {
            name: runtimes[max(1, math.ceil(fraction * len(runtimes))) - 1]
            for name, fraction in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
        }

    days = [since + timedelta(days=n) for n in range((until - since).days + 1)]
    daily: dict[str, list[int]] = {label: [0] * len(days) for label, _, _ in NODE_BUCKETS}
    daily[""] = [0] * len(days)
    for spec in of_kind:
        day = spec.submit.astimezone(UTC).date()
        if since <= day <= until:
            daily[node_bucket(spec.nodes)][(day - since).days] += 1

    running_specs = [spec for spec in in_period if running(spec)]
    return {
        "counted_until": counted_until,
        "states": table(states),
        "state_totals": {
            "total_count": len(in_period),
            "total_gpu_hours": round(sum(map(gpu_seconds, in_period)) / 3600, 2),
            "running_count": len(running_specs),
            "running_gpu_hours": round(sum(map(gpu_seconds, running_specs)) / 3600, 2),
        },
        "sizes": table(sizes),
        "finished_counts": {label: sum(not running(s) for s in group)
                            for label, group in sizes.items()},
        "percentiles": {label: percentiles(group) for label, group in sizes.items()},
        "gpu_counts": table(gpu_counts),
        "daily": daily,
    }

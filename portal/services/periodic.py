"""Writes behind periodic tasks' leases (portal/periodic.py explains why they exist)."""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from portal.models import PeriodicTaskState

logger = logging.getLogger(__name__)

LEASE_INTERVALS = 5
MIN_LEASE_SECONDS = 120.0


def lease_seconds(interval: float) -> float:
    return max(interval * LEASE_INTERVALS, MIN_LEASE_SECONDS)


@dataclass(frozen=True)
class RunClaim:
    task: str
    started_at: object  # datetime
    started_monotonic: float
    interval: float


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def claim_periodic_run(task: str, interval: float) -> RunClaim | None:
    """Take `task`'s lease, or None (the skip is logged and counted) while a run holds it."""
    now = timezone.now()
    with transaction.atomic():
        state, _ = PeriodicTaskState.objects.select_for_update().get_or_create(task=task)
        held_since = state.running_since
        if held_since is not None and now - held_since < timedelta(seconds=lease_seconds(interval)):
            PeriodicTaskState.objects.filter(task=task).update(
                skipped_runs=F("skipped_runs") + 1, last_overrun_at=now
            )
            logger.warning(
                "periodic task %s skipped: the run started %s on %s is still going "
                "(interval %.0f s)",
                task,
                held_since.isoformat(timespec="seconds"),
                state.last_run_by or "?",
                interval,
            )
            return None
        if held_since is not None:
            logger.warning(
                "periodic task %s: lease of the run started %s on %s expired; starting anew",
                task,
                held_since.isoformat(timespec="seconds"),
                state.last_run_by or "?",
            )
        PeriodicTaskState.objects.filter(task=task).update(
            running_since=now,
            last_run_by=_holder(),
            interval_seconds=interval,
            last_started_at=now,
        )
    return RunClaim(task, now, time.monotonic(), interval)


def finish_periodic_run(claim: RunClaim, *, error: str = "") -> float:
    """Release the lease and record the run; returns its duration in seconds."""
    duration = time.monotonic() - claim.started_monotonic
    overran = duration > claim.interval
    if overran:
        logger.warning(
            "periodic task %s took %.1f s, longer than its %.0f s interval",
            claim.task,
            duration,
            claim.interval,
        )
    changes = {
        "running_since": None,
        "last_finished_at": timezone.now(),
        "last_duration_seconds": round(duration, 3),
        "last_error": error[:2000],
    }
    if overran:
        changes |= {"overran_runs": F("overran_runs") + 1, "last_overrun_at": timezone.now()}
    # Only this run's lease: an expired lease taken over by a newer run stays with that run.
    PeriodicTaskState.objects.filter(task=claim.task, running_since=claim.started_at).update(
        **changes
    )
    return duration

"""The canary Action: proves the whole pipeline (outbox, broker, worker, events) end to end.

Operators run it after a deploy or when Actions seem stuck; it touches nothing outside. It can
hold its worker for a while, which is how the recovery from a killed worker is rehearsed.
"""

from __future__ import annotations

import os
import socket
import time

from django.utils import timezone

from portal.actions.registry import register_action_handler

CANARY_KIND = "portal.canary"
CANARY_MAX_HOLD_SECONDS = 60


def canary_hold_seconds(action) -> float:
    return min(max(float(action.parameters.get("hold_seconds", 0)), 0.0), CANARY_MAX_HOLD_SECONDS)


@register_action_handler(
    CANARY_KIND,
    description="Round trip through the Action pipeline without touching the cluster.",
    lease_seconds=lambda action: canary_hold_seconds(action) + 5,
)
def run_canary(action) -> dict:
    hold_seconds = canary_hold_seconds(action)
    time.sleep(hold_seconds)
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "held_seconds": hold_seconds,
        "queued_for_seconds": round((action.started_at - action.created_at).total_seconds(), 3),
        "finished_at": timezone.now().isoformat(),
    }

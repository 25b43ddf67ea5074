"""Readiness of the fabric: how long ago each switch last answered a counter poll.

/readyz and the dashboard read the poller's records (SwitchPollState) with one query and never
open SSH themselves: the poller (beat + worker, every FABRIC_POLL_INTERVAL) already asks every
switch, and a readiness probe must answer in milliseconds.

- every switch answered within FABRIC_READINESS_STALE_SECONDS: ok;
- some did not: "stale: ..." naming them (shown, not a 503: the web still serves and most
  switch Actions still work);
- none did: "fabric unreachable: ..." (503), the poller or the management network is down;
- a switch never polled yet counts as waiting, not late, for FABRIC_READINESS_STALE_SECONDS
  after this process started: right after a deployment the first poll has not run yet.
"""

from __future__ import annotations

import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from inventory.models import Switch

# The grace period for never-polled switches counts from here: apps' ready() imports this
# module once per process (web, worker).
PROCESS_STARTED_AT = time.monotonic()

NAMED_SWITCHES = 5


def _named(hostnames: list[str]) -> str:
    shown = ", ".join(hostnames[:NAMED_SWITCHES])
    more = len(hostnames) - NAMED_SWITCHES
    return f"{shown} and {more} more" if more > 0 else shown


def check_fabric_polls() -> str | None:
    """None when every switch answered a recent poll, else what is stale or down, naming it."""
    stale_after = settings.FABRIC_READINESS_STALE_SECONDS
    in_grace = time.monotonic() - PROCESS_STARTED_AT < stale_after
    cutoff = timezone.now() - timedelta(seconds=stale_after)
    rows = Switch.objects.order_by("hostname").values_list(
        "hostname",
        "poll_state__last_polled_at",
        "poll_state__last_seen_at",
        "poll_state__consecutive_failures",
    )
    fresh, waiting, late = 0, [], []
    for hostname, polled_at, seen_at, failures in rows:
        # A poll that succeeded is dated by the portal's clock (polled_at); after failures only
        # the switch's own clock (seen_at) says when it last answered.
        answered_at = polled_at if seen_at is not None and failures == 0 else seen_at
        if answered_at is not None and answered_at >= cutoff:
            fresh += 1
        elif polled_at is None and in_grace:
            waiting.append(hostname)
        else:
            late.append(hostname)
    total = fresh + len(waiting) + len(late)
    if total == 0:
        return "not configured (no switches in the inventory)"
    window = f"{stale_after:g} s"
    if late and not fresh and not waiting:
        return f"fabric unreachable: no switch answered a poll in the last {window}: {_named(late)}"
    if late:
        return (
            f"stale: {len(late)} of {total} switches answered no poll in the last {window}: "
            f"{_named(late)}"
        )
    if waiting:
        return f"waiting for the first poll of {len(waiting)} of {total} switches"
    return None

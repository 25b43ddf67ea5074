"""The ticket workflow: states and the transitions allowed between them.

    new -> triaged -> mitigating -> awaiting_vendor -> resolved -> verified -> closed
      \\-> false_positive -> closed

Skips that are legal, and why:
- triaged -> resolved: a fault that a warm reboot fixed before anyone needed to mitigate.
- mitigating -> resolved: most faults (the paper: node-level restarts within minutes) never
  involve a vendor.
- awaiting_vendor -> mitigating: the vendor declined the RMA; back to working around it.
- resolved -> mitigating: verification failed (the fix did not hold).
- triaged -> false_positive: triage may conclude there was no fault after looking closer.
Everything else is refused (409 naming the allowed targets). `closed` is terminal: a fault that
comes back is a new ticket linked to the old one (services.tickets.reopen_ticket), so the closed
ticket's figures (MTTR) stay as they were.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models


class Status(models.TextChoices):
    NEW = "new"
    TRIAGED = "triaged"
    FALSE_POSITIVE = "false_positive", "False positive"
    MITIGATING = "mitigating"
    AWAITING_VENDOR = "awaiting_vendor", "Awaiting vendor"
    RESOLVED = "resolved"
    VERIFIED = "verified"
    CLOSED = "closed"


ALLOWED_TRANSITIONS: dict[str, tuple[str, ...]] = {
    Status.NEW: (Status.TRIAGED, Status.FALSE_POSITIVE),
    Status.TRIAGED: (Status.MITIGATING, Status.RESOLVED, Status.FALSE_POSITIVE),
    Status.MITIGATING: (Status.AWAITING_VENDOR, Status.RESOLVED),
    Status.AWAITING_VENDOR: (Status.RESOLVED, Status.MITIGATING),
    Status.RESOLVED: (Status.VERIFIED, Status.MITIGATING),
    Status.VERIFIED: (Status.CLOSED,),
    Status.FALSE_POSITIVE: (Status.CLOSED,),
    Status.CLOSED: (),
}

# A ticket in one of these states is "open": new events with its fingerprint attach to it, the
# board shows it, and its node may not be resumed without an override.
OPEN_STATUSES = frozenset(
    {Status.NEW, Status.TRIAGED, Status.MITIGATING, Status.AWAITING_VENDOR}
)
# The board's columns, left to right (resolved and verified wait for a person too).
BOARD_STATUSES = (
    Status.NEW,
    Status.TRIAGED,
    Status.MITIGATING,
    Status.AWAITING_VENDOR,
    Status.RESOLVED,
    Status.VERIFIED,
)
# States from which a ticket may be reopened (within the reopen window).
REOPENABLE_STATUSES = frozenset({Status.RESOLVED, Status.VERIFIED, Status.CLOSED})


def allowed_targets(status: str) -> tuple[str, ...]:
    return ALLOWED_TRANSITIONS.get(status, ())


def is_reopenable(status: str) -> bool:
    """Whether a ticket in `status` may come back as a new linked ticket (the reopen window
    aside, which services.tickets.reopen_ticket checks against the resolution time)."""
    return status in REOPENABLE_STATUSES


def reopen_window() -> timedelta:
    """How long after its resolution a ticket may be reopened, and a new ticket with its
    fingerprint counts as its recurrence (FAULTS_REOPEN_WINDOW_HOURS, default 72)."""
    return timedelta(hours=float(getattr(settings, "FAULTS_REOPEN_WINDOW_HOURS", 72)))

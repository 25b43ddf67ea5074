"""The repair case workflow: a vendor case from the open ticket to the part installed.

    open -> waiting_for_part -> part_received -> installed -> closed

Skips and returns that are legal, and why:
- open -> part_received: the part came off the site's spares shelf, no wait.
- open -> closed, waiting_for_part -> closed: no part was needed after all, or the vendor
  declined the case.
- part_received -> waiting_for_part: the part was dead on arrival or the wrong one.
- installed -> waiting_for_part: the replacement did not fix it; the vendor sends another.
Everything else is refused (409 naming the allowed targets). Entering `installed` needs every
part of the case swapped in the inventory (services.repairs.install_part does it, and moves the
case when its last part goes in). `closed` is terminal: a new fault is a new case.
"""

from __future__ import annotations

from django.db import models


class RepairStatus(models.TextChoices):
    OPEN = "open"
    WAITING_FOR_PART = "waiting_for_part", "Waiting for part"
    PART_RECEIVED = "part_received", "Part received"
    INSTALLED = "installed"
    CLOSED = "closed"


REPAIR_TRANSITIONS: dict[str, tuple[str, ...]] = {
    RepairStatus.OPEN: (
        RepairStatus.WAITING_FOR_PART, RepairStatus.PART_RECEIVED, RepairStatus.CLOSED
    ),
    RepairStatus.WAITING_FOR_PART: (RepairStatus.PART_RECEIVED, RepairStatus.CLOSED),
    RepairStatus.PART_RECEIVED: (RepairStatus.INSTALLED, RepairStatus.WAITING_FOR_PART),
    RepairStatus.INSTALLED: (RepairStatus.CLOSED, RepairStatus.WAITING_FOR_PART),
    RepairStatus.CLOSED: (),
}

# The field each state's date is stamped in. The first wait counts (the node waited from the
# first request), the latest arrival, installation and close do (the part that held).
REPAIR_STAMPS: dict[str, str] = {
    RepairStatus.WAITING_FOR_PART: "waiting_for_part_at",
    RepairStatus.PART_RECEIVED: "part_received_at",
    RepairStatus.INSTALLED: "installed_at",
    RepairStatus.CLOSED: "closed_at",
}
FIRST_STAMP_COUNTS = frozenset({RepairStatus.WAITING_FOR_PART})

# A case in one of these states still keeps its node out of service for the vendor.
OPEN_REPAIR_STATUSES = frozenset(
    {RepairStatus.OPEN, RepairStatus.WAITING_FOR_PART, RepairStatus.PART_RECEIVED}
)
# Parts go in once they are on site.
INSTALLABLE_STATUSES = frozenset({RepairStatus.PART_RECEIVED})


def repair_targets(status: str) -> tuple[str, ...]:
    return REPAIR_TRANSITIONS.get(status, ())


def repair_move_targets(status: str) -> tuple[str, ...]:
    """What a person may move a case to by hand, the usual next step first (the table's order):
    `installed` is left out, as installing the last part moves the case there."""
    return tuple(target for target in repair_targets(status) if target != RepairStatus.INSTALLED)

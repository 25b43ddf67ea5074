"""Slurm reservations that back tenants' allocations, kept in step by an Action.

The handler reconciles: it reads the allocation when it runs and makes Slurm match it, creating
or updating the reservation, or deleting it once the allocation has ended or is gone. Running
it twice, or late after a newer change, leaves Slurm as the database says.
"""

from __future__ import annotations

from django.utils import timezone

from inventory.allocations import RESERVATION_SYNC_ACTION
from inventory.models import Allocation
from jobs.action_handlers import _call_slurm
from jobs.drivers.base import SlurmReservation, get_slurm_driver
from portal.actions.registry import register_action_handler

# Running jobs on the nodes do not block the reservation; they finish, then the tenant holds them.
RESERVATION_FLAGS = ("IGNORE_JOBS",)


def desired_reservation(allocation: Allocation, name: str) -> SlurmReservation | None:
    """What Slurm should hold for `allocation` now: None once it has ended."""
    now = timezone.now()
    if allocation.end is not None and allocation.end <= now:
        return None
    return SlurmReservation(
        name=name,
        accounts=(allocation.tenant.slurm_account,),
        node_names=tuple(sorted(allocation.nodes.values_list("hostname", flat=True))),
        # Slurm refuses a start in the past; an allocation already under way starts now.
        start=max(allocation.start, now),
        end=allocation.end,
        flags=RESERVATION_FLAGS,
    )


@register_action_handler(
    RESERVATION_SYNC_ACTION,
    description="Make the Slurm reservation of a tenant's allocation match the allocation.",
)
def sync_reservation(action) -> dict:
    name = action.parameters["reservation"]
    allocation = (
        Allocation.objects.select_related("tenant")
        .filter(pk=action.parameters["allocation_id"])
        .first()
    )
    driver = get_slurm_driver()
    wanted = desired_reservation(allocation, name) if allocation is not None else None
    if wanted is None:
        _call_slurm(driver.delete_reservation, name)
        return {"reservation": name, "deleted": True}
    _call_slurm(driver.create_or_update_reservation, wanted)
    return {
        "reservation": name,
        "accounts": list(wanted.accounts),
        "nodes": len(wanted.node_names),
        "start": wanted.start.isoformat(),
        "end": wanted.end.isoformat() if wanted.end else None,
    }

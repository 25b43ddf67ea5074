"""A one-time boot override through the BMC as a durable Action: boot from PXE, or into BIOS
setup, at the next boot only (Redfish BootSourceOverrideEnabled "Once").

The Action reports what the BMC read back, not what was asked: sushy-emulator (and some real
BMCs) store "Once" as "Continuous", which would boot from PXE at every boot until cleared. That
is said in the result (`as_requested` false, `note`), so the operator knows to clear it; a BMC
that reads back another boot source than the one asked fails the Action.
"""

from __future__ import annotations

from inventory.bmc.drivers.base import (
    BmcDriver,
    BmcError,
    BmcNotConfigured,
    BmcUnreachable,
    get_bmc_driver,
)
from inventory.bmc.power import clean_reason
from inventory.bmc.targets import bmc_target, has_bmc
from portal.errors import Conflict, InvalidInput
from portal.services.actions import enqueue_action

BOOT_OVERRIDE_ACTION = "bmc.boot_override"
# Redfish BootSourceOverrideTarget values offered for a one-time boot, with their labels.
BOOT_TARGETS: dict[str, str] = {
    "Pxe": "Network (PXE)",
    "BiosSetup": "BIOS setup",
    "Hdd": "Local disk",
    "Cd": "Virtual CD",
    "UefiHttp": "UEFI HTTP boot",
}
ONCE = "Once"


class BootOverrideFailed(Exception):
    """The BMC refused, lacks the boot source, or read back another one. Not worth retrying."""


class BootOverrideUnreachable(Exception):
    """The BMC did not answer: worth retrying (setting the same override again is harmless)."""


def request_boot_override(
    *,
    node,
    target: str,
    reason: str,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
):
    """Queue a one-time boot override of `node` to `target`. Returns (action, created)."""
    if target not in BOOT_TARGETS:
        raise InvalidInput({"target": [f"Choose one of {', '.join(BOOT_TARGETS)}."]})
    reason = clean_reason(reason)
    if not has_bmc(node):
        raise Conflict(
            {"node": [f"{node.hostname} has no BMC address: record it in the inventory first."]}
        )
    return enqueue_action(
        kind=BOOT_OVERRIDE_ACTION,
        target=node.hostname,
        reason=reason,
        requested_by=requested_by,
        parameters={"node": node.hostname, "target": target, "enabled": ONCE},
        idempotency_key=idempotency_key,
        via=via,
    )


def carry_out_boot_override(node, device: str, *, driver: BmcDriver | None = None) -> dict:
    """Set the override, then read it back; the result says what the BMC holds now."""
    driver = driver or get_bmc_driver()
    try:
        target = bmc_target(node)
        before = driver.boot_override(target)
        driver.set_boot_override(target, device, once=True)
        after = driver.boot_override(target)
    except BmcUnreachable as error:
        raise BootOverrideUnreachable(str(error)) from error
    except (BmcNotConfigured, BmcError) as error:
        raise BootOverrideFailed(str(error)) from error
    if after.target != device:
        raise BootOverrideFailed(
            f"{node.hostname}: the BMC accepted boot from {device} but reads back "
            f"{after.target} ({after.enabled})"
        )
    as_requested = after.enabled == ONCE
    note = (
        f"The BMC boots from {device} at the next boot only."
        if as_requested
        else f"The BMC reads back {after.enabled!r}, not 'Once': it may boot from {device} at "
        "every boot until the override is cleared."
    )
    return {
        "node": node.hostname,
        "requested": {"target": device, "enabled": ONCE},
        "before": {"target": before.target, "enabled": before.enabled},
        "read_back": {"target": after.target, "enabled": after.enabled},
        "as_requested": as_requested,
        "note": note,
    }

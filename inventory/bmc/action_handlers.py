"""The Action handlers that carry power requests and one-time boot overrides out through the
configured BMC driver."""

from __future__ import annotations

from django.conf import settings

from inventory.bmc.boot import (
    BOOT_OVERRIDE_ACTION,
    BootOverrideFailed,
    BootOverrideUnreachable,
    carry_out_boot_override,
)
from inventory.bmc.power import (
    POWER_ACTION,
    PowerActionFailed,
    PowerActionUnreachable,
    carry_out,
)
from inventory.models import Node
from portal.actions.registry import (
    PermanentActionError,
    TransientActionError,
    register_action_handler,
)


def _node_of(action) -> Node:
    node = Node.objects.filter(hostname=action.parameters["node"]).first()
    if node is None:
        raise PermanentActionError(f"node {action.parameters['node']} no longer exists")
    return node


def power_attempt_lease_seconds(action=None) -> float:
    """One attempt: a reset or two and the wait for the target state (a power cycle by
    ForceOff then On waits twice), each request bounded by the driver's timeout."""
    return 2 * settings.BMC_POWER_DEADLINE_SECONDS + 4 * settings.BMC_TIMEOUT + 10


@register_action_handler(
    POWER_ACTION,
    lease_seconds=power_attempt_lease_seconds,
    description="Power a node on, off or through a cycle, or reset its BMC, through Redfish.",
    max_attempts=5,
)
def power_node(action) -> dict:
    node = _node_of(action)
    try:
        return carry_out(node, action.parameters["operation"])
    except PowerActionUnreachable as error:
        raise TransientActionError(str(error)) from error
    except PowerActionFailed as error:
        raise PermanentActionError(str(error)) from error


def boot_override_attempt_lease_seconds(action=None) -> float:
    """Three requests (read, set, read back), each bounded by the driver's timeout."""
    return 3 * settings.BMC_TIMEOUT + 10


@register_action_handler(
    BOOT_OVERRIDE_ACTION,
    lease_seconds=boot_override_attempt_lease_seconds,
    description="Boot a node from PXE, BIOS setup or another source at its next boot only.",
    max_attempts=5,
)
def override_next_boot(action) -> dict:
    node = _node_of(action)
    try:
        return carry_out_boot_override(node, action.parameters["target"])
    except BootOverrideUnreachable as error:
        raise TransientActionError(str(error)) from error
    except BootOverrideFailed as error:
        raise PermanentActionError(str(error)) from error

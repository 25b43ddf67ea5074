"""Power through the BMC as durable Actions (DESIGN.md sections 3 and 12).

`request_power_action()` writes the Action in the caller's transaction after the policy checks:
the node has a BMC, and a power-off or reset of a node that runs jobs is refused naming the jobs
unless the operator forces it with a reason. `carry_out()` is what the worker runs: idempotent
(powering off an Off node succeeds at once), and successful only when the BMC reports the target
state within `BMC_POWER_DEADLINE_SECONDS`; otherwise it fails with the BMC's own message.

A power cycle uses the reset types the BMC advertises (`ResetType@Redfish.AllowableValues`):
PowerCycle where offered; else, as Ironic's reboot does, ForceRestart for a node that is on and
On for one that is off; where ForceRestart is not offered either, ForceOff, then On.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings

from inventory.bmc.drivers.base import (
    POWER_OFF,
    POWER_ON,
    BmcDriver,
    BmcError,
    BmcNotConfigured,
    BmcNotSupported,
    BmcRefused,
    BmcTarget,
    BmcUnreachable,
    get_bmc_driver,
)
from inventory.bmc.guards import power_blockers
from inventory.bmc.targets import bmc_target, has_bmc
from portal.errors import Conflict, InvalidInput
from portal.services.actions import enqueue_action

POWER_ACTION = "bmc.power"
MAX_REASON_LENGTH = 1000


@dataclass(frozen=True)
class PowerOperation:
    name: str
    label: str
    target_state: str | None  # None: the host's power is not what changes (a BMC reset)
    disruptive: bool  # takes the host down: refused while jobs run, unless forced


OPERATIONS: dict[str, PowerOperation] = {
    operation.name: operation
    for operation in (
        PowerOperation("on", "Power on", POWER_ON, False),
        PowerOperation("graceful_off", "Graceful power off", POWER_OFF, True),
        PowerOperation("force_off", "Forced power off", POWER_OFF, True),
        PowerOperation("power_cycle", "Power cycle", POWER_ON, True),
        PowerOperation("bmc_reset", "Reset the BMC", None, False),
    )
}


class PowerActionFailed(Exception):
    """The BMC refused, or did not reach the target state in time. Not worth retrying."""


class PowerActionUnreachable(Exception):
    """The BMC did not answer before anything was asked of it: worth retrying."""


def clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput({"reason": ["A reason is required: it is recorded and shown."]})
    if len(reason) > MAX_REASON_LENGTH:
        raise InvalidInput({"reason": [f"Use at most {MAX_REASON_LENGTH} characters."]})
    if any(ord(character) < 32 or ord(character) == 127 for character in reason):
        raise InvalidInput({"reason": ["Use one line of printable text."]})
    return reason


def power_impact(node) -> dict:
    """What powering `node` off or resetting it would hit: the jobs the guards name."""
    return {"jobs": power_blockers([node]).get(node.hostname, [])}


def request_power_action(
    *,
    node,
    operation: str,
    reason: str,
    requested_by=None,
    force: bool = False,
    via: str = "api",
    idempotency_key: str | None = None,
):
    """Queue one power Action on `node`. Returns (action, created).

    A disruptive operation on a node that runs jobs is refused (409) naming the jobs, unless
    `force` is set; the reason is always required and the forced jobs are recorded on the Action.
    """
    chosen = OPERATIONS.get(operation)
    if chosen is None:
        raise InvalidInput({"operation": [f"Choose one of {', '.join(OPERATIONS)}."]})
    reason = clean_reason(reason)
    if not has_bmc(node):
        raise Conflict(
            {"node": [f"{node.hostname} has no BMC address: record it in the inventory first."]}
        )
    jobs = power_impact(node)["jobs"] if chosen.disruptive else []
    if jobs and not force:
        raise Conflict(
            {
                "force": [
                    f"{node.hostname} runs {', '.join(jobs)}: {chosen.label.lower()} would end "
                    "them. Repeat with force and a reason to do it anyway."
                ]
            },
            jobs=jobs,
        )
    return enqueue_action(
        kind=POWER_ACTION,
        target=node.hostname,
        reason=reason,
        requested_by=requested_by,
        parameters={
            "node": node.hostname,
            "operation": chosen.name,
            "forced": bool(jobs),
            "jobs": jobs,
        },
        idempotency_key=idempotency_key,
        via=via,
    )


def read_power_state(node, *, driver: BmcDriver | None = None) -> str | None:
    """The power state the BMC reports now, or None when it cannot say (for pages: a short
    timeout, and any error is an unknown, never a guess)."""
    if not has_bmc(node):
        return None
    try:
        target = bmc_target(node, timeout=settings.BMC_PAGE_TIMEOUT)
        return (driver or get_bmc_driver()).power_state(target)
    except BmcError:
        return None


# -- carrying out (the worker) -------------------------------------------------------------------


def carry_out(node, operation: str, *, driver: BmcDriver | None = None) -> dict:
    """Do `operation` on `node` through its BMC and wait for the outcome. Returns what happened;
    raises PowerActionUnreachable before anything was asked, PowerActionFailed after."""
    chosen = OPERATIONS[operation]
    driver = driver or get_bmc_driver()
    try:
        target = bmc_target(node)
    except BmcNotConfigured as error:
        raise PowerActionFailed(str(error)) from error
    started = time.monotonic()
    try:
        before = driver.power_state(target)
    except BmcUnreachable as error:
        raise PowerActionUnreachable(str(error)) from error
    except BmcError as error:
        raise PowerActionFailed(str(error)) from error
    steps: list[str] = []
    try:
        if chosen.name == "bmc_reset":
            steps.append(f"Manager.Reset {driver.reset_bmc(target)}")
            final = _wait_until_answering(driver, target, started)
        elif chosen.name == "power_cycle":
            final = _power_cycle(driver, target, before, steps, started)
        elif before == chosen.target_state:
            final = before  # idempotent: nothing to ask of the BMC
        else:
            reset_type = _reset_type_for(driver, target, chosen)
            steps.append(reset_type)
            driver.reset(target, reset_type)
            final = _wait_for(driver, target, chosen.target_state, reset_type, started)
    except BmcError as error:
        raise PowerActionFailed(str(error)) from error
    return {
        "node": node.hostname,
        "operation": chosen.name,
        "power_state_before": before,
        "power_state": final,
        "reset_types": steps,
        "already": not steps,
        "seconds": round(time.monotonic() - started, 1),
    }


def _reset_type_for(driver: BmcDriver, target: BmcTarget, chosen: PowerOperation) -> str:
    allowed = driver.allowed_reset_types(target)
    preferences = {
        "on": ("On", "ForceOn"),
        "graceful_off": ("GracefulShutdown",),
        "force_off": ("ForceOff",),
    }[chosen.name]
    for reset_type in preferences:
        if reset_type in allowed:
            return reset_type
    raise BmcNotSupported(
        f"{target.hostname}: the BMC offers none of {', '.join(preferences)} "
        f"(it offers {', '.join(sorted(allowed)) or 'none'})"
    )


def _power_cycle(driver, target, before: str, steps: list[str], started: float) -> str:
    allowed = driver.allowed_reset_types(target)
    if "PowerCycle" in allowed:
        plan = ["PowerCycle"]
    elif before != POWER_ON:
        plan = ["On"]  # Ironic: a reboot of a node that is off turns it on
    elif "ForceRestart" in allowed:
        plan = ["ForceRestart"]
    elif {"ForceOff", "On"} <= allowed:
        plan = ["ForceOff", "On"]
    else:
        raise BmcNotSupported(
            f"{target.hostname}: the BMC offers neither PowerCycle, ForceRestart nor ForceOff "
            f"and On (it offers {', '.join(sorted(allowed)) or 'none'})"
        )
    final = before
    for reset_type in plan:
        steps.append(reset_type)
        driver.reset(target, reset_type)
        wanted = POWER_OFF if reset_type == "ForceOff" else POWER_ON
        final = _wait_for(driver, target, wanted, reset_type, started)
    return final


def _wait_for(driver, target, wanted: str, reset_type: str, started: float) -> str:
    """Poll until the BMC reports `wanted`; past the deadline, fail saying what it reports."""
    deadline = started + settings.BMC_POWER_DEADLINE_SECONDS
    state, last_error = None, None
    while True:
        try:
            state = driver.power_state(target)
            last_error = None
        except (BmcUnreachable, BmcRefused) as error:
            last_error = error  # a BMC busy with the change may not answer for a moment
        if state == wanted:
            return state
        if time.monotonic() >= deadline:
            seconds = round(settings.BMC_POWER_DEADLINE_SECONDS)
            if last_error is not None:
                raise PowerActionFailed(
                    f"{target.hostname}: no answer {seconds} s after {reset_type}: {last_error}"
                )
            raise PowerActionFailed(
                f"{target.hostname}: the BMC still reports {state} {seconds} s after "
                f"{reset_type}; expected {wanted}"
            )
        time.sleep(settings.BMC_POLL_SECONDS)


def _wait_until_answering(driver, target, started: float) -> str:
    """After a BMC reset: the BMC is back once it answers a power-state read again."""
    deadline = started + settings.BMC_POWER_DEADLINE_SECONDS
    while True:
        try:
            return driver.power_state(target)
        except (BmcUnreachable, BmcRefused) as error:
            if time.monotonic() >= deadline:
                raise PowerActionFailed(
                    f"{target.hostname}: the BMC did not come back within "
                    f"{round(settings.BMC_POWER_DEADLINE_SECONDS)} s: {error}"
                ) from error
        time.sleep(settings.BMC_POLL_SECONDS)

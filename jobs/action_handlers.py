"""Action handlers that carry drain and resume out through the configured Slurm driver."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from jobs.drivers.base import SlurmError, SlurmNodeState, SlurmUnavailable, get_slurm_driver
from jobs.services import CANCEL_REBOOT_ACTION, DRAIN_ACTION, REBOOT_ACTION, RESUME_ACTION
from portal.actions.registry import (
    ActionWaiting,
    PermanentActionError,
    TransientActionError,
    register_action_handler,
)

logger = logging.getLogger(__name__)

# A controller restart or failover takes minutes, not seconds: with the default backoff (5 s
# doubling to 300 s) ten attempts keep retrying for about twenty minutes before giving up.
SLURM_ACTION_MAX_ATTEMPTS = 10


def slurm_attempt_lease_seconds(action=None) -> float:
    """How long one drain/resume attempt may hold its Action: two Slurm commands (check the
    nodes, update them), each bounded by the driver's timeout, and a margin. After that a worker
    killed mid-attempt is presumed dead and the sweeper hands the Action to another."""
    from django.conf import settings

    per_command = max(settings.SLURM_COMMAND_TIMEOUT, settings.SLURM_REST_TIMEOUT)
    return 2 * per_command + 10


def _call_slurm(operation, *args):
    try:
        return operation(*args)
    except SlurmUnavailable as error:
        raise TransientActionError(f"Slurm controller unreachable: {error}") from error
    except SlurmError as error:
        raise PermanentActionError(str(error)) from error


def _refresh_node_states(nodes: list[str]) -> None:
    """Ask for a sync of these nodes' states now, so the change shows without waiting for the
    next beat. Best effort: the Action already succeeded, and the beat catches up anyway. Only
    the Action's nodes: at fleet scale a whole sync after every drain would write-lock and
    compare 12,500 rows to show one, while the worker's next Action waits behind it."""
    from jobs.tasks import sync_node_states

    try:
        sync_node_states.delay(names=nodes)
    except Exception:
        logger.warning("could not queue a node-state sync after a drain/resume", exc_info=True)


def _refresh_states_of_its_nodes(action) -> None:
    """After a drain or resume has succeeded (and said so): the sync is not part of it."""
    _refresh_node_states(list(action.parameters["nodes"]))


@register_action_handler(
    DRAIN_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    runs_where_queued=True,  # one scontrol call, bounded by SLURM_COMMAND_TIMEOUT
    description="Drain nodes in Slurm with the reason given.",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
    after_success=_refresh_states_of_its_nodes,
)
def drain_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    _call_slurm(get_slurm_driver().drain, nodes, action.reason)
    return {"drained": nodes}


@register_action_handler(
    RESUME_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    runs_where_queued=True,  # one scontrol call, bounded by SLURM_COMMAND_TIMEOUT
    description="Return drained nodes to service in Slurm.",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
    after_success=_refresh_states_of_its_nodes,
)
def resume_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    _call_slurm(get_slurm_driver().resume, nodes)
    return {"resumed": nodes}


@register_action_handler(
    REBOOT_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    description="Ask Slurm to reboot nodes once their jobs end (scontrol reboot ASAP), and "
    "succeed when each has registered again with a newer boot time.",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
)
def reboot_nodes(action) -> dict:
    """Two phases, carried between attempts in the Action's result (no worker waits on Slurm):
    1. note each node's boot time, then `scontrol reboot ASAP nextstate=...`;
    2. ActionWaiting, every SLURM_REBOOT_CHECK_SECONDS, until every node has registered with a
       boot time newer than the one noted (compared in slurmctld's own clock, so a skew between
       the portal and the controller cannot pass an old boot for a new one) and carries neither
       REBOOT_REQUESTED nor REBOOT_ISSUED; a node that ends with no reboot pending and no new
       boot (Slurm gave up: DOWN "reboot timed out" after ResumeTimeout, or the reboot was
       cancelled) fails the Action with Slurm's own reason, and so does the deadline.
    A worker killed between the request and the first wait asks again: Slurm skips a node whose
    reboot is already pending, so only a node that finished rebooting in between reboots twice.
    """
    from django.conf import settings

    parameters = action.parameters
    nodes = list(parameters["nodes"])
    next_state = parameters["next_state"]
    driver = get_slurm_driver()
    progress = action.result if isinstance(action.result, dict) else {}
    if progress.get("phase") != "rebooting":
        before = {state.name: state for state in _call_slurm(driver.nodes, nodes)}
        _call_slurm(driver.reboot, nodes, action.reason, next_state)
        _refresh_node_states(nodes)
        progress = {
            "phase": "rebooting",
            "requested_at": timezone.now().isoformat(),
            "boot_before": {
                name: _iso(before[name].boot_time) if name in before else None for name in nodes
            },
        }
    boot_before = {
        name: datetime.fromisoformat(text) if text else None
        for name, text in progress["boot_before"].items()
    }
    states = {state.name: state for state in _call_slurm(driver.nodes, nodes)}
    back, waiting, failed = {}, {}, {}
    for name in nodes:
        state = states.get(name)
        if state is None:
            failed[name] = "Slurm no longer knows this node"
            continue
        outcome = reboot_outcome(state, boot_before.get(name), next_state)
        {"back": back, "waiting": waiting, "failed": failed}[outcome[0]][name] = outcome[1]
    if failed:
        _refresh_node_states(nodes)
        raise PermanentActionError(
            "; ".join(f"{name}: {why}" for name, why in sorted(failed.items()))
            + (f" (back: {', '.join(sorted(back))})" if back else "")
        )
    if waiting:
        deadline = parameters.get("deadline")
        if deadline and timezone.now() >= datetime.fromisoformat(deadline):
            raise PermanentActionError(
                "reboot not finished by its deadline: "
                + "; ".join(f"{name}: {why}" for name, why in sorted(waiting.items()))
            )
        raise ActionWaiting(
            {
                **progress,
                "back": sorted(back),
                "waiting": waiting,
                "progress": f"{len(back)} of {len(nodes)} back; "
                + ", ".join(f"{name} {why}" for name, why in sorted(waiting.items())),
            },
            check_again_in=settings.SLURM_REBOOT_CHECK_SECONDS,
        )
    _refresh_node_states(nodes)
    return {
        "rebooted": nodes,
        "next_state": next_state,
        "requested_at": progress["requested_at"],
        "boot_times": {name: _iso(states[name].boot_time) for name in nodes},
    }


# slurmctld recomputes a node's boot time (now - slurmd's uptime) at every registration, so an
# unrebooted node's boot time wanders by a second (measured: 04:24:07 -> 04:24:08 with the same
# slurmd). A reboot moves it by at least the time the node was up, far more than this.
BOOT_TIME_JITTER = timedelta(seconds=5)


def reboot_outcome(
    state: SlurmNodeState, boot_before: datetime | None, next_state: str
) -> tuple[str, str]:
    """("back" | "waiting" | "failed", in words) for one node of a reboot asked for when its
    boot time was `boot_before`."""
    rebooted = state.boot_time is not None and (
        boot_before is None or state.boot_time > boot_before + BOOT_TIME_JITTER
    )
    if state.reboot_state:
        # Slurm still owns it: REBOOT_REQUESTED (jobs running) or REBOOT_ISSUED (booting).
        return "waiting", f"reboot {state.reboot_state} ({state.display_state})"
    if not rebooted:
        # No reboot pending and no new boot: Slurm gave up or someone cancelled it (scontrol
        # cancel_reboot). Giving up, slurmctld sets the node DOWN "reboot timed out" once
        # ResumeTimeout has passed since the RebootProgram ran; with ReturnToService=2 a node
        # whose slurmd still answers goes straight back to IDLE and that reason is gone again
        # (measured on the test cluster), so the words are Slurm's when it still shows them.
        if state.reason:
            return "failed", f"{state.reason} (Slurm: {state.display_state})"
        return "failed", (
            f"Slurm ended the reboot without a new boot: it was cancelled, or ResumeTimeout "
            f"passed (reboot timed out) and the node's slurmd still answered "
            f"(Slurm: {state.display_state})"
        )
    if next_state == "resume" and state.state == "down":
        return "failed", f"rebooted but {state.display_state}: {state.reason or 'no reason'}"
    return "back", _iso(state.boot_time)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


@register_action_handler(
    CANCEL_REBOOT_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    description="Withdraw a reboot Slurm has not issued yet (scontrol cancel_reboot).",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
)
def cancel_reboot_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    _call_slurm(get_slurm_driver().cancel_reboot, nodes)
    _refresh_node_states(nodes)
    return {"reboot_cancelled": nodes}

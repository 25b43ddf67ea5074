"""Action handlers that carry drain and resume out through the configured Slurm driver."""

from __future__ import annotations

import logging

from jobs.drivers.base import SlurmError, SlurmUnavailable, get_slurm_driver
from jobs.services import DRAIN_ACTION, REBOOT_ACTION, RESUME_ACTION
from portal.actions.registry import (
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


def _call_slurm(operation, *args) -> None:
    try:
        operation(*args)
    except SlurmUnavailable as error:
        raise TransientActionError(f"Slurm controller unreachable: {error}") from error
    except SlurmError as error:
        raise PermanentActionError(str(error)) from error


def _refresh_node_states() -> None:
    """Ask for a node-state sync now, so the change shows without waiting for the next beat.
    Best effort: the Action already succeeded, and the beat catches up anyway."""
    from jobs.tasks import sync_node_states

    try:
        sync_node_states.delay()
    except Exception:
        logger.warning("could not queue a node-state sync after a drain/resume", exc_info=True)


@register_action_handler(
    DRAIN_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    description="Drain nodes in Slurm with the reason given.",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
)
def drain_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    _call_slurm(get_slurm_driver().drain, nodes, action.reason)
    _refresh_node_states()
    return {"drained": nodes}


@register_action_handler(
    RESUME_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    description="Return drained nodes to service in Slurm.",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
)
def resume_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    _call_slurm(get_slurm_driver().resume, nodes)
    _refresh_node_states()
    return {"resumed": nodes}


@register_action_handler(
    REBOOT_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    description="Ask Slurm to reboot nodes once their jobs end (scontrol reboot ASAP).",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
)
def reboot_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    next_state = action.parameters["next_state"]
    _call_slurm(get_slurm_driver().reboot, nodes, action.reason, next_state)
    _refresh_node_states()
    return {"reboot_requested": nodes, "next_state": next_state}

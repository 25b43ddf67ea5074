"""Action handlers that carry drain and resume out through the configured Slurm driver."""

from __future__ import annotations

from jobs.drivers.base import SlurmError, SlurmUnavailable, get_slurm_driver
from jobs.services import DRAIN_ACTION, RESUME_ACTION
from portal.actions.registry import (
    PermanentActionError,
    TransientActionError,
    register_action_handler,
)

# A controller restart or failover takes minutes, not seconds: with the default backoff (5 s
# doubling to 300 s) ten attempts keep retrying for about twenty minutes before giving up.
SLURM_ACTION_MAX_ATTEMPTS = 10


def _call_slurm(operation, *args) -> None:
    try:
        operation(*args)
    except SlurmUnavailable as error:
        raise TransientActionError(f"Slurm controller unreachable: {error}") from error
    except SlurmError as error:
        raise PermanentActionError(str(error)) from error


@register_action_handler(
    DRAIN_ACTION,
    description="Drain nodes in Slurm with the reason given.",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
)
def drain_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    _call_slurm(get_slurm_driver().drain, nodes, action.reason)
    return {"drained": nodes}


@register_action_handler(
    RESUME_ACTION,
    description="Return drained nodes to service in Slurm.",
    max_attempts=SLURM_ACTION_MAX_ATTEMPTS,
)
def resume_nodes(action) -> dict:
    nodes = list(action.parameters["nodes"])
    _call_slurm(get_slurm_driver().resume, nodes)
    return {"resumed": nodes}

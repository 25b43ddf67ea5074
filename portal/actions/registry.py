"""Registry of Action handlers, one per kind (e.g. "slurm.drain", "fabric.port_admin").

A handler is a function taking the Action and returning a JSON-serialisable result. It must be
idempotent: after a killed worker the same Action may be run again, and draining a drained node
must succeed. It raises TransientActionError for errors worth retrying (controller unreachable,
SSH timeout), ActionWaiting to be called again later without using up an attempt, and anything
else to fail the Action.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from portal.models import Action


class TransientActionError(Exception):
    """The outside world could not be reached; the Action is retried with backoff."""


class PermanentActionError(Exception):
    """The outside world refused the change; retrying would not help."""


class ActionWaiting(Exception):
    """The Action cannot go on yet and nothing is wrong (a maintenance waiting for its nodes'
    jobs to end): check again in `check_again_in` seconds. Not an attempt: it uses none of
    `max_attempts`, and `progress` (JSON) becomes the Action's result meanwhile, so the Action
    page shows what it waits for. A handler that waits keeps its own deadline."""

    def __init__(self, progress: dict, check_again_in: float):
        super().__init__(progress.get("progress", "waiting"))
        self.progress = progress
        self.check_again_in = max(float(check_again_in), 0.0)


HandlerFunction = Callable[["Action"], Any]


@dataclass(frozen=True)
class ActionHandler:
    kind: str
    function: HandlerFunction
    description: str
    # How long one attempt may hold the Action before another delivery may take it over:
    # seconds, or a function of the Action for handlers whose duration depends on parameters.
    lease_seconds: float | Callable[[Action], float] = 300.0
    max_attempts: int = 5
    # Work that can follow the Action's success rather than hold it up: called with the Action
    # once its success is committed and its events are on their way (a drain's node-state sync).
    after_success: Callable[[Action], None] | None = None
    # Quick enough to run in the process that queued it, right after the commit, rather than
    # across the broker in a worker: one bounded call to a controller (a drain). The hop and
    # the worker's claim were most of a drain's time. Workers still take what that process
    # cannot (its runner busy, a retry, anything the sweeper re-sends).
    runs_where_queued: bool = False

    def lease_for(self, action: Action) -> float:
        if callable(self.lease_seconds):
            return float(self.lease_seconds(action))
        return float(self.lease_seconds)


_handlers: dict[str, ActionHandler] = {}


def register_action_handler(
    kind: str,
    *,
    description: str,
    lease_seconds: float | Callable[[Action], float] = 300.0,
    max_attempts: int = 5,
    after_success: Callable[[Action], None] | None = None,
    runs_where_queued: bool = False,
) -> Callable[[HandlerFunction], HandlerFunction]:
    def decorator(function: HandlerFunction) -> HandlerFunction:
        existing = _handlers.get(kind)
        if existing and existing.function is not function:
            raise ValueError(f"Action kind {kind!r} is already registered by {existing.function}")
        _handlers[kind] = ActionHandler(
            kind, function, description, lease_seconds, max_attempts, after_success,
            runs_where_queued,
        )
        return function

    return decorator


def get_action_handler(kind: str) -> ActionHandler | None:
    return _handlers.get(kind)


def registered_action_kinds() -> list[str]:
    return sorted(_handlers)


def import_handler_modules(module_names: list[str]) -> None:
    """Import modules that register handlers (settings.ACTION_HANDLER_MODULES)."""
    for name in module_names:
        importlib.import_module(name)

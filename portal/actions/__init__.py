"""The Action machinery: handlers register a kind; services enqueue and run Actions."""

from portal.actions.registry import (
    ActionHandler,
    ActionWaiting,
    PermanentActionError,
    TransientActionError,
    get_action_handler,
    register_action_handler,
    registered_action_kinds,
)

__all__ = [
    "ActionHandler",
    "ActionWaiting",
    "PermanentActionError",
    "TransientActionError",
    "get_action_handler",
    "register_action_handler",
    "registered_action_kinds",
]

"""Action handlers that exist only for tests.

A test worker imports them through ACTION_HANDLER_MODULES.
"""

from portal.actions import PermanentActionError, TransientActionError, register_action_handler


@register_action_handler(
    "test.flaky", description="Fails transiently until the given attempt", max_attempts=4
)
def flaky(action):
    succeed_on = int(action.parameters.get("succeed_on_attempt", 2))
    if action.attempts < succeed_on:
        raise TransientActionError(f"controller unreachable (attempt {action.attempts})")
    return {"succeeded_on_attempt": action.attempts}


@register_action_handler("test.refused", description="The outside world says no")
def refused(action):
    raise PermanentActionError("Invalid node state specified")


@register_action_handler("test.crash", description="A bug in a handler")
def crash(action):
    raise ZeroDivisionError("division by zero")


@register_action_handler(
    "test.waits", description="Waits for the given number of checks, then succeeds",
    max_attempts=2,
)
def waits(action):
    from portal.actions.registry import ActionWaiting

    checks = action.result["checks"] + 1 if action.result else 1
    if checks <= int(action.parameters.get("checks_waiting", 3)):
        raise ActionWaiting({"checks": checks, "progress": f"waiting ({checks})"},
                            check_again_in=float(action.parameters.get("every", 0)))
    return {"checks": checks, "done": True}


@register_action_handler("test.backend", description="Names the database session it ran in")
def backend(action):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return {"backend_pid": cursor.fetchone()[0]}

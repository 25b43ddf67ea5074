"""`counterpoll`: flex-counter polling switches, for the groups the portal drives.

Follows sonic-utilities counterpoll/main.py: a plain click group (`cli`, no abbreviations,
--help only) whose `queue` and `wredqueue` groups each have `enable`, `disable` and
`interval POLL_INTERVAL` (IntRange(100, 30000)), writing FLEX_COUNTER_TABLE|QUEUE and
FLEX_COUNTER_TABLE|WRED_ECN_QUEUE with ConfigDBConnector.mod_entry; it checks for no root.
`wredqueue` exists from 202505 on (added with sonic-swss #2750's WRED/ECN statistics): a switch
whose image lacks the group answers click's "No such command" with exit status 2.
"""

from __future__ import annotations

from ..database import CONFIG_DB
from .common import (
    Argument,
    ClickCommand,
    ClickGroup,
    CommandResult,
    Context,
    Handler,
    click_command,
    ok,
)

INTERVAL_RANGE = (100, 30000)


def _group_commands(group: str, table_key: str, noun: str, group_help: str) -> ClickGroup:
    path = f"counterpoll {group}"

    def set_status(status: str) -> Handler:
        command = ClickCommand(f"{path} {status}", help_text=f"{status.title()} {noun} query",
                               help_option="--help")

        def body(ctx: Context, values: dict) -> CommandResult:
            ctx.switch.db.hset(CONFIG_DB, f"FLEX_COUNTER_TABLE|{table_key}",
                               {"FLEX_COUNTER_STATUS": status})
            ctx.switch.reconcile()
            return ok()

        return click_command(command, body)

    interval = ClickCommand(f"{path} interval",
                            arguments=(Argument("poll_interval", "POLL_INTERVAL"),),
                            help_text=f"Set {noun} query interval", help_option="--help")

    def set_interval(ctx: Context, values: dict) -> CommandResult:
        raw = values["poll_interval"]
        low, high = INTERVAL_RANGE
        if not raw.lstrip("+-").isdigit():
            raise interval.error(f'Invalid value for "POLL_INTERVAL": {raw} is not a valid '
                                 "integer")
        if not low <= int(raw) <= high:
            raise interval.error(f'Invalid value for "POLL_INTERVAL": {int(raw)} is not in the '
                                 f"valid range of {low} to {high}.")
        ctx.switch.db.hset(CONFIG_DB, f"FLEX_COUNTER_TABLE|{table_key}",
                           {"POLL_INTERVAL": str(int(raw))})
        return ok()

    return ClickGroup(path, {
        "enable": set_status("enable"),
        "disable": set_status("disable"),
        "interval": click_command(interval, set_interval),
    }, help_text=group_help, plain=True)


_QUEUE = _group_commands("queue", "QUEUE", "queue counter", "Queue counter commands")
_WRED_QUEUE = _group_commands("wredqueue", "WRED_ECN_QUEUE", "wred queue counter",
                              "WRED queue counter commands")


def counterpoll(ctx: Context, argv: list[str]) -> CommandResult:
    commands: dict[str, Handler] = {"queue": _QUEUE}
    if ctx.switch.spec.ecn_queue_counters != "unsupported":
        commands["wredqueue"] = _WRED_QUEUE
    group = ClickGroup("counterpoll", commands,
                       help_text="SONiC Static Counter Poll configurations", plain=True)
    return group(ctx, argv)

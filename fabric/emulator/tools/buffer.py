"""`config buffer profile add|set` and `config interface buffer priority-group lossless
add|set`: the dynamic buffer model's CLI (sonic-utilities config/main.py: buffer(),
add_profile, set_profile, update_profile; interface buffer(), add_pg, set_pg,
update_buffer_object, buffer_objects_map_check_legality, adjust_pfc_enable).

Both groups refuse to run unless DEVICE_METADATA|localhost buffer_model is dynamic (ctx.fail:
usage error, exit 2). Messages are the real ones, through click's ctx.fail.
"""

from __future__ import annotations

import re

from ..database import CONFIG_DB, STATE_DB
from .common import (
    Argument,
    ClickCommand,
    ClickError,
    ClickGroup,
    CommandResult,
    Context,
    Option,
    click_command,
    ok,
)

_GROUP_USAGE = "[OPTIONS] COMMAND [ARGS]..."


def _dynamic_only(path: str, verb: str):
    def check(ctx: Context) -> CommandResult | None:
        model = ctx.switch.db.hget(CONFIG_DB, "DEVICE_METADATA|localhost", "buffer_model")
        if model == "dynamic":
            return None
        return ClickError(path, _GROUP_USAGE, f"This command can only be {verb} on a system "
                                              "with dynamic buffer enabled").result()

    return check


def _profile_command(verb: str) -> ClickCommand:
    return ClickCommand(
        f"config buffer profile {verb}",
        (
            Option(("--xon",), "xon", kind="int"),
            Option(("--xoff",), "xoff", kind="int"),
            Option(("--size",), "size", kind="int"),
            Option(("--dynamic_th",), "dynamic_th"),
            Option(("--pool",), "pool"),
        ),
        (Argument("profile", "<profile>"),),
        help_text="Add or modify a buffer profile",
    )


PROFILE_ADD = _profile_command("add")
PROFILE_SET = _profile_command("set")


def _shared_headroom_pool(ctx: Context, command: ClickCommand) -> bool:
    db = ctx.switch.db
    if "xoff" in db.hgetall(CONFIG_DB, "BUFFER_POOL|ingress_lossless_pool"):
        return True
    keys = db.keys(CONFIG_DB, "DEFAULT_LOSSLESS_BUFFER_PARAMETER|*")
    if not keys:
        raise command.error("Dynamic buffer calculation is enabled while no entry found in "
                            "DEFAULT_LOSSLESS_BUFFER_PARAMETER table")
    ratio = db.hget(CONFIG_DB, sorted(keys)[0], "over_subscribe_ratio")
    return bool(ratio) and ratio != "0"


def _update_profile(ctx: Context, command: ClickCommand, values: dict,
                    params: dict[str, str]) -> CommandResult:
    """update_profile(): click's `if xon:` truthiness included (0 counts as not given)."""
    db = ctx.switch.db
    shared_headroom = _shared_headroom_pool(ctx, command)
    pool = values["pool"] or "ingress_lossless_pool"
    params["pool"] = pool
    if not db.hgetall(CONFIG_DB, f"BUFFER_POOL|{pool}"):
        raise command.error(f"Pool {pool} doesn't exist")
    xon, xoff, size = (values[name] or params.get(name) for name in ("xon", "xoff", "size"))
    for name, value in (("xon", xon), ("xoff", xoff), ("size", size)):
        if value:
            params[name] = str(value)
    dynamic_th = values["dynamic_th"]
    if not (xon or xoff or size):
        params["headroom_type"] = "dynamic"
        if not dynamic_th:
            raise command.error("Either size information (xon, xoff, size) or dynamic_th needs "
                                "to be provided")
        params["dynamic_th"] = dynamic_th
    else:
        if not xon:
            raise command.error("Xon is mandatory for non-dynamic profile")
        if not xoff:
            if shared_headroom:
                raise command.error("Shared headroom pool is enabled, xoff is mandatory for "
                                    "non-dynamic profile")
            if not size:
                raise command.error("Neither xoff nor size is provided")
            xoff_number = int(size) - int(xon)
            if xoff_number <= 0:
                raise command.error(f"The xoff must be greater than 0 while we got {xoff_number}"
                                    f" (calculated by: size {size} - xon {xon})")
            params["xoff"] = str(xoff_number)
        if not size:
            params["size"] = str(int(xon) if shared_headroom else int(xon) + int(params["xoff"]))
        if dynamic_th:
            params["dynamic_th"] = dynamic_th
        elif not params.get("dynamic_th"):
            keys = db.keys(CONFIG_DB, "DEFAULT_LOSSLESS_BUFFER_PARAMETER|*")
            if len(keys) != 1:
                raise command.error("Multiple entries are found in "
                                    "DEFAULT_LOSSLESS_BUFFER_PARAMETER while no dynamic_th "
                                    "specified")
            default = db.hget(CONFIG_DB, keys[0], "default_dynamic_th")
            if default is None:
                raise command.error("No dynamic_th defined in DEFAULT_LOSSLESS_BUFFER_PARAMETER")
            params["dynamic_th"] = default
    # ConfigDBConnector.set_entry replaces the whole entry.
    key = f"BUFFER_PROFILE|{values['profile']}"
    db.delete(CONFIG_DB, key)
    db.hset(CONFIG_DB, key, params)
    ctx.switch.reconcile()
    return ok()


def _add_profile(ctx: Context, values: dict) -> CommandResult:
    if ctx.switch.db.hgetall(CONFIG_DB, f"BUFFER_PROFILE|{values['profile']}"):
        raise PROFILE_ADD.error(f"Profile {values['profile']} already exist")
    return _update_profile(ctx, PROFILE_ADD, values, {})


def _set_profile(ctx: Context, values: dict) -> CommandResult:
    entry = ctx.switch.db.hgetall(CONFIG_DB, f"BUFFER_PROFILE|{values['profile']}")
    if not entry:
        raise PROFILE_SET.error(f"Profile {values['profile']} doesn't exist")
    if "xoff" not in entry and values["xoff"]:
        raise PROFILE_SET.error(f"Can't change profile {values['profile']} from dynamically "
                                "calculating headroom to non-dynamically one")
    return _update_profile(ctx, PROFILE_SET, values, dict(entry))


buffer = ClickGroup("config buffer", {
    "profile": ClickGroup("config buffer profile", {
        "add": click_command(PROFILE_ADD, _add_profile),
        "set": click_command(PROFILE_SET, _set_profile),
    }, help_text="Configure buffer profile"),
}, help_text="Configure buffer_profile",
    callback=_dynamic_only("config buffer", "supported"))


def _pg_command(verb: str) -> ClickCommand:
    return ClickCommand(
        f"config interface buffer priority-group lossless {verb}",
        arguments=(Argument("interface_name", "<interface_name>"),
                   Argument("pg_map", "<pg_map>"),
                   Argument("override_profile", "<override_profile>", required=False)),
        help_text="Set lossless PGs for the interface",
    )


PG_ADD = _pg_command("add")
PG_SET = _pg_command("set")


def _pg_bounds(text: str) -> tuple[int | None, int | None]:
    match = re.search(r"^([0-9]+)(-[0-9]+)?$", text)
    if not match:
        return None, None
    lower = int(match.group(1))
    return lower, int(match.group(2)[1:]) if match.group(2) else lower


def _update_pg(command: ClickCommand, add: bool):
    def body(ctx: Context, values: dict) -> CommandResult:
        db = ctx.switch.db
        port, pg_map, override = (values["interface_name"], values["pg_map"],
                                  values["override_profile"])
        if not db.hgetall(CONFIG_DB, f"PORT|{port}"):
            raise command.error(f"Port {port} doesn't exist")
        limits_key = f"BUFFER_MAX_PARAM_TABLE|{port}"
        maximum = db.hget(STATE_DB, limits_key, "max_priority_groups")
        if maximum is None:
            raise command.error(f"Unable to fetch max_priority_groups from {limits_key} in "
                                "STATE_DB")
        lower, upper = _pg_bounds(pg_map)
        # `not lower` as in the original: PG 0 is never a lossless PG here.
        if not upper or not lower or upper < lower or lower < 0 or upper > int(maximum) - 1:
            raise command.error(f"Buffer priority group {pg_map} is not valid.")
        existing = [key.split("|")[2] for key in db.keys(CONFIG_DB, f"BUFFER_PG|{port}|*")]
        if not add:
            if pg_map not in existing:
                raise command.error(f"Buffer priority group {pg_map} doesn't exist")
        else:
            for other in existing:
                low, high = _pg_bounds(other)
                if low is not None and not (high < lower or low > upper):
                    raise command.error(f"Buffer priority group {pg_map} overlaps with existing "
                                        f"priority group {other}")
        if override:
            profile = db.hgetall(CONFIG_DB, f"BUFFER_PROFILE|{override}")
            if not profile:
                raise command.error(f"Profile {override} doesn't exist")
            pool = profile.get("pool")
            if not pool:
                raise command.error(f"Profile {override} is invalid")
            if db.hget(CONFIG_DB, f"BUFFER_POOL|{pool}", "type") != "ingress":
                raise command.error(f"Type of pool {pool} referenced by profile {override} is "
                                    "wrong")
            if "xoff" not in profile and "size" in profile:
                raise command.error(f"Profile {override} doesn't exist or isn't a lossless "
                                    "profile")
        key = f"BUFFER_PG|{port}|{pg_map}"
        db.delete(CONFIG_DB, key)
        db.hset(CONFIG_DB, key, {"profile": override or "NULL"})
        # adjust_pfc_enable: the PG's priorities join pfc_enable (written unsorted from a set;
        # sorted here).
        qos_key = f"PORT_QOS_MAP|{port}"
        text = db.hget(CONFIG_DB, qos_key, "pfc_enable") or ""
        enabled = {int(p) for p in text.split(",") if p.strip().isdigit()}
        enabled |= set(range(int(pg_map[0]), int(pg_map[-1]) + 1))
        db.hset(CONFIG_DB, qos_key, {"pfc_enable": ",".join(str(p) for p in sorted(enabled))})
        ctx.switch.reconcile()
        return ok()

    return body


interface_buffer = ClickGroup("config interface buffer", {
    "priority-group": ClickGroup("config interface buffer priority-group", {
        "lossless": ClickGroup("config interface buffer priority-group lossless", {
            "add": click_command(PG_ADD, _update_pg(PG_ADD, add=True)),
            "set": click_command(PG_SET, _update_pg(PG_SET, add=False)),
        }, help_text="Set or clear lossless PGs"),
    }, help_text="Set or clear buffer configuration"),
}, help_text="Set or clear buffer configuration",
    callback=_dynamic_only("config interface buffer", "executed"))

"""The QoS scripts behind `config`: ecnconfig, mmuconfig and pfc.

Each writes one CONFIG_DB table the way its sonic-utilities script does: ecnconfig edits
WRED_PROFILE thresholds (`-p`) and binds the ECN profile to queues (`-q N on|off`, QUEUE
table, on every port listed in DEVICE_NEIGHBOR), mmuconfig edits BUFFER_PROFILE thresholds,
`pfc config priority` edits PORT_QOS_MAP pfc_enable. `ecnconfig` is also callable directly,
as on a switch, where its writes need root.
"""

from __future__ import annotations

from ..database import CONFIG_DB, Database
from .common import (
    CommandResult,
    Context,
    ToolArgumentParser,
    ToolExit,
    fail,
    lines,
    natural_key,
    ok,
)

# ecnconfig's option -> WRED_PROFILE field, in the order ecnconfig applies them.
WRED_FIELDS = {
    "gmax": "green_max_threshold",
    "gmin": "green_min_threshold",
    "ymax": "yellow_max_threshold",
    "ymin": "yellow_min_threshold",
    "rmax": "red_max_threshold",
    "rmin": "red_min_threshold",
    "gdrop": "green_drop_probability",
    "ydrop": "yellow_drop_probability",
    "rdrop": "red_drop_probability",
}
# The profile `ecnconfig -q N on` binds to queues.
ECN_QUEUE_PROFILE = "AZURE_LOSSLESS"
_NO_ROOT = "Root privileges required for this operation\n"


def _ecn_exception(message: str, stdout: str = "") -> CommandResult:
    return fail(f"Exception caught:  Input arguments error. {message}\n", stdout=stdout)


def set_wred_profile(db: Database, profile: str, given: dict[str, str], verbose: bool
                     ) -> CommandResult:
    """ecnconfig -p PROFILE -gmin ...: validate against the stored profile, then write."""
    if not given:
        return _ecn_exception("Specify at least one threshold parameter to set")
    key = f"WRED_PROFILE|{profile}"
    current = db.hgetall(CONFIG_DB, key)
    if not current:
        return _ecn_exception(f"Invalid WRED profile {profile}")
    merged = {**current, **{WRED_FIELDS[name]: value for name, value in given.items()}}
    problems = _validate_wred(merged)
    if problems:
        return _ecn_exception("Invalid WRED profile parameters", stdout=lines(problems))
    output = []
    for name, field in WRED_FIELDS.items():
        if name not in given:
            continue
        if verbose:
            unit = "%" if "probability" in field else ""
            output.append(f"Setting {field} value to {given[name]}{unit}")
        db.hset(CONFIG_DB, key, {field: given[name]})
    return ok(lines(output))


def _validate_wred(profile: dict[str, str]) -> list[str]:
    problems = []
    for name, field in WRED_FIELDS.items():
        value = profile.get(field)
        if value is None:
            continue
        if "threshold" in field and not value.isdigit():
            problems.append(f"Invalid {name} ({value}). {name} should be an non-negative integer.")
        elif "probability" in field and (not value.isdigit() or int(value) > 100):
            problems.append(
                f"Invalid {name} ({value}). {name} should be an integer between 0 and 100."
            )
    if problems:
        return problems
    for color in "gyr":
        low, high = profile.get(WRED_FIELDS[f"{color}min"]), profile.get(WRED_FIELDS[f"{color}max"])
        if low is not None and high is not None and int(low) > int(high):
            problems.append(
                f"Invalid {color}min ({int(low)}) and {color}max ({int(high)}). "
                f"{color}min should be smaller than {color}max"
            )
    return problems


def _neighbor_ports(db: Database) -> list[str]:
    ports = [key.split("|", 1)[1] for key in db.keys(CONFIG_DB, "DEVICE_NEIGHBOR|*")]
    return sorted(ports, key=natural_key)


def queue_ecn(db: Database, queues: list[str], enable: bool | None, verbose: bool
              ) -> CommandResult:
    """ecnconfig -q 3,4 [on|off]: bind/unbind the ECN profile, or report the binding."""
    ports = _neighbor_ports(db)
    if not ports:
        return _ecn_exception("No active ports detected in table 'DEVICE_NEIGHBOR'")
    if enable is None:
        status = ["ECN status:"]
        for queue in queues:
            bound = db.hget(CONFIG_DB, f"QUEUE|{ports[0]}|{queue}", "wred_profile")
            prefix = f"{','.join(ports)} " if verbose else ""
            status.append(f"{prefix}queue {queue}: {'on' if bound == ECN_QUEUE_PROFILE else 'off'}")
        return ok(lines(status))
    output = []
    for queue in queues:
        if verbose:
            output.append(f"{'Enable' if enable else 'Disable'} ECN on {','.join(ports)} "
                          f"queue {queue}")
        for port in ports:
            key = f"QUEUE|{port}|{queue}"
            if enable:
                db.hset(CONFIG_DB, key, {"wred_profile": ECN_QUEUE_PROFILE})
            else:
                db.hdel(CONFIG_DB, key, "wred_profile")
    return ok(lines(output))


def _ecnconfig_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog="ecnconfig",
                                description="Show and change:\n"
                                            "1) ECN WRED configuration\n"
                                            "2) ECN on/off status on queues")
    parser.add_argument("command", nargs="?", choices=["on", "off"], help="turn on/off ecn")
    parser.add_argument("-l", "--list", action="store_true", help="show ECN WRED configuration")
    parser.add_argument("-p", "--profile", help="specify WRED profile name")
    for name, field in WRED_FIELDS.items():
        parser.add_argument(f"-{name}", dest=name, help=f"set {field.replace('_', ' ')}")
    parser.add_argument("-q", "--queue", help="specify queue index list: 3,4")
    parser.add_argument("-vv", "--verbose", action="store_true", help="Verbose output")
    return parser


def ecnconfig(ctx: Context, argv: list[str]) -> CommandResult:
    try:
        args = _ecnconfig_parser().parse_args(argv)
    except ToolExit as exit_:
        return exit_.result
    db = ctx.switch.db
    if args.profile:
        if not ctx.root:
            return fail(_NO_ROOT)
        given = {name: getattr(args, name) for name in WRED_FIELDS
                 if getattr(args, name) is not None}
        result = set_wred_profile(db, args.profile, given, args.verbose)
    elif args.queue:
        queues = [queue for queue in args.queue.split(",") if queue]
        if not queues:
            return _ecn_exception("Specify at least one queue by index")
        if args.command is not None and not ctx.root:
            return fail(_NO_ROOT)
        enable = None if args.command is None else args.command == "on"
        result = queue_ecn(db, queues, enable, args.verbose)
    else:
        return CommandResult(exit_status=1)
    if result.exit_status == 0:
        ctx.switch.reconcile()
    return result


def set_buffer_threshold(db: Database, profile: str, field: str, value: int) -> CommandResult:
    """mmuconfig -p PROFILE -a N | -s N: dynamic_th or static_th of a BUFFER_PROFILE."""
    entry = db.hgetall(CONFIG_DB, f"BUFFER_PROFILE|{profile}")
    if entry and field == "dynamic_th" and field not in entry:
        return fail(f"{profile} not using dynamic thresholding\n")
    if entry and field == "static_th" and field not in entry:
        return fail(f"{profile} not using static threshold\n")
    # Like mmuconfig (ConfigDBConnector.mod_entry), an unknown profile is created.
    db.hset(CONFIG_DB, f"BUFFER_PROFILE|{profile}", {field: str(value)})
    return ok()


def set_pfc_priority(db: Database, interface: str, priority: str, status: str) -> CommandResult:
    """pfc config priority STATUS INTERFACE PRIORITY: edits an existing PORT_QOS_MAP entry."""
    key = f"PORT_QOS_MAP|{interface}"
    entry = db.hgetall(CONFIG_DB, key)
    if not entry:
        return ok(f"Cannot find interface {interface}\n")
    enabled = [p.strip() for p in entry.get("pfc_enable", "").split(",") if p.strip()]
    if status == "on" and priority in enabled:
        return ok(f"Priority {priority} has already been enabled on {interface}\n")
    if status == "off" and priority not in enabled:
        return ok(f"Priority {priority} is not enabled on {interface}\n")
    if status == "on":
        enabled.append(priority)
    else:
        enabled.remove(priority)
    db.hset(CONFIG_DB, key, {"pfc_enable": ",".join(sorted(enabled))})
    return ok()

"""Read-only tools: `intfutil`, `portstat`, `queuestat` and the `show` commands built on them.

Like the real scripts they read only the databases, so state written with `sonic-db-cli`
shows up here exactly as it would on a switch. Formats follow sonic-utilities: intfutil and
portstat print `table_as_json` (indent 4, sorted keys) with `-j`, queuestat prints
`json_dump` (indent 2, sorted keys), numbers in portstat carry thousands separators.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

from ..database import APPL_DB, CONFIG_DB, COUNTERS_DB, STATE_DB, Database
from ..platform import (
    HARDWARE_REVISION,
    HWSKU,
    MODEL_NUMBER,
    PLATFORM,
)
from .common import (
    Argument,
    ClickCommand,
    ClickGroup,
    CommandResult,
    Context,
    Option,
    ToolArgumentParser,
    ToolExit,
    click_command,
    format_table,
    natural_key,
    ok,
    parse_interface_filter,
)

NA = "N/A"

# -- intfutil ------------------------------------------------------------------------------

STATUS_HEADER = ("Interface", "Lanes", "Speed", "MTU", "FEC", "Alias", "Vlan", "Oper", "Admin",
                 "Type", "Asym PFC")


def table_as_json(table: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    """utilities_common.netstat.table_as_json: rows keyed by their first column."""
    output = {row[0]: {header[i]: row[i] for i in range(1, len(header))} for row in table}
    return json.dumps(output, indent=4, sort_keys=True)


def port_speed_text(speed_mbps: str) -> str:
    """intfutil's port_speed_parse: 800000 -> 800G, 25000 -> 25G, 100 -> 100M."""
    speed = int(speed_mbps)
    if speed < 1000:
        return f"{speed}M"
    if speed % 1000 >= 100:
        return f"{speed / 1000:.1f}G"
    return f"{speed / 1000:.0f}G"


def _front_panel_ports(db: Database) -> set[str]:
    return {key.split("|", 1)[1] for key in db.keys(CONFIG_DB, "PORT|*")}


def interface_status_rows(db: Database, interfaces: list[str]) -> list[tuple[str, ...]]:
    """The rows of `intfutil -c status`, natural-sorted; `interfaces` empty means all."""
    front_panel = _front_panel_ports(db)
    rows = []
    for key in db.keys(APPL_DB, "PORT_TABLE:*"):
        name = key.split(":", 1)[1]
        if name not in front_panel or (interfaces and name not in interfaces):
            continue
        appl = db.hgetall(APPL_DB, key)
        oper_speed = db.hget(STATE_DB, f"PORT_TABLE|{name}", "speed")
        speed = oper_speed if oper_speed and appl.get("oper_status") == "up" else appl.get("speed")
        optics = db.hget(STATE_DB, f"TRANSCEIVER_INFO|{name}", "type")
        rows.append((
            name,
            appl.get("lanes", NA),
            port_speed_text(speed) if speed and speed != NA else NA,
            appl.get("mtu", NA),
            appl.get("fec", NA),
            appl.get("alias", NA),
            "routed",
            appl.get("oper_status", NA),
            appl.get("admin_status", NA),
            optics or NA,
            appl.get("pfc_asym", NA),
        ))
    return sorted(rows, key=lambda row: natural_key(row[0]))


def _intfutil_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog="intfutil", description="Display Interface information")
    parser.add_argument("-c", "--command", type=str, default=None,
                        help="get interface status or description or auto negotiation status "
                             "or tpid")
    parser.add_argument("-i", "--interface", type=str, default=None,
                        help="interface information for specific port: Ethernet0")
    parser.add_argument("-j", "--json", action="store_true", help="Display in JSON format")
    parser.add_argument("-n", "--namespace", default=None,
                        help="Display interfaces for specific namespace")
    parser.add_argument("-d", "--display", default="all",
                        help="Display all interfaces or only external interfaces")
    return parser


def intfutil(ctx: Context, argv: list[str]) -> CommandResult:
    try:
        args = _intfutil_parser().parse_args(argv)
    except ToolExit as exit_:
        return exit_.result
    if args.command != "status":
        # The real script silently ignores sub-commands it does not know; so do we for the
        # ones not emulated (description, autoneg, tpid, ...).
        return ok()
    rows = interface_status_rows(ctx.switch.db, parse_interface_filter(args.interface))
    if args.json:
        return ok(table_as_json(rows, STATUS_HEADER) + "\n")
    return ok(format_table(STATUS_HEADER, rows))


# -- portstat ------------------------------------------------------------------------------

HEADER_STD = ("IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR",
              "TX_OK", "TX_BPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR")
HEADER_ALL = ("IFACE", "STATE", "RX_OK", "RX_BPS", "RX_PPS", "RX_UTIL", "RX_ERR", "RX_DRP",
              "RX_OVR", "TX_OK", "TX_BPS", "TX_PPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR")
HEADER_ERRORS = ("IFACE", "STATE", "RX_ERR", "RX_DRP", "RX_OVR", "TX_ERR", "TX_DRP", "TX_OVR")
HEADER_RATES = ("IFACE", "STATE", "RX_OK", "RX_BPS", "RX_PPS", "RX_UTIL", "TX_OK", "TX_BPS",
                "TX_PPS", "TX_UTIL")

# portstat's counter buckets: a bucket is N/A when any of its SAI counters is missing.
_BUCKETS = {
    "rx_ok": ("SAI_PORT_STAT_IF_IN_UCAST_PKTS", "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS"),
    "rx_err": ("SAI_PORT_STAT_IF_IN_ERRORS",),
    "rx_drop": ("SAI_PORT_STAT_IF_IN_DISCARDS",),
    "rx_ovr": ("SAI_PORT_STAT_ETHER_RX_OVERSIZE_PKTS",),
    "tx_ok": ("SAI_PORT_STAT_IF_OUT_UCAST_PKTS", "SAI_PORT_STAT_IF_OUT_NON_UCAST_PKTS"),
    "tx_err": ("SAI_PORT_STAT_IF_OUT_ERRORS",),
    "tx_drop": ("SAI_PORT_STAT_IF_OUT_DISCARDS",),
    "tx_ovr": ("SAI_PORT_STAT_ETHER_TX_OVERSIZE_PKTS",),
}


def _bucket(counters: dict[str, str], names: tuple[str, ...]) -> str:
    """A bucket's value as ns_diff prints it against an empty cache: 1,234,567."""
    if any(name not in counters for name in names):
        return NA
    return f"{sum(int(float(counters[name])) for name in names):,}"


def format_brate(rate: str | None) -> str:
    """netstat.format_brate: bytes per second in B/s, KB/s or MB/s."""
    if rate is None:
        return NA
    value = float(rate)
    if value > 1000 * 1000 * 10:
        return f"{value / 1000 / 1000:.2f} MB/s"
    if value > 1000 * 10:
        return f"{value / 1000:.2f} KB/s"
    return f"{value:.2f} B/s"


def format_prate(rate: str | None) -> str:
    return NA if rate is None else f"{float(rate):.2f}/s"


def format_util(rate: str | None, speed_mbps: int | None) -> str:
    """netstat.format_util: byte rate as a percentage of the port speed (in Mbps)."""
    if rate is None or not speed_mbps:
        return NA
    return f"{float(rate) / (speed_mbps * 1000 * 1000 / 8.0) * 100:.2f}%"


def port_state(db: Database, port: str) -> str:
    """portstat's STATE column: U up, D admin up but oper down, X disabled."""
    appl = db.hgetall(APPL_DB, f"PORT_TABLE:{port}")
    admin, oper = appl.get("admin_status"), appl.get("oper_status")
    if admin is None or oper is None:
        return NA
    if admin.upper() == "DOWN":
        return "X"
    if admin.upper() == "UP":
        return "U" if oper.upper() == "UP" else "D"
    return NA


def _port_speed(db: Database, port: str) -> int | None:
    speed = db.hget(STATE_DB, f"PORT_TABLE|{port}", "speed")
    if not speed or speed == NA or db.hget(APPL_DB, f"PORT_TABLE:{port}", "oper_status") != "up":
        speed = db.hget(APPL_DB, f"PORT_TABLE:{port}", "speed")
    return int(speed) if speed else None


def portstat_rows(
    db: Database, header: tuple[str, ...], interfaces: list[str]
) -> list[tuple[str, ...]]:
    name_map = db.hgetall(COUNTERS_DB, "COUNTERS_PORT_NAME_MAP")
    rows = []
    for port in sorted(name_map, key=natural_key):
        if interfaces and port not in interfaces:
            continue
        oid = name_map[port]
        counters = db.hgetall(COUNTERS_DB, f"COUNTERS:{oid}")
        rates = db.hgetall(COUNTERS_DB, f"RATES:{oid}")
        speed = _port_speed(db, port)
        values = {
            "STATE": port_state(db, port),
            "RX_BPS": format_brate(rates.get("RX_BPS")),
            "RX_PPS": format_prate(rates.get("RX_PPS")),
            "RX_UTIL": format_util(rates.get("RX_BPS"), speed),
            "TX_BPS": format_brate(rates.get("TX_BPS")),
            "TX_PPS": format_prate(rates.get("TX_PPS")),
            "TX_UTIL": format_util(rates.get("TX_BPS"), speed),
            **{column.upper(): _bucket(counters, names) for column, names in _BUCKETS.items()},
        }
        values["RX_DRP"] = values.pop("RX_DROP")
        values["TX_DRP"] = values.pop("TX_DROP")
        rows.append((port, *(values[column] for column in header[1:])))
    return rows


def _portstat_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog="portstat", description="Display the ports state and counters")
    parser.add_argument("-a", "--all", action="store_true", help="Display all the stats counters")
    parser.add_argument("-e", "--errors", action="store_true", help="Display interface errors")
    parser.add_argument("-j", "--json", action="store_true", help="Display in JSON format")
    parser.add_argument("-R", "--rate", action="store_true", help="Display interface rates")
    parser.add_argument("-i", "--interface", type=str, default=None,
                        help="Display stats for interface lists.")
    parser.add_argument("-s", "--show", default="all",
                        help="Display all interfaces or only external interfaces")
    parser.add_argument("-n", "--namespace", default=None,
                        help="Display interfaces for specific namespace")
    return parser


def portstat(ctx: Context, argv: list[str]) -> CommandResult:
    try:
        args = _portstat_parser().parse_args(argv)
    except ToolExit as exit_:
        return exit_.result
    header = HEADER_STD
    if args.all:
        header = HEADER_ALL
    elif args.errors:
        header = HEADER_ERRORS
    elif args.rate:
        header = HEADER_RATES
    rows = portstat_rows(ctx.switch.db, header, parse_interface_filter(args.interface))
    if not rows:
        return ok()
    if args.json:
        return ok(table_as_json(rows, header) + "\n")
    return ok(format_table(header, rows))


# -- queuestat -----------------------------------------------------------------------------

QUEUE_HEADER = ("Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes")
_QUEUE_TYPES = {
    "SAI_QUEUE_TYPE_UNICAST": "UC",
    "SAI_QUEUE_TYPE_MULTICAST": "MC",
    "SAI_QUEUE_TYPE_ALL": "ALL",
}
_QUEUE_FIELDS = (
    ("totalpacket", "SAI_QUEUE_STAT_PACKETS"),
    ("totalbytes", "SAI_QUEUE_STAT_BYTES"),
    ("droppacket", "SAI_QUEUE_STAT_DROPPED_PACKETS"),
    ("dropbytes", "SAI_QUEUE_STAT_DROPPED_BYTES"),
)

QUEUESTAT = ClickCommand(
    path="queuestat",
    options=(
        Option(("-p", "--port"), "port"),
        Option(("-j", "--json_opt"), "json", kind="flag"),
        Option(("-n", "--namespace"), "namespace"),
    ),
    help_text="Show queue counters.",
)


def _queue_rows(db: Database, port: str, queue_map: dict[str, str], types: dict[str, str],
                indexes: dict[str, str]) -> list[tuple[str, ...]]:
    rows = []
    for queue in sorted(queue_map, key=natural_key):
        oid = queue_map[queue]
        kind = _QUEUE_TYPES.get(types.get(oid, ""), "UC")
        index = indexes.get(oid, NA)
        counters = db.hgetall(COUNTERS_DB, f"COUNTERS:{oid}")
        values = [str(int(counters[name])) if counters.get(name) else NA
                  for _, name in _QUEUE_FIELDS]
        rows.append((port, f"{kind}{index}", *values))
    return rows


def _queuestat(ctx: Context, values: dict) -> CommandResult:
    db = ctx.switch.db
    port_map = db.hgetall(COUNTERS_DB, "COUNTERS_PORT_NAME_MAP")
    ports_by_oid = {oid: port for port, oid in port_map.items()}
    queues: dict[str, dict[str, str]] = {port: {} for port in port_map}
    queue_ports = db.hgetall(COUNTERS_DB, "COUNTERS_QUEUE_PORT_MAP")
    for queue, oid in db.hgetall(COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP").items():
        port = ports_by_oid.get(queue_ports.get(oid, ""))
        if port is not None:
            queues[port][queue] = oid
    selected = sorted(port_map, key=natural_key)
    if values["port"] is not None:
        if values["port"] not in queues:
            return CommandResult(stdout=f"Port doesn't exist! {values['port']}\n", exit_status=1)
        selected = [values["port"]]
    types = db.hgetall(COUNTERS_DB, "COUNTERS_QUEUE_TYPE_MAP")
    indexes = db.hgetall(COUNTERS_DB, "COUNTERS_QUEUE_INDEX_MAP")
    tables = {port: _queue_rows(db, port, queues[port], types, indexes) for port in selected}
    if values["json"]:
        now = datetime.now().isoformat()
        output: dict[str, dict[str, object]] = {}
        for port, rows in tables.items():
            output[port] = {"time": now}
            for row in rows:
                output[port][row[1]] = dict(zip(
                    ("totalpacket", "totalbytes", "droppacket", "dropbytes"), row[2:], strict=True
                ))
        return ok(json.dumps(output, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    return ok("".join(format_table(QUEUE_HEADER, rows) + "\n" for rows in tables.values()))


queuestat = click_command(QUEUESTAT, _queuestat)

# -- show ----------------------------------------------------------------------------------


# syncd's container per ASIC (sonic-buildimage platform/<asic>/docker-syncd-<short>.mk).
_SYNCD_IMAGES = {"broadcom": "docker-syncd-brcm", "mellanox": "docker-syncd-mlnx"}


def _show_version(ctx: Context, values: dict) -> CommandResult:
    """sonic-utilities show/main.py `version`: platform and HwSKU from CONFIG_DB
    DEVICE_METADATA (sonic_py_common device_info.get_platform_info), build, OS, kernel and
    ASIC from sonic_version.yml (here the switch's version_info), serial, model and revision
    from STATE_DB `CHASSIS_INFO|chassis 1` (show/platform.py get_chassis_info). What neither
    holds prints N/A, as show version does (`version_info.get('build_version', 'N/A')`,
    get_chassis_info's "N/A" fallback): a switch served from a dump invents nothing; the
    built-in one falls back to its own platform's facts."""
    switch = ctx.switch
    builtin = switch.dump is None
    metadata = switch.db.hgetall("CONFIG_DB", "DEVICE_METADATA|localhost")
    chassis = switch.db.hgetall("STATE_DB", "CHASSIS_INFO|chassis 1")
    version = switch.version_info

    def fact(fields: dict[str, str], name: str, builtin_value: str) -> str:
        return fields.get(name, builtin_value if builtin else NA)

    build_version = version.get("build_version", NA)
    asic = version.get("asic_type", NA)
    now = datetime.now()
    # procps `uptime`, which show version prints stripped.
    days, rest = divmod(int(switch.uptime()), 86400)
    hours, minutes = divmod(rest // 60, 60)
    since = f"{days} day{'s' if days != 1 else ''}, " if days else ""
    since += f"{hours:2d}:{minutes:02d}," if hours else f"{minutes} min,"
    uptime_line = f"{now:%H:%M:%S} up {since}  1 user,  load average: 0.52, 0.61, 0.66"
    images = [
        ("docker-orchagent", "f1c2a9d4e8b7", "330MB"),
        ("docker-fpm-frr", "9d8e7f6a5b4c", "347MB"),
        ("docker-lldp", "4b5c6d7e8f9a", "299MB"),
        *([(_SYNCD_IMAGES[asic], "1a2b3c4d5e6f", "654MB")] if asic in _SYNCD_IMAGES else []),
        ("docker-database", "7e6d5c4b3a29", "301MB"),
    ]
    tags = ("latest",) if build_version == NA else (build_version, "latest")
    docker = [f"{'REPOSITORY':<30}{'TAG':<20}{'IMAGE ID':<20}SIZE"]
    for repository, image_id, size in images:
        for tag in tags:
            docker.append(f"{repository:<30}{tag:<20}{image_id:<20}{size}")
    text = (
        f"\nSONiC Software Version: SONiC.{build_version}\n"
        f"SONiC OS Version: {version.get('sonic_os_version', NA)}\n"
        f"Distribution: Debian {version.get('debian_version', NA)}\n"
        f"Kernel: {version.get('kernel_version', NA)}\n"
        f"Build commit: {version.get('commit_id', NA)}\n"
        f"Build date: {version.get('build_date', NA)}\n"
        f"Built by: {version.get('built_by', NA)}\n"
        f"\nPlatform: {fact(metadata, 'platform', PLATFORM)}\n"
        f"HwSKU: {fact(metadata, 'hwsku', HWSKU)}\n"
        f"ASIC: {asic}\n"
        "ASIC Count: 1\n"
        f"Serial Number: {fact(chassis, 'serial', switch.serial_number)}\n"
        f"Model Number: {fact(chassis, 'model', MODEL_NUMBER)}\n"
        f"Hardware Revision: {fact(chassis, 'revision', HARDWARE_REVISION)}\n"
        f"Uptime: {uptime_line}\n"
        f"Date: {now:%a %d %b %Y %X}\n"
        "\nDocker images:\n" + "\n".join(docker) + "\n\n"
    )
    return ok(text)


_NAMESPACE_OPTIONS = (Option(("-n", "--namespace"), "namespace"),
                      Option(("-d", "--display"), "display"),
                      Option(("--verbose",), "verbose", kind="flag"))


def _counters_command(path: str, extra: tuple[Option, ...] = ()) -> ClickCommand:
    return ClickCommand(
        path=path,
        options=(*_NAMESPACE_OPTIONS, Option(("-j", "--json"), "json", kind="flag"), *extra),
        help_text="Show interface counters",
    )


def _run_portstat(flags: list[str]) -> Callable[[Context, dict], CommandResult]:
    def body(ctx: Context, values: dict) -> CommandResult:
        argv = list(flags)
        if values.get("printall"):
            argv.append("-a")
        if values.get("interface"):
            argv += ["-i", values["interface"]]
        if values["json"]:
            argv.append("-j")
        return portstat(ctx, argv)

    return body


_COUNTERS = click_command(
    _counters_command("show interfaces counters", (
        Option(("-i", "--interface"), "interface"),
        Option(("-a", "--printall"), "printall", kind="flag"),
    )),
    _run_portstat([]),
)


_COUNTER_SUBCOMMANDS = ClickGroup("show interfaces counters", {
    "errors": click_command(_counters_command("show interfaces counters errors"),
                            _run_portstat(["-e"])),
    "rates": click_command(_counters_command("show interfaces counters rates"),
                           _run_portstat(["-R"])),
})


def _interface_counters(ctx: Context, argv: list[str]) -> CommandResult:
    """`show interfaces counters` is a group that also runs without a subcommand."""
    if argv and not argv[0].startswith("-"):
        return _COUNTER_SUBCOMMANDS(ctx, argv)
    return _COUNTERS(ctx, argv)


def _interface_status(ctx: Context, values: dict) -> CommandResult:
    argv = ["-c", "status"]
    if values["interfacename"]:
        argv += ["-i", values["interfacename"]]
    return intfutil(ctx, argv)


def _queue_counters(ctx: Context, values: dict) -> CommandResult:
    argv = ["-p", values["interfacename"]] if values["interfacename"] else []
    if values["json"]:
        argv.append("-j")
    return queuestat(ctx, argv)


show = ClickGroup("show", {
    "version": click_command(
        ClickCommand("show version", (Option(("--verbose",), "verbose", kind="flag"),),
                     help_text="Show version information"),
        _show_version,
    ),
    "interfaces": ClickGroup("show interfaces", {
        "status": click_command(
            ClickCommand("show interfaces status", _NAMESPACE_OPTIONS,
                         (Argument("interfacename", "[INTERFACENAME]", required=False),),
                         help_text="Show Interface status information"),
            _interface_status,
        ),
        "counters": _interface_counters,
    }, help_text="Show details of the network interfaces"),
    "queue": ClickGroup("show queue", {
        "counters": click_command(
            ClickCommand("show queue counters",
                         (*_NAMESPACE_OPTIONS, Option(("-j", "--json"), "json", kind="flag")),
                         (Argument("interfacename", "[INTERFACE_NAME]", required=False),),
                         help_text="Show queue counters"),
            _queue_counters,
        ),
    }, help_text="Show details of the queues"),
}, help_text="SONiC command line - 'show' command")

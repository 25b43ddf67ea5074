"""Table 15 on a SONiC switch by reference: which buffer and WRED profiles the lossless priority
groups and queues actually use, the commands that set them, and the read-back that proves it.

A switch's lossless profiles need not be called `pg_lossless_*`: the traditional buffer manager
names them `pg_lossless_<speed>_<cable>_profile` (sonic-swss cfgmgr/buffermgr.cpp,
BufferMgr::doSpeedUpdateTask), many platform templates bind every lossless PG to
`ingress_lossless_profile` (sonic-buildimage device/*/buffers_defaults_t*.j2,
`"{{ port_names }}|3-4": {"profile": "ingress_lossless_profile"}`), and with the dynamic buffer
model a PG whose CONFIG_DB profile is `NULL` gets a profile that buffermgrd calculates and
writes to APPL_DB only (cfgmgr/buffermgrdyn.cpp, getDynamicProfileName and
updateBufferObjectToDb: `BUFFER_PG_TABLE:<port>:3-4` -> `BUFFER_PROFILE_TABLE:<name>`); such a
PG gets a static profile with Table 15's values instead (`_static_replacements`).
So the profiles to change are found through `BUFFER_PG|<port>|<pgs>` -> `profile` and
`QUEUE|<port>|<queue>` -> `wred_profile`, never by name.

Pure logic over table dumps (`{full key: hash}` as sonic-db-cli/sonic-db-dump show them): the
drivers read the tables and run the commands.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabric.drivers.base import FabricError, QosProfile

Hash = Mapping[str, str]
Tables = Mapping[str, Hash]

CONFIG_TABLES = ("PORT_QOS_MAP", "QUEUE", "WRED_PROFILE", "BUFFER_PG", "BUFFER_PROFILE",
                 "BUFFER_POOL", "DEVICE_METADATA")
APPL_TABLES = ("BUFFER_PG_TABLE", "BUFFER_PROFILE_TABLE")
LOSSLESS_POOL = "ingress_lossless_pool"
# ecnconfig's colours; each takes the same thresholds and probability.
_COLOURS = {"g": "green", "y": "yellow", "r": "red"}


class QosNotApplied(FabricError):
    """The switch's QoS does not hold the profile: what did not match, one line each."""

    def __init__(self, hostname: str, problems: Sequence[str], changed: bool):
        when = "after applying" if changed else "nothing was changed"
        # The Action's error names the switch (fabric/action_handlers.py _talking_to).
        super().__init__(f"QoS profile not in effect ({when}): " + "; ".join(problems))
        self.hostname = hostname
        self.problems = list(problems)
        self.changed = changed


@dataclass(frozen=True)
class BufferBinding:
    """One port's lossless priority group and the buffer profile it uses."""

    port: str
    priority_groups: str
    profile: str
    # Headroom calculated by buffermgrd (dynamic model, CONFIG_DB profile NULL): the profile
    # exists in APPL_DB only and is recalculated on every port change.
    calculated: bool = False


@dataclass
class QosPlan:
    """What applying a profile takes on one switch, worked out before anything is written."""

    wred_profiles: list[str] = field(default_factory=list)
    buffer_profiles: list[str] = field(default_factory=list)
    bindings: list[BufferBinding] = field(default_factory=list)
    queue_commands: list[str] = field(default_factory=list)
    buffer_commands: list[str] = field(default_factory=list)
    # Dynamic model: static profiles to create and bind before PFC is set (binding a lossless
    # PG turns PFC on for its priorities: config/main.py adjust_pfc_enable).
    binding_commands: list[str] = field(default_factory=list)
    ecn_commands: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _ids(text: str) -> range:
    """`3-4` -> 3, 4; `3` -> 3; anything else -> nothing."""
    first, _, last = text.partition("-")
    if not first.isdigit() or (last and not last.isdigit()):
        return range(0)
    return range(int(first), int(last or first) + 1)


def profile_reference(value: str) -> str:
    """A BUFFER_PG `profile` value as a profile name; before 202012 references were written
    `[BUFFER_PROFILE|name]` (CONFIG_DB) or `[BUFFER_PROFILE_TABLE:name]` (APPL_DB)."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
        for prefix in ("BUFFER_PROFILE_TABLE:", "BUFFER_PROFILE|"):
            if value.startswith(prefix):
                return value[len(prefix):]
    return value


def _entries_by_port(tables: Tables, table: str, separator: str
                     ) -> dict[str, list[tuple[str, range, Hash]]]:
    """`TABLE<sep>ports<sep>ids` entries per port; sonic-cfggen templates may list several
    ports in one key (`BUFFER_PG|Ethernet0,Ethernet8|3-4`)."""
    found: dict[str, list[tuple[str, range, Hash]]] = {}
    prefix = table + separator
    for key, value in tables.items():
        if not key.startswith(prefix):
            continue
        ports, _, ids = key[len(prefix):].rpartition(separator)
        for port in ports.split(","):
            found.setdefault(port, []).append((ids, _ids(ids), value))
    return found


def _table(tables: Tables, table: str, separator: str = "|") -> dict[str, Hash]:
    prefix = table + separator
    return {key[len(prefix):]: value for key, value in tables.items() if key.startswith(prefix)}


def is_dynamic_buffer_model(config: Tables) -> bool:
    # config/main.py is_dynamic_buffer_enabled: DEVICE_METADATA|localhost buffer_model.
    return config.get("DEVICE_METADATA|localhost", {}).get("buffer_model") == "dynamic"


def lossless_bindings(config: Tables, appl: Tables, ports: Iterable[str],
                      priorities: Iterable[int]) -> tuple[list[BufferBinding], list[str]]:
    """The buffer profile behind each port's PGs that carry `priorities`, and the problems
    (a lossless priority with no priority group, a profile that does not exist)."""
    config_pgs = _entries_by_port(config, "BUFFER_PG", "|")
    appl_pgs = _entries_by_port(appl, "BUFFER_PG_TABLE", ":")
    config_profiles = _table(config, "BUFFER_PROFILE")
    appl_profiles = _table(appl, "BUFFER_PROFILE_TABLE", ":")
    dynamic = is_dynamic_buffer_model(config)
    bindings: list[BufferBinding] = []
    problems: list[str] = []
    wanted = sorted(set(priorities))
    for port in ports:
        seen: set[str] = set()
        for priority in wanted:
            entry = next(((ids, value) for ids, span, value in config_pgs.get(port, ())
                          if priority in span), None)
            if entry is None:
                problems.append(f"{port}: no BUFFER_PG holds lossless priority {priority}")
                continue
            ids, value = entry
            if ids in seen:
                continue
            seen.add(ids)
            name = profile_reference(value.get("profile", "NULL") or "NULL")
            if name == "NULL" and dynamic:
                applied = next((profile_reference(v.get("profile", "")) for i, _, v in
                                appl_pgs.get(port, ()) if i == ids), "")
                bindings.append(BufferBinding(port, ids, applied, calculated=True))
                continue
            if name not in config_profiles:
                where = " (only in APPL_DB)" if name in appl_profiles else ""
                problems.append(f"{port}|{ids}: bound to buffer profile {name!r}, which CONFIG_DB "
                                f"BUFFER_PROFILE does not hold{where}")
                continue
            bindings.append(BufferBinding(port, ids, name))
    return bindings, problems


def wred_bindings(config: Tables, ports: Iterable[str], queues: Iterable[int]
                  ) -> dict[tuple[str, int], str]:
    """(port, queue) -> the WRED profile `QUEUE|<port>|<queue>` names ("" when none)."""
    by_port = _entries_by_port(config, "QUEUE", "|")
    result: dict[tuple[str, int], str] = {}
    for port in ports:
        for queue in queues:
            result[(port, queue)] = next(
                (value.get("wred_profile", "") for _, span, value in by_port.get(port, ())
                 if queue in span and value.get("wred_profile")), "")
    return result


def alpha_exponent(alpha: float) -> int:
    """SONiC's dynamic_th is log2 of the shared-buffer alpha (alpha 1 -> 0), -8..8."""
    exponent = math.log2(alpha) if alpha > 0 else float("nan")
    if not exponent.is_integer() or not -8 <= exponent <= 8:
        raise ValueError(f"shared buffer alpha {alpha} is not a power of two between 1/256 "
                         "and 256")
    return int(exponent)


def _wred_fields(profile: QosProfile) -> dict[str, str]:
    fields = {"ecn": "ecn_all"}
    for colour in _COLOURS.values():
        fields[f"{colour}_min_threshold"] = str(profile.ecn_min_bytes)
        fields[f"{colour}_max_threshold"] = str(profile.ecn_max_bytes)
        fields[f"{colour}_drop_probability"] = str(profile.ecn_mark_probability_percent)
        fields[f"wred_{colour}_enable"] = "true"
    return fields


def _buffer_fields(profile: QosProfile) -> dict[str, str]:
    return {"xoff": str(profile.pfc_xoff_bytes), "xon_offset": str(profile.pfc_xon_offset_bytes),
            "dynamic_th": str(alpha_exponent(profile.shared_buffer_alpha))}


def plan_qos(profile: QosProfile, config: Tables, appl: Tables, ports: Sequence[str],
             default_wred_profile: str) -> QosPlan:
    """The commands that put `profile` on `ports`, or the problems that stop it.

    A lossless queue already bound to a WRED profile keeps that binding and the profile gets
    Table 15's thresholds; an unbound queue is bound to `default_wred_profile`.
    """
    plan = QosPlan()
    queues = sorted(set(profile.pfc_priorities))
    wred = wred_bindings(config, ports, queues)
    wred_profiles = _table(config, "WRED_PROFILE")
    names = sorted({name or default_wred_profile for name in wred.values()})
    for name in names:
        if name not in wred_profiles:
            users = sorted({f"{port}|{queue}" for (port, queue), bound in wred.items()
                            if (bound or default_wred_profile) == name})
            plan.problems.append(f"WRED profile {name!r} (queues {', '.join(users[:4])}"
                                 f"{' ...' if len(users) > 4 else ''}) is not in CONFIG_DB "
                                 "WRED_PROFILE")
    plan.wred_profiles = names
    for name in names:
        # config/main.py ecn() runs `ecnconfig -p <profile> -gmin ...` (scripts/ecnconfig,
        # EcnConfig.set_wred_threshold/set_wred_prob); ecnconfig cannot set the ECN mode or the
        # colour enables, so those go straight to CONFIG_DB.
        options = " ".join(
            f"-{c}min {profile.ecn_min_bytes} -{c}max {profile.ecn_max_bytes} "
            f"-{c}drop {profile.ecn_mark_probability_percent}" for c in _COLOURS)
        plan.ecn_commands.append(f"sudo config ecn -profile {name} {options}")
        plan.ecn_commands.append(
            f'sudo sonic-db-cli CONFIG_DB HSET "WRED_PROFILE|{name}" ecn ecn_all '
            "wred_green_enable true wred_yellow_enable true wred_red_enable true")
    for (port, queue), bound in wred.items():
        if not bound:
            plan.queue_commands.append(
                f'sudo sonic-db-cli CONFIG_DB HSET "QUEUE|{port}|{queue}" '
                f"wred_profile {default_wred_profile}")

    bindings, problems = lossless_bindings(config, appl, ports, profile.pfc_priorities)
    plan.bindings = bindings
    plan.problems += problems
    static = _static_replacements(profile, bindings, config, appl, plan)
    plan.buffer_profiles = sorted({b.profile for b in bindings if not b.calculated}
                                  | set(static.values()))
    plan.buffer_commands.append(f'sudo sonic-db-cli CONFIG_DB HSET "BUFFER_POOL|{LOSSLESS_POOL}" '
                                f"xoff {profile.headroom_bytes}")
    dynamic_th = alpha_exponent(profile.shared_buffer_alpha)
    for name in plan.buffer_profiles:
        # mmuconfig sets only dynamic_th/static_th (scripts/mmuconfig, MmuConfig.set); xoff and
        # xon_offset have no CLI on the traditional model.
        plan.buffer_commands.append(
            f'sudo sonic-db-cli CONFIG_DB HSET "BUFFER_PROFILE|{name}" '
            f"xoff {profile.pfc_xoff_bytes} xon_offset {profile.pfc_xon_offset_bytes}")
        plan.buffer_commands.append(f"sudo config mmu -p {name} -a {dynamic_th}")
    return plan


def static_profile_name(profile: QosProfile, calculated: str) -> str:
    """The static profile that replaces one buffermgrd calculated for the dynamic model."""
    return f"{profile.name.lower()}_{calculated}"


def _static_replacements(profile: QosProfile, bindings: list[BufferBinding], config: Tables,
                         appl: Tables, plan: QosPlan) -> dict[str, str]:
    """Dynamic model: a PG whose headroom buffermgrd calculates cannot take a fixed xoff, so
    each calculated profile gets a static copy (its xon, Table 15's xoff and alpha) created
    with `config buffer profile add|set` and bound with `config interface buffer
    priority-group lossless set` (sonic-utilities config/main.py: add_profile/set_profile,
    update_profile; set_pg, update_buffer_object)."""
    replacements: dict[str, str] = {}
    dynamic_th = alpha_exponent(profile.shared_buffer_alpha)
    for binding in bindings:
        if not binding.calculated:
            continue
        calculated = appl.get(f"BUFFER_PROFILE_TABLE:{binding.profile}", {})
        if not binding.profile or not calculated.get("xon"):
            plan.problems.append(
                f"{binding.port}|{binding.priority_groups}: headroom is calculated by buffermgrd "
                f"and APPL_DB has no profile for it yet ({binding.profile or 'no BUFFER_PG_TABLE'}"
                " entry); retry once buffermgrd has run")
            continue
        name = static_profile_name(profile, binding.profile)
        if binding.profile not in replacements:
            replacements[binding.profile] = name
            if f"BUFFER_PROFILE|{name}" in config:
                plan.binding_commands.append(
                    f"sudo config buffer profile set {name} --xoff {profile.pfc_xoff_bytes} "
                    f"--dynamic_th {dynamic_th}")
            else:
                plan.binding_commands.append(
                    f"sudo config buffer profile add {name} --xon {calculated['xon']} "
                    f"--xoff {profile.pfc_xoff_bytes} --dynamic_th {dynamic_th}")
        plan.binding_commands.append(
            "sudo config interface buffer priority-group lossless set "
            f"{binding.port} {binding.priority_groups} {name}")
    return replacements


def verify_qos(profile: QosProfile, plan: QosPlan, config: Tables, ports: Sequence[str],
               default_wred_profile: str) -> list[str]:
    """What CONFIG_DB, read back after applying, does not hold of `profile`."""
    problems: list[str] = []
    queues = sorted(set(profile.pfc_priorities))
    for (port, queue), bound in wred_bindings(config, ports, queues).items():
        if not bound:
            problems.append(f"QUEUE|{port}|{queue} has no wred_profile")
    wanted_wred = _wred_fields(profile)
    for name in plan.wred_profiles:
        problems += _differences(f"WRED_PROFILE|{name}", config.get(f"WRED_PROFILE|{name}", {}),
                                 wanted_wred)
    wanted_pfc = {str(priority) for priority in profile.pfc_priorities}
    for port in ports:
        text = config.get(f"PORT_QOS_MAP|{port}", {}).get("pfc_enable", "")
        current = {p.strip() for p in text.split(",") if p.strip()}
        if current != wanted_pfc:
            problems.append(f"PORT_QOS_MAP|{port} pfc_enable is {text!r}, not "
                            f"{','.join(sorted(wanted_pfc))!r}")
    wanted_buffer = _buffer_fields(profile)
    for name in plan.buffer_profiles:
        problems += _differences(f"BUFFER_PROFILE|{name}",
                                 config.get(f"BUFFER_PROFILE|{name}", {}), wanted_buffer)
    bindings, binding_problems = lossless_bindings(config, {}, ports, profile.pfc_priorities)
    problems += binding_problems
    problems += [f"{b.port}|{b.priority_groups}: headroom is still calculated by buffermgrd"
                 for b in bindings if b.calculated]
    moved = sorted({f"{b.port}|{b.priority_groups} -> {b.profile}" for b in bindings
                    if b.profile not in plan.buffer_profiles and not b.calculated})
    if moved:
        problems.append("priority groups bound to a profile that was not set: " + ", ".join(moved))
    pool = config.get(f"BUFFER_POOL|{LOSSLESS_POOL}", {})
    problems += _differences(f"BUFFER_POOL|{LOSSLESS_POOL}", pool,
                             {"xoff": str(profile.headroom_bytes)})
    return problems


def _differences(key: str, current: Hash, wanted: Mapping[str, str]) -> list[str]:
    if not current:
        return [f"{key} does not exist"]
    return [f"{key} {name} is {current.get(name)!r}, not {value!r}"
            for name, value in wanted.items() if current.get(name) != value]


TableReader = Callable[[str, Sequence[str]], dict[str, dict[str, str]]]


def read_qos_tables(read: TableReader) -> tuple[Tables, Tables]:
    """CONFIG_DB and APPL_DB QoS tables through a driver's `read(database, tables)`."""
    return read("CONFIG_DB", CONFIG_TABLES), read("APPL_DB", APPL_TABLES)

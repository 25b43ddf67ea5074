"""The SONiC driver: the switch's own CLI over SSH (asyncssh), for real switches and the emulator.

Reads go through `sonic-db-dump -n <DB> -k '<pattern>'` (JSON, see `_dump_command`) and
`vtysh ... json`, never through text tables nor `sonic-db-cli HGETALL`, whose reply formatter
prints values unescaped (swss-common `common/redisreply.cpp`, `formatDictReply`), so one
apostrophe, newline or backslash in a port description or an LLDP system description would
make the line unreadable. Several dumps share one SSH round trip (`_dump_many`): `ports()`
and `counters()` take one each, a poll (`ports_and_counters()`) one for both. Port state is
read as intfutil reads it (fabric.drivers.sonic_ports) and an absent counter is None, as
portstat's N/A (fabric.drivers.sonic_counters). Writes are the commands an operator types:
`sudo config interface shutdown|startup`, `sudo config ecn`, `sudo config interface pfc
priority`, `sudo config mmu`, `sudo config save -y`; fields those commands cannot set (the WRED
profile's ECN mode, queue bindings, PFC headroom) are written with `sudo sonic-db-cli CONFIG_DB
HSET`, which the switch's daemons pick up like any CONFIG_DB change.

Connections: one per switch per worker process, kept in a small cache and reused by every
driver object for that switch; a connection the switch dropped is opened again once. asyncssh
runs on an event loop in a private daemon thread (one per process, re-created after a fork), so
Celery tasks and views call the driver synchronously.

Host keys: checked against `settings.FABRIC_KNOWN_HOSTS_FILE` (OpenSSH format). A switch with
`trust_on_first_use` (labs only) whose address the file does not know yet is accepted once and
its key appended to the file; after that its key is checked like any other.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import re
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import TimeoutError as FutureTimeoutError
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import asyncssh
from django.conf import settings

from fabric.credentials import load_credentials
from fabric.drivers.base import (
    BgpNeighbor,
    CounterSnapshot,
    FabricDriver,
    FabricError,
    LldpNeighbor,
    PortStatus,
    QosProfile,
    SwitchCommandFailed,
    SwitchTarget,
    SwitchUnreachable,
    SwitchVersion,
)
from fabric.drivers.sonic_counters import counter_snapshot
from fabric.drivers.sonic_flex_counters import (
    CAPABILITY_KEY,
    ENABLE_COMMAND,
    FLEX_COUNTER_KEY,
    ecn_counter_state,
)
from fabric.drivers.sonic_ports import natural_key, port_statuses
from fabric.drivers.sonic_qos import QosNotApplied, plan_qos, read_qos_tables, verify_qos

logger = logging.getLogger(__name__)

T = TypeVar("T")
Hash = dict[str, str]

# Extra seconds the calling thread waits beyond the SSH timeouts before giving up on the loop.
_CALL_SLACK_SECONDS = 5.0
# Writes per SSH round trip (see _run_chain).
WRITE_BATCH_SIZE = 16
# Dumps per round trip for raw key reads (db_hgetall_many): keeps one command line well inside
# what a switch's shell accepts.
READ_BATCH_SIZE = 128
# Printed after each dump with its exit status. sonic-db-dump's JSON ends without a newline and
# never contains a raw `@` outside a string literal, and the reader decodes the JSON before it
# looks for the marker, so a value that holds the marker's text cannot end a section early.
_DUMP_END = "@@sonic-db-dump-end"
_DUMP_END_LINE = re.compile(re.escape(_DUMP_END) + r" (\d+)\n")
_PORT_MARKERS = ("PortConfigDone", "PortInitDone")
# What intfutil reads for `show interfaces status` (see fabric.drivers.sonic_ports).
_PORT_DUMPS = [("CONFIG_DB", "PORT|*"), ("APPL_DB", "PORT_TABLE:*"), ("STATE_DB", "PORT_TABLE|*")]
# Name maps and every COUNTERS hash (ports' and queues'): one KEYS pattern covers both.
_COUNTER_DUMPS = [
    ("COUNTERS_DB", "COUNTERS_PORT_NAME_MAP"),
    ("COUNTERS_DB", "COUNTERS_QUEUE_NAME_MAP"),
    ("COUNTERS_DB", "COUNTERS:oid:*"),
    # Whether the switch collects ECN-marked queue counters (sonic_flex_counters.py).
    ("CONFIG_DB", FLEX_COUNTER_KEY),
    ("STATE_DB", CAPABILITY_KEY),
]


class SwitchHostKeyRejected(FabricError):
    """The switch's SSH host key is unknown or does not match the known_hosts file."""


class SwitchAuthenticationFailed(FabricError):
    """The switch refused the login from the credentials store."""


# -- the private event loop --------------------------------------------------------------------


class _LoopThread:
    """An asyncio loop running forever in a daemon thread; coroutines are submitted to it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.connections: dict[tuple, asyncssh.SSHClientConnection] = {}
        self.connect_locks: dict[tuple, asyncio.Lock] = {}
        self.thread = threading.Thread(target=self.loop.run_forever, name="fabric-ssh",
                                       daemon=True)
        self.thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except FutureTimeoutError:
            future.cancel()
            raise SwitchUnreachable(f"no answer within {timeout:.0f}s") from None


_loop_lock = threading.Lock()
_loop_thread: _LoopThread | None = None
_loop_pid: int | None = None


def _loop() -> _LoopThread:
    """This process's loop thread; a forked worker child starts its own (threads do not fork)."""
    global _loop_thread, _loop_pid
    with _loop_lock:
        if _loop_thread is None or _loop_pid != os.getpid():
            _loop_thread = _LoopThread()
            _loop_pid = os.getpid()
        return _loop_thread


# -- the driver ----------------------------------------------------------------------------------


class SonicSshDriver(FabricDriver):
    """One SONiC switch over SSH. Every method may raise SwitchUnreachable (retry later),
    SwitchCommandFailed (the switch refused; its own error text is in `output`),
    SwitchHostKeyRejected, SwitchAuthenticationFailed or CredentialsUnavailable."""

    def __init__(self, target: SwitchTarget):
        super().__init__(target)
        self.connect_timeout = float(settings.FABRIC_SSH_CONNECT_TIMEOUT)
        self.command_timeout = float(settings.FABRIC_SSH_COMMAND_TIMEOUT)
        self.wred_profile = settings.FABRIC_WRED_PROFILE
        self.counter_queues = tuple(int(queue) for queue in settings.FABRIC_COUNTER_QUEUES)

    # -- reads -----------------------------------------------------------------------------

    def version(self) -> SwitchVersion:
        """`show version`; a value it prints as N/A (sonic-utilities show/main.py `version`:
        `version_info.get('build_version', 'N/A')`, get_chassis_info's "N/A") is "", unknown."""
        fields = {name: "" if value in ("N/A", "SONiC.N/A") else value
                  for name, value in _colon_fields(self.run_checked("show version")).items()}
        return SwitchVersion(
            sonic_version=fields.get("SONiC Software Version", ""),
            platform=fields.get("Platform", ""),
            hwsku=fields.get("HwSKU", ""),
            asic=fields.get("ASIC", ""),
            serial=fields.get("Serial Number", ""),
            uptime=fields.get("Uptime", ""),
        )

    def ports(self) -> list[PortStatus]:
        return _port_statuses(self._dump_many(_PORT_DUMPS))

    def counters(self) -> CounterSnapshot:
        return self._snapshot(self._dump_many(_COUNTER_DUMPS))

    def ports_and_counters(self) -> tuple[list[PortStatus], CounterSnapshot]:
        """Both in one round trip: six dumps on one command line."""
        dumps = self._dump_many(_PORT_DUMPS + _COUNTER_DUMPS)
        return _port_statuses(dumps[:3]), self._snapshot(dumps[3:])

    def _snapshot(self, dumps: list[dict[str, Hash]]) -> CounterSnapshot:
        port_map, queue_map, counters, flex_group, capability = dumps
        names = port_map.get("COUNTERS_PORT_NAME_MAP", {})
        return counter_snapshot(
            datetime.now(UTC),
            names,
            queue_map.get("COUNTERS_QUEUE_NAME_MAP", {}),
            _by_name(counters, "COUNTERS:"),
            self.counter_queues,
            port_order=sorted(names, key=natural_key),
            flex_group=flex_group.get(FLEX_COUNTER_KEY, {}),
            capability=capability.get(CAPABILITY_KEY, {}),
        )

    def lldp_neighbors(self) -> list[LldpNeighbor]:
        (entries,) = self._dump_many([("APPL_DB", "LLDP_ENTRY_TABLE:*")])
        by_port = _by_name(entries, "LLDP_ENTRY_TABLE:")
        return [
            LldpNeighbor(
                local_port=port,
                remote_system_name=entry.get("lldp_rem_sys_name", ""),
                remote_port_id=entry.get("lldp_rem_port_id", ""),
                remote_port_description=entry.get("lldp_rem_port_desc", ""),
                remote_chassis_id=entry.get("lldp_rem_chassis_id", ""),
            )
            for port, entry in sorted(by_port.items(), key=lambda item: natural_key(item[0]))
        ]

    def bgp_summary(self) -> list[BgpNeighbor]:
        command = 'vtysh -c "show bgp ipv4 summary json"'
        try:
            summary = json.loads(self.run_checked(command))
        except ValueError:
            raise SwitchCommandFailed(command, 0, "the answer was not JSON") from None
        peers = summary.get("ipv4Unicast", {}).get("peers", {})  # {} when BGP is not running
        return [
            BgpNeighbor(
                address=address,
                remote_as=_int(peer.get("remoteAs")),
                state=str(peer.get("state", "")),
                prefixes_received=_int(peer.get("pfxRcd")),
                uptime=str(peer.get("peerUptime", "")),
            )
            for address, peer in sorted(peers.items())
        ]

    # -- writes ----------------------------------------------------------------------------

    def set_port_admin(self, ports: Sequence[str], up: bool) -> None:
        names = sorted(set(ports), key=natural_key)
        if not names:
            return
        verb = "startup" if up else "shutdown"
        # In a comma list `config interface` silently skips names that are not ports, so each
        # unknown name is first sent alone to get the switch's own refusal.
        exists = self._run_lines([f'sonic-db-cli CONFIG_DB EXISTS "PORT|{n}"' for n in names])
        for name, found in zip(names, exists, strict=True):
            if found.strip() != "1":
                self.run_checked(f"sudo config interface {verb} {name}")
        self.run_checked(f"sudo config interface {verb} {','.join(names)}")

    def apply_qos_profile(self, profile: QosProfile, ports: Sequence[str] | None = None) -> None:
        """Table 15 on this switch, by reference (fabric/drivers/sonic_qos.py): the WRED
        profiles the lossless queues use, PFC on exactly the profile's priorities, and the
        buffer profiles the lossless priority groups use. Read back afterwards; QosNotApplied
        names what does not match. Safe to repeat."""
        qos_ports = self._table_keys("CONFIG_DB", "PORT_QOS_MAP|")
        targets = qos_ports if ports is None else sorted(set(ports), key=natural_key)
        for name in targets:
            if name not in qos_ports:
                # pfc's own answer for a port without a QoS map ("Cannot find interface"), which
                # it prints with exit status 0: a refusal nonetheless.
                priority = profile.pfc_priorities[0]
                command = f"sudo config interface pfc priority {name} {priority} on"
                raise SwitchCommandFailed(command, 0, self.run_checked(command))
        config, appl = read_qos_tables(self._read_tables)
        plan = plan_qos(profile, config, appl, targets, self.wred_profile)
        if plan.problems:
            raise QosNotApplied(self.target.hostname, plan.problems, changed=False)
        self._run_chain(plan.ecn_commands, f"WRED profiles {', '.join(plan.wred_profiles)}")
        self._run_chain(plan.binding_commands, "static lossless buffer profiles")
        if plan.binding_commands:
            # Binding a lossless PG turned PFC on for its priorities: start from what it left.
            config, _ = read_qos_tables(self._read_tables)
        port_commands = []
        wanted = {str(priority) for priority in profile.pfc_priorities}
        for name in targets:
            text = config.get(f"PORT_QOS_MAP|{name}", {}).get("pfc_enable", "")
            current = {p.strip() for p in text.split(",") if p.strip()}
            for priority in sorted(wanted - current):
                port_commands.append(f"sudo config interface pfc priority {name} {priority} on")
            for priority in sorted(current - wanted):
                port_commands.append(f"sudo config interface pfc priority {name} {priority} off")
        port_commands += plan.queue_commands
        self._run_chain(port_commands, f"PFC and ECN queues on {len(targets)} ports")
        self._run_chain(plan.buffer_commands,
                        f"buffer profiles {', '.join(plan.buffer_profiles) or '(none)'}")
        after, _ = read_qos_tables(self._read_tables)
        problems = verify_qos(profile, plan, after, targets, self.wred_profile)
        if problems:
            raise QosNotApplied(self.target.hostname, problems, changed=True)

    def save_config(self) -> None:
        self.run_checked("sudo config save -y")

    def enable_ecn_counters(self) -> str:
        self.run_checked(ENABLE_COMMAND)
        flex_group, capability = self.db_hgetall_many(
            [("CONFIG_DB", FLEX_COUNTER_KEY), ("STATE_DB", CAPABILITY_KEY)]
        )
        if flex_group.get("FLEX_COUNTER_STATUS") != "enable":
            raise SwitchCommandFailed(ENABLE_COMMAND, 0, f"{FLEX_COUNTER_KEY} is {flex_group} "
                                                         "afterwards")
        return ecn_counter_state(flex_group, capability, counted=False)

    def close(self) -> None:
        runner = _loop()
        runner.call(self._forget(), self.connect_timeout + _CALL_SLACK_SECONDS)

    # -- raw access (the contract tests and the QoS read-back use these) ---------------------

    def db_hgetall(self, database: str, key: str) -> Hash:
        return self.db_hgetall_many([(database, key)])[0]

    def db_hgetall_many(self, reads: Sequence[tuple[str, str]]) -> list[Hash]:
        """Many hashes by exact key ({} for a missing one), in few round trips."""
        results: list[Hash] = []
        for start in range(0, len(reads), READ_BATCH_SIZE):
            batch = reads[start : start + READ_BATCH_SIZE]
            dumps = self._dump_many([(database, _glob_escape(key)) for database, key in batch])
            results += [dump.get(key, {}) for (_, key), dump in zip(batch, dumps, strict=True)]
        return results

    def _dump_many(self, reads: Sequence[tuple[str, str]]) -> list[dict[str, Hash]]:
        """`sonic-db-dump` of each (database, key pattern) in one round trip: the hashes of
        each, by key. A dump the switch refuses raises SwitchCommandFailed with its text."""
        if not reads:
            return []
        command = "; ".join(
            f"{_dump_command(database, pattern)}; echo \"{_DUMP_END} $?\""
            for database, pattern in reads
        )
        result = self._run(command)
        stdout = result.stdout or ""
        try:
            sections = _split_dumps(stdout, len(reads))
        except ValueError as error:
            raise SwitchCommandFailed("sonic-db-dump", result.exit_status or -1,
                                      f"{error}\n{result.stderr or ''}") from None
        dumps: list[dict[str, Hash]] = []
        for (database, pattern), (status, table) in zip(reads, sections, strict=True):
            if status != 0:
                raise SwitchCommandFailed(_dump_command(database, pattern), status,
                                          result.stderr or "")
            dumps.append({
                key: entry["value"] for key, entry in table.items()
                if isinstance(entry, dict) and entry.get("type") == "hash"
            })
        return dumps

    def _read_tables(self, database: str, tables: Sequence[str]) -> dict[str, Hash]:
        """Every entry of some tables, by full key."""
        separator = "|" if database in ("CONFIG_DB", "STATE_DB") else ":"
        keys = [f"{table}{separator}{name}" for table in tables
                for name in self._table_keys(database, f"{table}{separator}")]
        hashes = self.db_hgetall_many([(database, key) for key in keys])
        return dict(zip(keys, hashes, strict=True))

    def run_checked(self, command: str) -> str:
        """Run one command line; its stdout, or SwitchCommandFailed with the switch's text."""
        result = self._run(command)
        if result.exit_status != 0:
            output = (result.stderr or "") + (result.stdout or "")
            raise SwitchCommandFailed(command, result.exit_status or -1, output)
        return result.stdout or ""

    # -- internals -------------------------------------------------------------------------

    def _table_keys(self, database: str, prefix: str) -> list[str]:
        """The names after `prefix` of a table's keys, in port order."""
        output = self.run_checked(f'sonic-db-cli {database} KEYS "{prefix}*"')
        names = [line[len(prefix) :] for line in output.splitlines() if line.startswith(prefix)]
        # portsyncd's markers share PORT_TABLE with the ports; they are no ports.
        names = [name for name in names if name not in ("PortConfigDone", "PortInitDone")]
        return sorted(names, key=natural_key)

    def _run_lines(self, commands: Sequence[str]) -> list[str]:
        """Run single-line-output commands as one `;` list; their outputs, one line each."""
        line = "; ".join(commands)
        result = self._run(line)
        lines = (result.stdout or "").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) != len(commands):
            # A read in the list failed (its stdout line is missing): show the switch's words.
            raise SwitchCommandFailed(
                commands[0], result.exit_status or -1,
                (result.stderr or "") + f"expected {len(commands)} lines of output, got "
                                        f"{len(lines)}",
            )
        return lines

    def _run_chain(self, commands: Sequence[str], summary: str) -> None:
        """Run writes as one `&&` list, stopping at the first refusal."""
        # In batches: each sonic-utilities command costs about a second on a real switch, and
        # every round trip must finish within the command timeout.
        for start in range(0, len(commands), WRITE_BATCH_SIZE):
            result = self._run(" && ".join(commands[start : start + WRITE_BATCH_SIZE]))
            if result.exit_status != 0:
                output = (result.stderr or "") + (result.stdout or "")
                raise SwitchCommandFailed(summary, result.exit_status or -1, output)

    def _run(self, command: str) -> asyncssh.SSHCompletedProcess:
        timeout = self.connect_timeout + self.command_timeout + _CALL_SLACK_SECONDS
        return _loop().call(self._run_async(command), timeout)

    @property
    def _cache_key(self) -> tuple:
        target = self.target
        return (target.address, target.port, target.credentials_ref, target.trust_on_first_use)

    async def _run_async(self, command: str) -> asyncssh.SSHCompletedProcess:
        for attempt in (1, 2):
            connection = await self._connection()
            try:
                return await asyncio.wait_for(
                    connection.run(command, check=False, stdin=asyncssh.DEVNULL),
                    self.command_timeout,
                )
            except TimeoutError:
                # The session may be wedged: start the next command on a fresh connection.
                await self._forget()
                raise SwitchUnreachable(
                    f"{self.target.hostname}: no answer to {command[:80]!r} within "
                    f"{self.command_timeout:g}s"
                ) from None
            except (asyncssh.Error, OSError) as error:
                await self._forget()
                if attempt == 2:
                    raise SwitchUnreachable(
                        f"{self.target.hostname}: connection lost: {error}"
                    ) from None
                # A cached connection the switch closed while idle: open a new one once.
        raise AssertionError("unreachable")

    async def _connection(self) -> asyncssh.SSHClientConnection:
        runner = _loop()
        key = self._cache_key
        lock = runner.connect_locks.setdefault(key, asyncio.Lock())
        async with lock:
            connection = runner.connections.get(key)
            if connection is not None and not connection.is_closed():
                return connection
            connection = await self._connect()
            runner.connections[key] = connection
            return connection

    async def _forget(self) -> None:
        connection = _loop().connections.pop(self._cache_key, None)
        if connection is not None:
            connection.close()

    async def _connect(self) -> asyncssh.SSHClientConnection:
        target = self.target
        credentials = load_credentials(target.credentials_ref)
        known_hosts, first_use = _known_hosts_for(target)
        options: dict[str, Any] = {
            "username": credentials.username,
            "known_hosts": known_hosts,
            "connect_timeout": self.connect_timeout,
            "login_timeout": self.connect_timeout,
            # Polls keep connections open between rounds: a switch that went away without a
            # word (power loss) is noticed within 30 s, before the next poll would wait the
            # whole command timeout on it instead of the connect timeout.
            "keepalive_interval": 15,
            "keepalive_count_max": 2,
            "agent_path": None,  # only the store's credentials, never the worker's agent
        }
        if credentials.key_file:
            options["client_keys"] = [credentials.key_file]
            options["passphrase"] = credentials.key_passphrase
        else:
            options["client_keys"] = None
        if credentials.password:
            options["password"] = credentials.password
        try:
            connection = await asyncio.wait_for(
                asyncssh.connect(target.address, target.port, **options),
                self.connect_timeout + 1,
            )
        except asyncssh.HostKeyNotVerifiable as error:
            raise SwitchHostKeyRejected(
                f"{target.hostname} ({target.address}:{target.port}): host key not trusted "
                f"({error.reason}); add it to {settings.FABRIC_KNOWN_HOSTS_FILE}"
            ) from None
        except asyncssh.PermissionDenied:
            raise SwitchAuthenticationFailed(
                f"{target.hostname}: login refused for credentials "
                f"{target.credentials_ref or 'default'!r}"
            ) from None
        except TimeoutError:
            raise SwitchUnreachable(
                f"{target.hostname} ({target.address}:{target.port}): SSH connect timed out "
                f"after {self.connect_timeout:g}s"
            ) from None
        except (asyncssh.Error, OSError) as error:
            raise SwitchUnreachable(
                f"{target.hostname} ({target.address}:{target.port}): {error}"
            ) from None
        if first_use:
            _record_host_key(target, connection.get_server_host_key())
        return connection


# -- host keys -----------------------------------------------------------------------------------


def _known_hosts_path() -> Path:
    return Path(settings.FABRIC_KNOWN_HOSTS_FILE)


def _host_pattern(target: SwitchTarget) -> str:
    return target.address if target.port == 22 else f"[{target.address}]:{target.port}"


_parsed_known_hosts: dict[Path, tuple[str, asyncssh.SSHKnownHosts]] = {}


def _load_known_hosts(path: Path) -> asyncssh.SSHKnownHosts:
    """The file parsed, again only when its text changed (reading it is cheap, parsing every
    key is not: for each of 520 connections it was about a third of the first poll's CPU)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    cached = _parsed_known_hosts.get(path)
    if cached is None or cached[0] != text:
        cached = (text, asyncssh.import_known_hosts(text))
        _parsed_known_hosts[path] = cached
    return cached[1]


def _known_hosts_for(target: SwitchTarget) -> tuple[asyncssh.SSHKnownHosts | None, bool]:
    """(known hosts to check against, whether this is a trust-on-first-use connection)."""
    known = _load_known_hosts(_known_hosts_path())
    host_keys, ca_keys, *_ = known.match(target.address, target.address, target.port)
    if not host_keys and not ca_keys and target.trust_on_first_use:
        logger.warning("trusting %s's host key on first use (lab switch)", target.hostname)
        return None, True
    return known, False


def _record_host_key(target: SwitchTarget, key: asyncssh.SSHKey | None) -> None:
    if key is None:
        return
    path = _known_hosts_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = f"{_host_pattern(target)} {key.export_public_key().decode().strip()}\n"
    with path.open("a", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)  # workers on one host may append at once
        file.write(line)


# -- parsing -------------------------------------------------------------------------------------


def _dump_command(database: str, pattern: str) -> str:
    """sonic-buildimage `sonic_py_common/sonic_db_dump_load.py` (`sonic_db_dump_load`):
    `-n` the database, `-k` a Redis KEYS glob. Without `-y` redisdl writes compact JSON
    (p/redis-dump-load `redisdl.py`, `dump`: `JSONEncoder(separators=(',', ':'))` per key, the
    default `ensure_ascii` kept), as unambiguous as the pretty form and a fifth smaller,
    and encoded by CPython's C encoder where `indent=2` falls back to the pure-Python one: on
    the switch and in the emulator alike that was most of a dump's CPU. The pattern is
    single-quoted for the switch's shell."""
    quoted = "'" + pattern.replace("'", "'\\''") + "'"
    return f"sonic-db-dump -n {database} -k {quoted}"


def _split_dumps(stdout: str, count: int) -> list[tuple[int, dict]]:
    """(exit status, parsed JSON) of each of `count` dumps, each followed by its end marker.

    A dump that failed printed nothing on stdout (its traceback went to stderr)."""
    decoder = json.JSONDecoder()
    position = 0
    sections: list[tuple[int, dict]] = []
    for _ in range(count):
        while position < len(stdout) and stdout[position] in " \t\r\n":
            position += 1
        table: dict = {}
        if not stdout.startswith(_DUMP_END, position):
            table, position = decoder.raw_decode(stdout, position)
            if not isinstance(table, dict):
                raise ValueError("sonic-db-dump printed JSON that is not an object")
        marker = _DUMP_END_LINE.match(stdout, position)
        if marker is None:
            raise ValueError(f"sonic-db-dump output not understood at character {position}")
        sections.append((int(marker.group(1)), table))
        position = marker.end()
    return sections


def _port_statuses(dumps: list[dict[str, Hash]]) -> list[PortStatus]:
    config, appl, state = dumps
    return port_statuses(_by_name(config, "PORT|"), _by_name(appl, "PORT_TABLE:"),
                         _by_name(state, "PORT_TABLE|"))


def _by_name(table: dict[str, Hash], prefix: str) -> dict[str, Hash]:
    """A dump's hashes keyed by what follows the table prefix (the port name, the oid)."""
    return {
        key[len(prefix) :]: value for key, value in table.items()
        if key.startswith(prefix) and key[len(prefix) :] not in _PORT_MARKERS
    }


def _glob_escape(key: str) -> str:
    """A Redis KEYS pattern matching exactly `key`."""
    return "".join("\\" + char if char in "*?[]\\" else char for char in key)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _colon_fields(text: str) -> dict[str, str]:
    """`Key: value` lines of `show version`; the first occurrence of a key wins."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, separator, value = line.partition(":")
        if separator and name and not name.startswith(" ") and name not in fields:
            fields[name.strip()] = value.strip()
    return fields

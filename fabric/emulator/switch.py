"""One emulated SONiC switch: its databases, port state machine, LLDP, BGP and counters.

CONFIG_DB is the source of truth, as on a real box: commands (or raw `sonic-db-cli` writes)
change CONFIG_DB and then call `reconcile()`, which plays the part of portmgrd/portsyncd and
orchagent by deriving APPL_DB and STATE_DB from it. A port is oper up when it is admin up, has
something cabled to it, the cable is intact, and, when the far end is another emulated switch,
that end is admin up too.

A switch built from database dumps (`dump=`, fabric.emulator.dump) has the ports its CONFIG_DB
lists instead of the built-in platform's, starts with the dumped APPL_DB, STATE_DB and
COUNTERS_DB as they are, and derives state again only for what a command changes.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from .bgp import BgpSession, summary_json
from .database import APPL_DB, CONFIG_DB, COUNTERS_DB, STATE_DB, Database, Hash, MemoryDatabase
from .defaults import BUFFER_PROFILES, initial_config
from .dump import SwitchDump
from .platform import (
    DEBIAN_VERSION,
    HWSKU,
    KERNEL_VERSION,
    SONIC_BUILD_VERSION,
    SONIC_VERSION_INFO,
    PortInfo,
    port_table,
)
from .spec import NeighborSpec, SwitchSpec
from .traffic import (
    QUEUES_PER_PORT,
    PortCounters,
    PortQos,
    PortRates,
    QueueCounters,
    TrafficModel,
)

logger = logging.getLogger(__name__)

DEFAULT_CONFIG_FILE = "/etc/sonic/config_db.json"
OperChangeCallback = Callable[[str, str, bool], None]

_ZERO_PORT_COUNTERS = PortCounters().as_sai()
_ZERO_QUEUE_COUNTERS = QueueCounters().as_sai()
_ZERO_RATES = PortRates().as_rates_hash()
_WRED_QUEUE_FIELDS = tuple(name for name in _ZERO_QUEUE_COUNTERS
                           if name.startswith("SAI_QUEUE_STAT_WRED_"))
_PORT_OID_BASE = 0x1000000000000
_QUEUE_OID_BASE = 0x15000000000000
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
# Fields portsyncd copies from CONFIG_DB PORT into APPL_DB PORT_TABLE.
_COPIED_PORT_FIELDS = (
    "admin_status", "alias", "description", "fec", "index", "lanes", "mtu", "speed", "subport",
    "pfc_asym",
)
# lldpd system capability bitmaps as lldp_syncd writes them.
_CAPS_BRIDGE_ROUTER = "28 00"
_CAPS_STATION = "80 00"
# LLDP chassis/port id subtypes (IEEE 802.1AB).
_CHASSIS_MAC = "4"
_PORT_ID_MAC = "3"
_PORT_ID_IFNAME = "5"
_PORT_ID_LOCAL = "7"


def derived_mac(name: str) -> str:
    """A MAC derived from a device name (under Edgecore's OUI), the same on every start."""
    digest = hashlib.sha256(name.encode()).digest()
    return "04:f8:f8:" + ":".join(f"{byte:02x}" for byte in digest[:3])


def sonic_system_description() -> str:
    """What SONiC's lldpd advertises as its system description."""
    return (
        f"SONiC Software Version: SONiC.{SONIC_BUILD_VERSION} - HwSku: {HWSKU} - "
        f"Distribution: Debian {DEBIAN_VERSION} - Kernel: {KERNEL_VERSION}"
    )


@dataclass
class _Partner:
    """The emulated switch port at the other end of a cable."""

    switch: Switch
    port: str


class Switch:
    """An emulated Edgecore AIS800-64O running SONiC, backed by a `Database`.

    Time comes from `clock` (monotonic seconds): `tick()` lets traffic flow for the time elapsed
    since the previous tick, and the command interpreter ticks before every command so counters
    move with wall time. Tests that want exact numbers pass a fixed clock and call `advance()`.
    """

    def __init__(
        self,
        spec: SwitchSpec,
        database: Database | None = None,
        clock: Callable[[], float] = time.monotonic,
        dump: SwitchDump | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.hostname
        self.db = database if database is not None else MemoryDatabase()
        self._clock = clock
        # A dumped switch is the hardware its CONFIG_DB describes, not the built-in platform.
        self.dump = dump
        self.ports: dict[str, PortInfo] = dump.ports() if dump else port_table(spec.breakout)
        # sonic_version.yml: the built-in image's, or what a dump tells of it (absent: unknown).
        self.version_info = dump.version_info() if dump else dict(SONIC_VERSION_INFO)
        self._check_ports_exist([n.port for n in spec.neighbors], "neighbor")
        self._check_ports_exist([p.port for p in spec.bgp_peers if p.port], "BGP peer")
        self.base_mac = derived_mac(spec.hostname)
        self.serial_number = spec.serial_number or f"EC{zlib.crc32(spec.hostname.encode()):010d}"
        seed = spec.seed if spec.seed is not None else zlib.crc32(spec.hostname.encode())
        self.traffic = TrafficModel(seed=seed, default_utilization=spec.utilization)
        self._neighbors: dict[str, NeighborSpec] = {n.port: n for n in spec.neighbors}
        self._link_up = {port: True for port in self.ports}
        for neighbor in spec.neighbors:
            self._link_up[neighbor.port] = neighbor.link_up
        for name, port in self.ports.items():
            neighbor = self._neighbors.get(name)
            self.traffic.add_port(name, port.speed, neighbor.utilization if neighbor else None)
        self._partners: dict[str, _Partner] = {}
        self._admin: dict[str, bool] = {}
        self._oper: dict[str, bool] = {}
        self._flaps: dict[str, Hash] = {}
        self._qos: dict[str, PortQos] = {}
        self._flowing: set[str] = set()
        self._callbacks: list[OperChangeCallback] = []
        self._bgp: list[BgpSession] = []
        # The ports' port-config snapshot as portmgrd last applied it (see reconcile()).
        self._applied: dict[str, Hash] = {}
        # A dumped switch's counters as dumped: traffic adds to them, and a hash or field the
        # dump lacks stays absent (the platform does not count it). None: counters from zero.
        self._counter_base: dict[str, Hash] | None = None
        if dump is None:
            self.port_oids = {name: f"oid:0x{_PORT_OID_BASE + i:x}" for i, name in
                              enumerate(self.ports, start=1)}
            self.queue_oids: dict[str, dict[int, str]] = {
                name: {queue: f"oid:0x{_QUEUE_OID_BASE + number * 0x100 + queue:x}"
                       for queue in range(QUEUES_PER_PORT)}
                for number, name in enumerate(self.ports)
            }
        else:
            counters = dump.databases[COUNTERS_DB]
            self.port_oids = {name: oid for name, oid in
                              counters.get("COUNTERS_PORT_NAME_MAP", {}).items()
                              if name in self.ports}
            self.queue_oids = {name: {} for name in self.port_oids}
            for entry, oid in counters.get("COUNTERS_QUEUE_NAME_MAP", {}).items():
                name, _, queue = entry.rpartition(":")
                if name in self.queue_oids and queue.isdigit() and int(queue) < QUEUES_PER_PORT:
                    self.queue_oids[name][int(queue)] = oid
            self._counter_base = {key.removeprefix("COUNTERS:"): value
                                  for key, value in counters.items()
                                  if key.startswith("COUNTERS:oid:")}
        self.saved_configs: dict[str, dict[str, Hash]] = {}
        self._counting_ecn: bool | None = None
        self.files: dict[str, str] = {}  # what commands wrote with -o/--output
        self._boot()

    # -- lifecycle -------------------------------------------------------------------------

    def _check_ports_exist(self, names: list[str], what: str) -> None:
        unknown = sorted(set(names).difference(self.ports))
        if unknown:
            raise ValueError(f"{self.name}: {what} on unknown port(s) {', '.join(unknown)}")

    def _boot(self) -> None:
        """Power on: CONFIG_DB from the (initial) saved config, everything else derived."""
        self.boot_time = self._clock()
        self._last_tick = self.boot_time
        self.db.flush_all()
        if self.dump is not None:
            config = dict(self.dump.databases[CONFIG_DB])
        else:
            config = initial_config(self.spec, self.ports, self.base_mac)
        self.db.hset_many(CONFIG_DB, config)
        self.saved_configs[DEFAULT_CONFIG_FILE] = config
        self._start_services()

    def _start_services(self) -> None:
        """Rebuild APPL_DB, STATE_DB and COUNTERS_DB from CONFIG_DB, as swss/syncd start-up does."""
        for db in (APPL_DB, STATE_DB, COUNTERS_DB):
            self.db.flush(db)
        # Oper state survives in memory so that the hook reports what a restart changed.
        self._flaps = {}
        self.traffic.reset()
        self._bgp = [BgpSession(peer) for peer in self.spec.bgp_peers]  # bgpd restarts too
        if self.dump is not None:
            self._restore_dumped_state()
        else:
            self._applied = {}
            self._write_static_state()
        self.reconcile()
        now = self._clock()
        for session in self._bgp:
            if session.spec.port is None or self._oper.get(session.spec.port, False):
                session.establish(now)
        self._flowing = set()
        if self.dump is None:
            self._write_zero_counters()

    def _restore_dumped_state(self) -> None:
        """APPL_DB, STATE_DB and COUNTERS_DB as dumped; admin and oper state as they say, and
        every CONFIG_DB port taken as already applied, so the dump's own state stays as it is
        until a command changes CONFIG_DB."""
        assert self.dump is not None
        for db in (APPL_DB, STATE_DB, COUNTERS_DB):
            self.db.hset_many(db, {key: value for key, value in self.dump.databases[db].items()
                                   if value})
        config = self.db.dump(CONFIG_DB)
        for name in self.ports:
            entry = config.get(f"PORT|{name}", {})
            appl = self.db.hgetall(APPL_DB, f"PORT_TABLE:{name}")
            self._admin[name] = entry.get("admin_status", "down") == "up"
            self._oper[name] = appl.get("oper_status") == "up"
            self._applied[name] = {f: entry[f] for f in _COPIED_PORT_FIELDS if f in entry}

    def _write_static_state(self) -> None:
        queue_names: Hash = {}
        queue_ports: Hash = {}
        queue_indexes: Hash = {}
        queue_types: Hash = {}
        for name, oids in self.queue_oids.items():
            for queue, oid in oids.items():
                queue_names[f"{name}:{queue}"] = oid
                queue_ports[oid] = self.port_oids[name]
                queue_indexes[oid] = str(queue)
                queue_types[oid] = "SAI_QUEUE_TYPE_UNICAST"
        self.db.hset_many(COUNTERS_DB, {
            "COUNTERS_PORT_NAME_MAP": self.port_oids,
            "COUNTERS_QUEUE_NAME_MAP": queue_names,
            "COUNTERS_QUEUE_PORT_MAP": queue_ports,
            "COUNTERS_QUEUE_INDEX_MAP": queue_indexes,
            "COUNTERS_QUEUE_TYPE_MAP": queue_types,
        })
        # portsyncd's markers, which share the table with the ports (readers must skip them).
        self.db.hset_many(APPL_DB, {
            "PORT_TABLE:PortConfigDone": {"count": str(len(self.ports))},
            "PORT_TABLE:PortInitDone": {"lanes": "0"},
        })
        for name in self._neighbors:
            self._publish_transceiver(name)
        # What orchagent reports of each port's buffer objects (read by the buffer CLI).
        self.db.hset_many(STATE_DB, {
            f"BUFFER_MAX_PARAM_TABLE|{name}": {"max_priority_groups": "8",
                                               "max_queues": str(QUEUES_PER_PORT)}
            for name in self.ports
        })
        if self.spec.ecn_queue_counters != "unsupported":
            # orchagent's initCounterCapabilities (sonic-swss portsorch.cpp, 202505+): what
            # the ASIC can count, whether or not the group is enabled.
            self.db.hset_many(STATE_DB, {
                f"QUEUE_COUNTER_CAPABILITIES|WRED_ECN_QUEUE_{name}": {"isSupported": "true"}
                for name in ("ECN_MARKED_PKT_COUNTER", "ECN_MARKED_BYTE_COUNTER",
                             "WRED_DROPPED_PKT_COUNTER", "WRED_DROPPED_BYTE_COUNTER")
            })
        self.db.hset(APPL_DB, "LLDP_LOC_CHASSIS", {
            "lldp_loc_chassis_id_subtype": _CHASSIS_MAC,
            "lldp_loc_chassis_id": self.base_mac,
            "lldp_loc_sys_name": self.name,
            "lldp_loc_sys_desc": sonic_system_description(),
            "lldp_loc_sys_cap_supported": _CAPS_BRIDGE_ROUTER,
            "lldp_loc_sys_cap_enabled": _CAPS_BRIDGE_ROUTER,
            **({"lldp_loc_man_addr": self.spec.management_address}
               if self.spec.management_address else {}),
        })

    def _publish_transceiver(self, port: str) -> None:
        """xcvrd's TRANSCEIVER_INFO: a module sits in the cage exactly when a cable is in."""
        key = f"TRANSCEIVER_INFO|{port}"
        if port in self._neighbors:
            self.db.hset(STATE_DB, key, {"type": self.ports[port].transceiver_type,
                                         "manufacturer": "Edgecore"})
        else:
            self.db.delete(STATE_DB, key)

    def uptime(self) -> float:
        """Seconds since the switch booted, on its clock."""
        return self._clock() - self.boot_time

    # -- configuration ---------------------------------------------------------------------

    def save_config(self, path: str = DEFAULT_CONFIG_FILE) -> None:
        """`config save`: snapshot CONFIG_DB under a file name."""
        self.saved_configs[path] = self.db.dump(CONFIG_DB)

    def reload_config(self, path: str = DEFAULT_CONFIG_FILE) -> None:
        """`config reload`: CONFIG_DB from a snapshot, then restart the services.

        As on a real box, counters start again from zero and BGP sessions re-establish; ports
        come straight back instead of after the minute a real reload takes.
        """
        if path not in self.saved_configs:
            raise FileNotFoundError(path)
        self.db.load(CONFIG_DB, self.saved_configs[path])
        self._start_services()

    def reconcile(self) -> None:
        """Derive APPL_DB/STATE_DB port state and the QoS view from CONFIG_DB.

        Call after anything wrote CONFIG_DB. Fires the oper-change hook for ports whose
        oper state changed, and informs the far end of cables whose admin state changed.
        """
        config = self.db.dump(CONFIG_DB)
        previous_admin = dict(self._admin)
        # portsyncd/portmgrd act on the ports CONFIG_DB has: a port removed from it loses its
        # APPL_DB and STATE_DB rows, and none is ever created for a port it does not have.
        present = [name for name in self.ports if f"PORT|{name}" in config]
        removed = [name for name in self.ports
                   if name not in present and (name in self._applied or name in self._admin)]
        port_fields: dict[str, Hash] = {}
        for name in present:
            entry = config[f"PORT|{name}"]
            self._admin[name] = entry.get("admin_status", "down") == "up"
            port_fields[name] = {f: entry[f] for f in _COPIED_PORT_FIELDS if f in entry}
        for name in removed:  # a removed port carries nothing and has no neighbor any more
            self._admin[name] = self._oper[name] = False
            self._applied.pop(name, None)
        if removed:
            self.db.delete(APPL_DB, *(f"PORT_TABLE:{name}" for name in removed))
            self.db.delete(STATE_DB, *(f"PORT_TABLE|{name}" for name in removed))
        self._qos = _qos_view(config, self.ports)
        self._publish_buffers(config)
        self._update_ecn_counting(config)
        changed = [name for name in present if self._update_oper(name)]
        # Like portmgrd, write only what changed since it was last applied (all ports after a
        # (re)start); a dumped switch's recorded state is left alone otherwise.
        touched = [name for name in present
                   if name in changed or self._applied.get(name) != port_fields[name]]
        self.db.hset_many(APPL_DB, {
            f"PORT_TABLE:{name}": {**port_fields[name], **self._oper_fields(name)}
            for name in touched
        })
        self.db.hset_many(STATE_DB, {f"PORT_TABLE|{name}": self._state_fields(name,
                                                                               port_fields[name])
                                     for name in touched})
        for name in touched:
            self._applied[name] = port_fields[name]
        self._publish_lldp(touched)
        self._after_oper_changes(changed)
        for name in present:
            partner = self._partners.get(name)
            if partner and previous_admin.get(name) != self._admin[name]:
                partner.switch._partner_changed(partner.port)

    def _update_ecn_counting(self, config: dict[str, Hash]) -> None:
        """The WRED_ECN_QUEUE flex-counter group: while it is off, queue hashes carry no
        SAI_QUEUE_STAT_WRED_* fields (fabric/drivers/sonic_flex_counters.py)."""
        status = config.get("FLEX_COUNTER_TABLE|WRED_ECN_QUEUE", {}).get("FLEX_COUNTER_STATUS")
        counting = status == "enable" and self.spec.ecn_queue_counters != "unsupported"
        previous, self._counting_ecn = self._counting_ecn, counting
        if previous is None or previous == counting:
            return
        for name in self.port_oids:
            for queue, queue_oid in self.queue_oids[name].items():
                key = f"COUNTERS:{queue_oid}"
                if counting:
                    stats = self._counter_hash(queue_oid, self.traffic.queue(name, queue).as_sai())
                    if stats:
                        self.db.hset(COUNTERS_DB, key, stats)
                else:
                    self.db.hdel(COUNTERS_DB, key, *_WRED_QUEUE_FIELDS)

    def _queue_stats(self, stats: Hash) -> Hash:
        if self._counting_ecn:
            return stats
        return {name: value for name, value in stats.items() if name not in _WRED_QUEUE_FIELDS}

    def _publish_buffers(self, config: dict[str, Hash]) -> None:
        """buffermgrd's APPL_DB BUFFER_PROFILE_TABLE and BUFFER_PG_TABLE from CONFIG_DB.

        Traditional model: CONFIG_DB's entries copied (sonic-swss cfgmgr/buffermgr.cpp,
        doBufferTableTask). Dynamic model: a PG whose profile is NULL gets a calculated
        profile named like getDynamicProfileName (cfgmgr/buffermgrdyn.cpp) that exists in
        APPL_DB only.
        """
        dynamic = config.get("DEVICE_METADATA|localhost", {}).get("buffer_model") == "dynamic"
        cables = config.get("CABLE_LENGTH|AZURE", {})
        profiles: dict[str, Hash] = {
            f"BUFFER_PROFILE_TABLE:{key.split('|', 1)[1]}": dict(fields)
            for key, fields in config.items() if key.startswith("BUFFER_PROFILE|")
        }
        groups: dict[str, Hash] = {}
        for key, fields in config.items():
            if not key.startswith("BUFFER_PG|"):
                continue
            _, ports, ids = key.split("|")
            for port in ports.split(","):
                if port not in self.ports:
                    continue
                profile = fields.get("profile", "NULL")
                if profile == "NULL" and dynamic:
                    speed = config.get(f"PORT|{port}", {}).get("speed", str(self.ports[port].speed))
                    profile = f"pg_lossless_{speed}_{cables.get(port, '5m')}_profile"
                    template = BUFFER_PROFILES.get(profile,
                                                   BUFFER_PROFILES["pg_lossless_800000_5m_profile"])
                    profiles[f"BUFFER_PROFILE_TABLE:{profile}"] = dict(template)
                groups[f"BUFFER_PG_TABLE:{port}:{ids}"] = {"profile": profile}
        stale = [key for key in self.db.keys(APPL_DB, "BUFFER_P*")
                 if key.startswith(("BUFFER_PG_TABLE:", "BUFFER_PROFILE_TABLE:"))]
        if stale:
            self.db.delete(APPL_DB, *stale)
        self.db.hset_many(APPL_DB, {**profiles, **groups})

    # -- links -----------------------------------------------------------------------------

    def connect(self, port: str, other: Switch, other_port: str) -> None:
        """Cable `port` to another emulated switch; both ends must already list the neighbor."""
        for switch, name in ((self, port), (other, other_port)):
            if name not in switch._neighbors:
                raise ValueError(f"{switch.name}: no neighbor declared on {name}")
        self._partners[port] = _Partner(other, other_port)
        other._partners[other_port] = _Partner(self, port)
        for switch, name in ((self, port), (other, other_port)):
            switch._partner_changed(name)
            switch._publish_lldp([name])  # the peer's identity is known now

    def set_link_up(self, port: str, up: bool) -> None:
        """Mend (True) or cut (False) the cable on a port; a cut takes both ends down."""
        self._require_port(port)
        self._link_up[port] = up
        self._partner_changed(port)
        partner = self._partners.get(port)
        if partner:
            partner.switch._link_up[partner.port] = up
            partner.switch._partner_changed(partner.port)

    def set_neighbor(self, port: str, neighbor: NeighborSpec | None) -> None:
        """Re-cable a port to something outside the emulated fabric (None: unplug it).

        A cable that ran to another emulated switch leaves that switch's port empty.
        """
        self._require_port(port)
        if neighbor is not None and neighbor.port != port:
            raise ValueError(f"neighbor is for {neighbor.port}, not {port}")
        partner = self._partners.pop(port, None)
        if partner:
            del partner.switch._partners[partner.port]
            partner.switch.set_neighbor(partner.port, None)
        if neighbor is None:
            self._neighbors.pop(port, None)
        else:
            self._neighbors[port] = neighbor
            self._link_up[port] = neighbor.link_up
        self._publish_transceiver(port)
        self._partner_changed(port)
        self._publish_lldp([port])  # the neighbor may have changed while the link stayed up

    def neighbor(self, port: str) -> NeighborSpec | None:
        """What is cabled to a port, if anything."""
        self._require_port(port)
        return self._neighbors.get(port)

    def link_partner(self, port: str) -> tuple[Switch, str] | None:
        """The emulated switch and port at the other end of a port's cable, if any."""
        self._require_port(port)
        partner = self._partners.get(port)
        return (partner.switch, partner.port) if partner else None

    def _partner_changed(self, port: str) -> None:
        """Something on the wire changed: recompute and publish one port's oper state."""
        if not self._update_oper(port) or port not in self._applied:
            return  # unchanged, or a port CONFIG_DB does not have: no state is published
        self.db.hset(APPL_DB, f"PORT_TABLE:{port}", self._oper_fields(port))
        self.db.hset(STATE_DB, f"PORT_TABLE|{port}", {
            "netdev_oper_status": "up" if self._oper[port] else "down",
        })
        self._publish_lldp([port])
        self._after_oper_changes([port])

    def _desired_oper(self, port: str) -> bool:
        if not self._admin.get(port) or port not in self._neighbors or not self._link_up[port]:
            return False
        partner = self._partners.get(port)
        return partner is None or partner.switch._admin.get(partner.port, False)

    def _update_oper(self, port: str) -> bool:
        """Recompute a port's oper state; True when it changed since the last publication."""
        up = self._desired_oper(port)
        previous = self._oper.get(port)
        self._oper[port] = up
        if previous is None or previous == up:
            return False
        stamp = datetime.now(UTC).strftime("%a %b %d %H:%M:%S %Y")
        flaps = self._flaps.setdefault(port, {"flap_count": "0"})
        flaps["flap_count"] = str(int(flaps["flap_count"]) + 1)
        flaps["last_up_time" if up else "last_down_time"] = stamp
        return True

    def _oper_fields(self, port: str) -> Hash:
        return {"oper_status": "up" if self._oper[port] else "down", **self._flaps.get(port, {})}

    def _state_fields(self, port: str, fields: Hash) -> Hash:
        return {
            "state": "ok",
            "admin_status": fields.get("admin_status", "down"),
            "netdev_oper_status": "up" if self._oper[port] else "down",
            "mtu": fields.get("mtu", ""),
            "speed": fields.get("speed", str(self.ports[port].speed)),
            "host_tx_ready": "true" if self._admin[port] else "false",
        }

    def _after_oper_changes(self, ports: list[str]) -> None:
        now = self._clock()
        for port in ports:
            if not self._oper[port] and port in self.port_oids:
                # port_rates.lua reports zero at its next pass; no need to wait for traffic.
                self.db.hset(COUNTERS_DB, f"RATES:{self.port_oids[port]}", _ZERO_RATES)
            for session in self._bgp:
                if session.spec.port == port:
                    if self._oper[port]:
                        session.establish(now)
                    else:
                        session.drop()
        for port in ports:
            for callback in list(self._callbacks):
                try:
                    callback(self.name, port, self._oper[port])
                except Exception:
                    # One broken subscriber must not break the command that changed the port.
                    logger.exception("oper-change callback failed for %s %s", self.name, port)

    def on_port_oper_change(self, callback: OperChangeCallback) -> Callable[[], None]:
        """Call `callback(switch_name, port_name, oper_up)` whenever a port's oper state changes.

        Callbacks run synchronously in the caller's thread (the SSH server's event loop).
        Returns a function that unsubscribes the callback.
        """
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback)

    # -- LLDP ------------------------------------------------------------------------------

    def _publish_lldp(self, ports: list[str]) -> None:
        """LLDP_ENTRY_TABLE holds a neighbor only while the link is up and the peer speaks LLDP."""
        present: dict[str, Hash] = {}
        absent: list[str] = []
        for port in ports:
            neighbor = self._neighbors.get(port)
            if neighbor and neighbor.lldp and self._oper.get(port):
                present[f"LLDP_ENTRY_TABLE:{port}"] = self._lldp_entry(neighbor)
            else:
                absent.append(f"LLDP_ENTRY_TABLE:{port}")
        if absent:
            self.db.delete(APPL_DB, *absent)
        if present:
            self.db.hset_many(APPL_DB, present)

    def _lldp_entry(self, neighbor: NeighborSpec) -> Hash:
        partner = self._partners.get(neighbor.port)
        if partner:
            peer = partner.switch
            port_id = neighbor.port_id or peer.ports[partner.port].alias
            port_id_subtype = _PORT_ID_LOCAL
            port_desc = neighbor.port_desc if neighbor.port_desc is not None else partner.port
            chassis_id = neighbor.chassis_id or peer.base_mac
            system_description = neighbor.system_description or sonic_system_description()
            management_address = neighbor.management_address or peer.spec.management_address
            capabilities = _CAPS_BRIDGE_ROUTER
        else:
            port_id = neighbor.port_id or neighbor.peer_port
            port_id_subtype = _PORT_ID_MAC if _MAC.match(port_id) else _PORT_ID_IFNAME
            port_desc = neighbor.port_desc or ""
            chassis_id = neighbor.chassis_id or derived_mac(neighbor.peer_name)
            system_description = neighbor.system_description
            management_address = neighbor.management_address
            capabilities = _CAPS_STATION
        entry = {
            "lldp_rem_index": "1",
            "lldp_rem_time_mark": str(int(self.uptime() * 100)),  # TimeTicks since boot
            "lldp_rem_chassis_id_subtype": _CHASSIS_MAC,
            "lldp_rem_chassis_id": chassis_id,
            "lldp_rem_port_id_subtype": port_id_subtype,
            "lldp_rem_port_id": port_id,
            "lldp_rem_port_desc": port_desc,
            "lldp_rem_sys_name": neighbor.peer_name,
            "lldp_rem_sys_desc": system_description,
            "lldp_rem_sys_cap_supported": capabilities,
            "lldp_rem_sys_cap_enabled": capabilities,
        }
        if management_address:
            entry["lldp_rem_man_addr"] = management_address
        return entry

    # -- traffic and counters --------------------------------------------------------------

    def _require_port(self, port: str) -> None:
        if port not in self.ports:
            raise KeyError(f"{self.name} has no port {port!r}")

    def set_utilization(self, port: str, value: float) -> None:
        """Target load of a port (0..1 of line rate), effective while it is oper up."""
        self._require_port(port)
        self.traffic.set_utilization(port, value)

    def tick(self) -> None:
        """Let traffic flow for the clock time elapsed since the last tick."""
        now = self._clock()
        elapsed, self._last_tick = now - self._last_tick, now
        if elapsed > 0:
            self.advance(elapsed)

    def advance(self, seconds: float) -> None:
        """Let `seconds` of traffic flow on oper-up ports and publish the counters."""
        active = {port: self._qos.get(port, PortQos()) for port, up in self._oper.items() if up}
        self.traffic.advance(seconds, active)
        self._write_counters()

    def _write_zero_counters(self) -> None:
        """Every port's and queue's counters as syncd creates them: present, and zero."""
        entries: dict[str, Hash] = {}
        for name, oid in self.port_oids.items():
            entries[f"COUNTERS:{oid}"] = _ZERO_PORT_COUNTERS
            entries[f"RATES:{oid}"] = _ZERO_RATES
            for queue_oid in self.queue_oids[name].values():
                entries[f"COUNTERS:{queue_oid}"] = self._queue_stats(_ZERO_QUEUE_COUNTERS)
        self.db.hset_many(COUNTERS_DB, entries)

    def _counter_hash(self, oid: str, counted: Hash) -> Hash | None:
        """What syncd publishes for an object: the traffic model's counts, added to a dumped
        switch's counters for the fields its dump has (None: the dump has no such hash)."""
        if self._counter_base is None:
            return counted
        base = self._counter_base.get(oid)
        if base is None:
            return None
        return {field: str(int(value) + int(counted[field]))
                if field in counted and value.isdigit() else value
                for field, value in base.items()}

    def _write_counters(self) -> None:
        """Publish COUNTERS and RATES of ports that carry or just stopped carrying traffic.

        Idle ports' counters do not move, so rewriting them would only cost time.
        """
        flowing = {port for port, up in self._oper.items() if up}
        entries: dict[str, Hash] = {}
        for name, oid in self.port_oids.items():
            if name not in flowing and name not in self._flowing:
                continue
            stats = self._counter_hash(oid, self.traffic.counters(name).as_sai())
            if stats:
                entries[f"COUNTERS:{oid}"] = stats
            entries[f"RATES:{oid}"] = self.traffic.rates(name).as_rates_hash()
            for queue, queue_oid in self.queue_oids[name].items():
                stats = self._counter_hash(queue_oid, self.traffic.queue(name, queue).as_sai())
                if stats:
                    entries[f"COUNTERS:{queue_oid}"] = self._queue_stats(stats)
        self.db.hset_many(COUNTERS_DB, entries)
        self._flowing = flowing

    # -- queries ---------------------------------------------------------------------------

    def admin_up(self, port: str) -> bool:
        self._require_port(port)
        return self._admin.get(port, False)

    def oper_up(self, port: str) -> bool:
        self._require_port(port)
        return self._oper.get(port, False)

    def bgp_summary(self) -> dict[str, object]:
        """`show bgp ipv4 summary json` as FRR prints it."""
        return summary_json(self.spec.router_id, self.spec.bgp_asn, self._bgp, self._clock())


def _qos_view(config: dict[str, Hash], ports: dict[str, PortInfo]) -> dict[str, PortQos]:
    """Per port: PFC-enabled priorities and ECN marking probability per queue.

    QUEUE keys may name one queue or a range (`QUEUE|Ethernet0|3-4`) and several ports
    separated by commas, as sonic-cfggen writes them.
    """
    wred_marking: dict[str, float] = {}
    for key, fields in config.items():
        if key.startswith("WRED_PROFILE|") and fields.get("ecn", "ecn_none") != "ecn_none":
            probability = fields.get("green_drop_probability", "0")
            name = key.split("|", 1)[1]
            wred_marking[name] = int(probability) / 100 if probability.isdigit() else 0.0
    ecn: dict[str, dict[int, float]] = {name: {} for name in ports}
    for key, fields in config.items():
        parts = key.split("|")
        if parts[0] != "QUEUE" or len(parts) != 3:
            continue
        marking = wred_marking.get(fields.get("wred_profile", ""))
        if marking is None:
            continue
        for port in parts[1].split(","):
            if port in ecn:
                for queue in _queue_range(parts[2]):
                    ecn[port][queue] = marking
    view: dict[str, PortQos] = {}
    for name in ports:
        pfc = config.get(f"PORT_QOS_MAP|{name}", {}).get("pfc_enable", "")
        priorities = frozenset(int(p) for p in pfc.split(",") if p.strip().isdigit())
        view[name] = PortQos(pfc_priorities=priorities, ecn_marking=ecn[name])
    return view


def _queue_range(text: str) -> range:
    first, _, last = text.partition("-")
    if not first.isdigit() or (last and not last.isdigit()):
        return range(0)
    return range(int(first), int(last or first) + 1)


def connect_fabric(switches: Iterable[Switch]) -> None:
    """Cable together every pair of emulated switches whose neighbor entries name each other.

    A neighbor naming another emulated switch must be matched by that switch's neighbor entry
    on the named port pointing back; anything else is a wiring mistake in the specs.
    """
    by_name = {switch.name: switch for switch in switches}
    for switch in by_name.values():
        for port, neighbor in switch._neighbors.items():
            peer = by_name.get(neighbor.peer_name)
            if peer is None or port in switch._partners:
                continue
            back = peer._neighbors.get(neighbor.peer_port)
            if back is None or (back.peer_name, back.peer_port) != (switch.name, port):
                raise ValueError(
                    f"{switch.name} {port} is cabled to {peer.name} {neighbor.peer_port}, "
                    f"but {peer.name} does not list {switch.name} {port} on that port"
                )
            switch.connect(port, peer, neighbor.peer_port)

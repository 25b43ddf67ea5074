"""`EmulatedDriver`: the FabricDriver interface against in-process emulated SONiC switches.

For fast unit tests and the embedded demo. A process-wide `EmulatedFabric` holds one emulator
`Switch` per inventory switch, cabled the way the inventory's active cables say (so LLDP agrees
with the cabling until a test crosses something). The driver reads the switch's SONiC databases
the way the SSH driver reads them through `sonic-db-dump` (CONFIG_DB `PORT|x`, APPL_DB
`PORT_TABLE:x` and `LLDP_ENTRY_TABLE:x`, STATE_DB `PORT_TABLE|x`, COUNTERS_DB through the name
maps), through the same readers (sonic_ports, sonic_counters) and makes changes
with the same CLI commands, so both return the same dataclasses.

Host-facing neighbors follow what lldpd on a compute node advertises: the system name is the
node's hostname, the port id its NIC's MAC (the netdev name, then the device, when the
inventory has no MAC), the port description the NIC's device name (`mlx5_0`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from django.conf import settings

from fabric.drivers.base import (
    BgpNeighbor,
    CounterSnapshot,
    FabricDriver,
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
from fabric.emulator import CommandInterpreter, NeighborSpec, Switch, SwitchSpec, connect_fabric
from fabric.emulator.database import APPL_DB, CONFIG_DB, COUNTERS_DB, STATE_DB
from fabric.emulator.dump import SwitchDump
from fabric.emulator.platform import ASIC_TYPE, CAGE_PORT_NAMES, HWSKU, PLATFORM, port_table
from fabric.emulator.traffic import QUEUES_PER_PORT

Clock = Callable[[], float]

_ROLE_UTILIZATION = {"leaf": 0.3, "spine": 0.3, "storage": 0.1, "management": 0.01}


def host_port_id(nic) -> str:
    """The LLDP port id a compute node's lldpd advertises for one of its NICs."""
    return nic.mac or nic.netdev or nic.device


class EmulatedFabric:
    """Emulated switches by hostname, with a lock each (the poller reads them from threads).

    `clock` returns epoch seconds; tests pass a fake one and move it to get exact rates.
    """

    def __init__(self, switches: list[Switch], clock: Clock) -> None:
        self.clock = clock
        self.switches = {switch.name: switch for switch in switches}
        self.locks = {name: threading.Lock() for name in self.switches}
        self.unreachable: set[str] = set()

    def switch(self, hostname: str) -> Switch:
        if hostname in self.unreachable or hostname not in self.switches:
            raise SwitchUnreachable(f"{hostname}: no route to host (emulated)")
        switch = self.switches[hostname]
        if switch.spec.unreachable:
            raise SwitchUnreachable(f"{hostname}: connection timed out (emulated)")
        return switch

    def set_unreachable(self, hostname: str, unreachable: bool = True) -> None:
        (self.unreachable.add if unreachable else self.unreachable.discard)(hostname)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def cross_cables(self, first: tuple[str, str], second: tuple[str, str]) -> None:
        """Swap what is plugged into two switch ports, as a technician crossing two cables
        would (the inventory does not change)."""
        (switch_a, port_a), (switch_b, port_b) = first, second
        neighbor_a = self.switches[switch_a].neighbor(port_a)
        neighbor_b = self.switches[switch_b].neighbor(port_b)
        if neighbor_a is None or neighbor_b is None:
            raise ValueError("both ports must have something plugged in")
        self.switches[switch_a].set_neighbor(port_a, _moved(neighbor_b, port_a))
        self.switches[switch_b].set_neighbor(port_b, _moved(neighbor_a, port_b))

    def scale_switch_traffic(self, hostname: str, utilization: float) -> None:
        """Set the load of every cabled port of one switch (a degraded leaf carries less)."""
        switch = self.switches[hostname]
        for port in switch.ports:
            if switch.neighbor(port) is not None:
                switch.set_utilization(port, utilization)


def _moved(neighbor: NeighborSpec, port: str) -> NeighborSpec:
    return NeighborSpec(
        port=port,
        peer_name=neighbor.peer_name,
        peer_port=neighbor.peer_port,
        port_id=neighbor.port_id,
        port_desc=neighbor.port_desc,
        chassis_id=neighbor.chassis_id,
        utilization=neighbor.utilization,
    )


def specs_from_inventory() -> list[SwitchSpec]:
    """One emulator spec per inventory switch, with a neighbor for each connected cable."""
    from inventory.models import CableStatus, SwitchPort
    from inventory.models import Switch as InventorySwitch
    from inventory.selectors import active_cables

    breakouts: dict[int, list[str]] = {}
    halves = SwitchPort.objects.filter(breakout_parent__isnull=False).values_list(
        "switch_id", "name"
    )
    for switch_id, name in halves:
        if name in CAGE_PORT_NAMES:  # the first half keeps the cage's name
            breakouts.setdefault(switch_id, []).append(name)
    # The emulated platform has the AIS800-64O's ports only; an inventory port beyond them (a
    # spine scaled for a benchmark) has nothing to emulate it, nor has its cable's other end.
    emulated_ports = {
        switch_id: set(port_table(cages)) for switch_id, cages in breakouts.items()
    }
    plain_ports = set(port_table())

    def emulated(port) -> bool:
        return port is None or port.name in emulated_ports.get(port.switch_id, plain_ports)

    neighbors: dict[int, list[NeighborSpec]] = {}
    cables = active_cables().filter(status__in=[CableStatus.CONNECTED, CableStatus.FAULTY])
    cables = cables.select_related(
        "a_nic__node", "b_nic__node", "a_port__switch", "b_port__switch"
    )
    for cable in cables:
        ends = (
            (cable.a_port, cable.b_port, cable.b_nic),
            (cable.b_port, cable.a_port, cable.a_nic),
        )
        if not (emulated(cable.a_port) and emulated(cable.b_port)):
            continue
        for local, far_port, far_nic in ends:
            if local is None:
                continue
            link_up = cable.status == CableStatus.CONNECTED
            if far_nic is not None:
                spec = NeighborSpec(
                    local.name, far_nic.node.hostname, host_port_id(far_nic),
                    port_desc=far_nic.device, link_up=link_up,
                )
            else:
                spec = NeighborSpec(
                    local.name, far_port.switch.hostname, far_port.name, link_up=link_up
                )
            neighbors.setdefault(local.switch_id, []).append(spec)
    specs = []
    for switch in InventorySwitch.objects.order_by("hostname"):
        specs.append(
            SwitchSpec(
                hostname=switch.hostname,
                role=switch.role,
                breakout=sorted(breakouts.get(switch.pk, [])),
                neighbors=neighbors.get(switch.pk, []),
                management_address=switch.management_address or "",
                serial_number=switch.serial,
                utilization=_ROLE_UTILIZATION.get(switch.role, 0.3),
            )
        )
    return specs


_fabric: EmulatedFabric | None = None
_fabric_lock = threading.Lock()


def build_emulated_fabric(
    specs: list[SwitchSpec] | None = None, clock: Clock = time.time,
    dumps: Sequence[SwitchDump] = (),
) -> EmulatedFabric:
    """Boot the process-wide emulated fabric (from the inventory unless `specs` are given),
    with a switch served from each of `dumps` (sonic-db-dump files of a real switch) besides."""
    global _fabric
    specs = specs_from_inventory() if specs is None else specs
    switches = [Switch(spec, clock=clock) for spec in specs]
    switches += [Switch(dump.spec(), clock=clock, dump=dump) for dump in dumps]
    connect_fabric(switches)
    with _fabric_lock:
        _fabric = EmulatedFabric(switches, clock)
    return _fabric


def emulated_fabric() -> EmulatedFabric:
    """The process-wide emulated fabric, booted from the inventory on first use."""
    if _fabric is None:
        return build_emulated_fabric()
    return _fabric


def reset_emulated_fabric() -> None:
    """Forget the emulated fabric; the next use boots it from the inventory again."""
    global _fabric
    with _fabric_lock:
        _fabric = None


def _table(switch: Switch, db: str, prefix: str) -> dict[str, dict[str, str]]:
    """One table's hashes keyed by what follows the prefix, as the SSH driver's dumps give."""
    pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
    return {key[len(prefix):]: switch.db.hgetall(db, key) for key in switch.db.keys(db, pattern)}


class EmulatedDriver(FabricDriver):
    """Reads and changes one emulated switch of the process-wide `EmulatedFabric`."""

    def __init__(self, target: SwitchTarget, fabric: EmulatedFabric | None = None):
        super().__init__(target)
        self._fabric = fabric

    @property
    def fabric(self) -> EmulatedFabric:
        if self._fabric is None:
            fabric = emulated_fabric()
            if self.target.hostname not in fabric.switches:
                fabric = build_emulated_fabric()  # the inventory gained a switch since boot
            self._fabric = fabric
        return self._fabric

    def _switch(self) -> tuple[Switch, threading.Lock]:
        switch = self.fabric.switch(self.target.hostname)
        return switch, self.fabric.locks[switch.name]

    def version(self) -> SwitchVersion:
        switch, _ = self._switch()
        from fabric.emulator.platform import SONIC_BUILD_VERSION

        return SwitchVersion(
            sonic_version=f"SONiC.{SONIC_BUILD_VERSION}",
            platform=PLATFORM,
            hwsku=HWSKU,
            asic=ASIC_TYPE,
            serial=switch.serial_number,
            uptime=f"{int(switch.uptime())} seconds",
        )

    def ports(self) -> list[PortStatus]:
        switch, lock = self._switch()
        with lock:
            switch.tick()
            tables = [_table(switch, db, prefix) for db, prefix in (
                (CONFIG_DB, "PORT|"), (APPL_DB, "PORT_TABLE:"), (STATE_DB, "PORT_TABLE|"))]
        return port_statuses(*tables)

    def counters(self) -> CounterSnapshot:
        switch, lock = self._switch()
        with lock:
            switch.tick()
            taken_at = self.fabric.now()
            db = switch.db
            port_oids = db.hgetall(COUNTERS_DB, "COUNTERS_PORT_NAME_MAP")
            queue_oids = db.hgetall(COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP")
            counters = _table(switch, COUNTERS_DB, "COUNTERS:")
            flex_group = db.hgetall(CONFIG_DB, FLEX_COUNTER_KEY)
            capability = db.hgetall(STATE_DB, CAPABILITY_KEY)
        return counter_snapshot(taken_at, port_oids, queue_oids, counters,
                                range(QUEUES_PER_PORT),
                                port_order=sorted(port_oids, key=natural_key),
                                flex_group=flex_group, capability=capability)

    def lldp_neighbors(self) -> list[LldpNeighbor]:
        switch, lock = self._switch()
        prefix = "LLDP_ENTRY_TABLE:"
        with lock:
            entries = [
                (key[len(prefix):], switch.db.hgetall(APPL_DB, key))
                for key in switch.db.keys(APPL_DB, f"{prefix}*")
            ]
        return [
            LldpNeighbor(
                local_port=port,
                remote_system_name=entry.get("lldp_rem_sys_name", ""),
                remote_port_id=entry.get("lldp_rem_port_id", ""),
                remote_port_description=entry.get("lldp_rem_port_desc", ""),
                remote_chassis_id=entry.get("lldp_rem_chassis_id", ""),
            )
            for port, entry in entries
        ]

    def bgp_summary(self) -> list[BgpNeighbor]:
        switch, lock = self._switch()
        with lock:
            summary = switch.bgp_summary()
        peers = summary.get("ipv4Unicast", {}).get("peers", {})
        return [
            BgpNeighbor(
                address=address,
                remote_as=int(peer.get("remoteAs", 0)),
                state=str(peer.get("state", "")),
                prefixes_received=int(peer.get("pfxRcd", 0)),
                uptime=str(peer.get("peerUptime", "")),
            )
            for address, peer in peers.items()
        ]

    def _run(self, command: str) -> str:
        switch, lock = self._switch()
        with lock:
            result = CommandInterpreter(switch).execute(command)
        if result.exit_status != 0:
            raise SwitchCommandFailed(command, result.exit_status, result.stderr or result.stdout)
        return result.stdout

    def set_port_admin(self, ports: Sequence[str], up: bool) -> None:
        if ports:
            verb = "startup" if up else "shutdown"
            self._run(f"sudo config interface {verb} {','.join(ports)}")

    def apply_qos_profile(self, profile: QosProfile, ports: Sequence[str] | None = None) -> None:
        """The SSH driver's plan (fabric/drivers/sonic_qos.py) through the same commands, on
        the cabled ports when `ports` is None."""
        switch, _ = self._switch()
        targets = list(ports) if ports is not None else [
            name for name in switch.ports if switch.neighbor(name) is not None
            and switch.db.hgetall(CONFIG_DB, f"PORT_QOS_MAP|{name}")
        ]
        config, appl = read_qos_tables(self._read_tables)
        plan = plan_qos(profile, config, appl, targets, settings.FABRIC_WRED_PROFILE)
        if plan.problems:
            raise QosNotApplied(self.target.hostname, plan.problems, changed=False)
        for command in (*plan.ecn_commands, *plan.binding_commands):
            self._run(command)
        if plan.binding_commands:
            # Binding a lossless PG turned PFC on for its priorities: start from what it left.
            config, _ = read_qos_tables(self._read_tables)
        wanted = {str(priority) for priority in profile.pfc_priorities}
        for port in targets:
            text = config.get(f"PORT_QOS_MAP|{port}", {}).get("pfc_enable", "")
            current = {p.strip() for p in text.split(",") if p.strip()}
            for priority in sorted(wanted):
                self._run(f"sudo config interface pfc priority {port} {priority} on")
            for priority in sorted(current - wanted):
                self._run(f"sudo config interface pfc priority {port} {priority} off")
        for command in (*plan.queue_commands, *plan.buffer_commands):
            self._run(command)
        after, _ = read_qos_tables(self._read_tables)
        problems = verify_qos(profile, plan, after, targets, settings.FABRIC_WRED_PROFILE)
        if problems:
            raise QosNotApplied(self.target.hostname, problems, changed=True)

    def _read_tables(self, database: str, tables: Sequence[str]) -> dict[str, dict[str, str]]:
        switch, lock = self._switch()
        separator = "|" if database in (CONFIG_DB, "STATE_DB") else ":"
        prefixes = tuple(f"{table}{separator}" for table in tables)
        with lock:
            return {key: value for key, value in switch.db.dump(database).items()
                    if key.startswith(prefixes)}

    def save_config(self) -> None:
        self._run("sudo config save -y")

    def enable_ecn_counters(self) -> str:
        self._run(ENABLE_COMMAND)
        switch, lock = self._switch()
        with lock:
            return ecn_counter_state(switch.db.hgetall(CONFIG_DB, FLEX_COUNTER_KEY),
                                     switch.db.hgetall("STATE_DB", CAPABILITY_KEY), False)

"""The switch driver interface (DESIGN.md section 4): what the portal asks of one SONiC switch.

Implementations (chosen by dotted path in `settings.FABRIC_DRIVER`):
- `fabric.drivers.ssh.SonicSshDriver`: the SONiC CLI over real SSH (the emulator in tests and the
  demo, a real switch in production);
- `fabric.drivers.emulated.EmulatedDriver`: an in-process emulated switch for fast unit tests.
Both pass the same contract tests. Drivers return these dataclasses, never models, and raise only
the errors below.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings


class FabricError(Exception):
    """Base class of everything a switch driver raises."""


class SwitchUnreachable(FabricError):
    """SSH connect or command timed out, or the connection dropped: worth retrying."""


class SwitchCommandFailed(FabricError):
    """The switch ran the command and refused it (bad port name, invalid value)."""

    def __init__(self, command: str, exit_status: int, output: str):
        super().__init__(f"{command!r} exited {exit_status}: {output.strip()}")
        self.command = command
        self.exit_status = exit_status
        self.output = output


@dataclass(frozen=True)
class SwitchTarget:
    """How to reach one switch. `credentials_ref` names an entry in the credentials store."""

    hostname: str
    address: str
    port: int = 22
    credentials_ref: str = ""
    trust_on_first_use: bool = False


@dataclass(frozen=True)
class PortStatus:
    """One port as `show interfaces status` (sonic-utilities scripts/intfutil) reads it: admin
    and oper state, MTU, FEC, lanes and alias from APPL_DB PORT_TABLE (what the daemons
    applied), the speed from STATE_DB PORT_TABLE while the port is oper up, else from APPL_DB.
    `configured_*` is CONFIG_DB's PORT entry, the operator's intent; None where CONFIG_DB has
    no such field. An unknown speed is None, never 0. `admin_state_known`/`oper_state_known`
    are False where APPL_DB has no admin_status/oper_status (intfutil prints N/A for an
    absent field and lists no row for a port APPL_DB lacks): `admin_up`/`oper_up` are then
    False only as "not known to be up", and an unknown state is never compared with intent."""

    name: str
    alias: str
    speed_mbps: int | None
    admin_up: bool
    oper_up: bool
    mtu: int = 9100
    fec: str = ""
    lanes: str = ""
    configured_admin_up: bool | None = None
    configured_speed_mbps: int | None = None
    configured_fec: str | None = None
    admin_state_known: bool = True
    oper_state_known: bool = True

    @property
    def known_admin_up(self) -> bool | None:
        """`admin_up` where APPL_DB says, None where it does not (stored and shown unknown)."""
        return self.admin_up if self.admin_state_known else None

    @property
    def known_oper_up(self) -> bool | None:
        """`oper_up` where APPL_DB says, None where it does not (stored and shown unknown)."""
        return self.oper_up if self.oper_state_known else None

    def intent_differences(self) -> dict[str, dict]:
        """Where the running port differs from CONFIG_DB: {field: {configured, actual}}.

        The speed is compared only while the port is up (a down port has no running speed);
        nothing is compared for a port APPL_DB does not hold (no running state to compare)."""
        differences: dict[str, dict] = {}
        if not (self.admin_state_known or self.oper_state_known):
            return differences
        if (self.admin_state_known and self.configured_admin_up is not None
                and self.configured_admin_up != self.admin_up):
            differences["admin_up"] = {"configured": self.configured_admin_up,
                                       "actual": self.admin_up}
        if (self.oper_up and self.configured_speed_mbps is not None
                and self.speed_mbps is not None and self.configured_speed_mbps != self.speed_mbps):
            differences["speed_mbps"] = {"configured": self.configured_speed_mbps,
                                         "actual": self.speed_mbps}
        if self.configured_fec is not None and self.configured_fec != self.fec:
            differences["fec"] = {"configured": self.configured_fec, "actual": self.fec}
        return differences


@dataclass(frozen=True)
class PortCounters:
    """Cumulative counters of one port. `pfc_rx`/`pfc_tx` map priority -> pause frames;
    `ecn_marked` maps queue index -> ECN-marked packets (SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS).

    A counter the switch does not report (the hash or the field is absent) is None, as portstat
    prints N/A for it; it is never read as 0, which would look like a reset."""

    name: str
    in_octets: int | None
    out_octets: int | None
    in_packets: int | None = None
    out_packets: int | None = None
    in_errors: int | None = None
    out_errors: int | None = None
    in_discards: int | None = None
    out_discards: int | None = None
    pfc_rx: dict[int, int | None] = field(default_factory=dict)
    pfc_tx: dict[int, int | None] = field(default_factory=dict)
    ecn_marked: dict[int, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterSnapshot:
    """Counters of the ports COUNTERS_PORT_NAME_MAP names. A port of the switch missing from
    the map is not in `ports`: the poller reports it (it compares with `ports()`).
    `ecn_counters` says whether the switch collects ECN-marked queue counters
    (fabric/drivers/sonic_flex_counters.py); when it does not, ports' `ecn_marked` are empty."""

    taken_at: datetime
    ports: tuple[PortCounters, ...]
    ecn_counters: str = "collected"


@dataclass(frozen=True)
class LldpNeighbor:
    local_port: str
    remote_system_name: str
    remote_port_id: str
    remote_port_description: str = ""
    remote_chassis_id: str = ""


@dataclass(frozen=True)
class BgpNeighbor:
    address: str
    remote_as: int
    state: str  # Established, Idle, Active, ...
    prefixes_received: int = 0
    uptime: str = ""


@dataclass(frozen=True)
class SwitchVersion:
    sonic_version: str
    platform: str
    hwsku: str
    asic: str
    serial: str = ""
    uptime: str = ""


@dataclass(frozen=True)
class QosProfile:
    """A RoCEv2 congestion-control profile: ECN/WRED on the lossless queue, PFC on its priority."""

    name: str
    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_mark_probability_percent: int
    pfc_priorities: tuple[int, ...]
    pfc_xoff_bytes: int
    pfc_xon_offset_bytes: int
    headroom_bytes: int
    shared_buffer_alpha: float


# Paper Table 15 (DESIGN.md section 8): the profile SAKURAONE ran in production.
SAKURAONE_ROCE_PROFILE = QosProfile(
    name="SAKURAONE_ROCE",
    ecn_min_bytes=2 * 1024 * 1024,
    ecn_max_bytes=10 * 1024 * 1024,
    ecn_mark_probability_percent=1,
    pfc_priorities=(3,),
    pfc_xoff_bytes=36_570_285,
    pfc_xon_offset_bytes=18_432,
    headroom_bytes=36 * 1024 * 1024,
    shared_buffer_alpha=1.0,
)


class FabricDriver(ABC):
    """One switch. Port names are SONiC names (`Ethernet0`, `Ethernet4`, ...)."""

    def __init__(self, target: SwitchTarget):
        self.target = target

    @abstractmethod
    def version(self) -> SwitchVersion: ...

    @abstractmethod
    def ports(self) -> list[PortStatus]: ...

    @abstractmethod
    def counters(self) -> CounterSnapshot: ...

    def ports_and_counters(self) -> tuple[list[PortStatus], CounterSnapshot]:
        """What one poll reads; drivers that can read both at once (in one round trip)
        override it."""
        return self.ports(), self.counters()

    @abstractmethod
    def lldp_neighbors(self) -> list[LldpNeighbor]: ...

    @abstractmethod
    def bgp_summary(self) -> list[BgpNeighbor]: ...

    @abstractmethod
    def set_port_admin(self, ports: Sequence[str], up: bool) -> None:
        """Shut down or start up the ports. Setting a port to the state it has succeeds."""

    @abstractmethod
    def apply_qos_profile(self, profile: QosProfile, ports: Sequence[str] | None = None) -> None:
        """Apply the ECN and PFC settings of `profile` (to every port when `ports` is None)."""

    @abstractmethod
    def save_config(self) -> None:
        """Persist the running configuration (`config save -y`)."""

    @abstractmethod
    def enable_ecn_counters(self) -> str:
        """Enable the WRED/ECN queue counter group (`counterpoll wredqueue enable`); the
        collection state read back afterwards."""

    def close(self) -> None:  # noqa: B027 - optional for drivers without connections
        """Release connections; a later call reconnects."""


def get_fabric_driver(target: SwitchTarget) -> FabricDriver:
    """A driver of the class named in settings.FABRIC_DRIVER for `target`."""
    module_name, _, class_name = settings.FABRIC_DRIVER.rpartition(".")
    driver_class = getattr(importlib.import_module(module_name), class_name)
    return driver_class(target)

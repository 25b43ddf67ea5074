"""Declarative description of the switches to emulate, loadable from JSON.

A spec file is either a list of switch objects or `{"switches": [...]}`; each object has the
fields of `SwitchSpec`, with `neighbors` and `bgp_peers` as lists of objects.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

ROLES = ("leaf", "spine", "storage", "management")
_HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value}")


@dataclass
class NeighborSpec:
    """What is cabled to one local port: the link peer and what its LLDP agent advertises.

    `port_id`, `port_desc` and `chassis_id` default to what the peer would send: when the
    peer is another emulated switch the fabric fills in its alias, port name and base MAC
    (SONiC's lldpmgrd advertises the alias as a locally assigned port id); otherwise the port
    id is `peer_port` and the chassis id a MAC derived from `peer_name`.
    """

    port: str
    peer_name: str
    peer_port: str
    port_id: str | None = None
    port_desc: str | None = None
    chassis_id: str | None = None
    system_description: str = ""
    management_address: str = ""
    lldp: bool = True  # False: the peer runs no LLDP agent, the link still comes up
    link_up: bool = True  # False: the cable is cut, the port stays oper down
    utilization: float | None = None  # target load on this port; None: the switch default

    def __post_init__(self) -> None:
        if self.utilization is not None:
            _check_fraction(f"utilization of {self.port}", self.utilization)


@dataclass
class BgpPeerSpec:
    """One BGP neighbor as `show bgp ipv4 summary json` reports it."""

    address: str
    remote_as: int
    hostname: str = ""
    port: str | None = None  # the local port the session rides on: it drops when that port does
    state: str = "Established"
    prefixes_received: int = 0
    prefixes_sent: int = 0


@dataclass
class SwitchSpec:
    """One emulated Edgecore AIS800-64O running SONiC.

    Ports with a neighbor start admin up, every other port admin down (the YANG default).
    `breakout` names 800G cages (e.g. "Ethernet0") that run as 2x400G. `response_delay` and
    `unreachable` are fault injections for the SSH server.
    """

    hostname: str
    role: str = "leaf"
    breakout: list[str] = field(default_factory=list)
    neighbors: list[NeighborSpec] = field(default_factory=list)
    bgp_asn: int = 65100
    router_id: str = "10.1.0.1"
    bgp_peers: list[BgpPeerSpec] = field(default_factory=list)
    management_address: str = ""
    serial_number: str = ""
    utilization: float = 0.3
    seed: int | None = None
    response_delay: float = 0.0
    unreachable: bool = False
    # DEVICE_METADATA buffer_model: "traditional" or "dynamic" (lossless headroom calculated by
    # buffermgrd into APPL_DB). `lossless_buffer_profile` names the one profile a platform
    # template binds every lossless PG to (e.g. ingress_lossless_profile); empty: buffermgrd's
    # per-speed pg_lossless_<speed>_5m_profile.
    buffer_model: str = "traditional"
    lossless_buffer_profile: str = ""
    # ECN-marked queue counters: "enabled" (FLEX_COUNTER_TABLE|WRED_ECN_QUEUE on at boot),
    # "disabled" (the image's default: `counterpoll wredqueue enable` turns them on) or
    # "unsupported" (an image before 202505, without the WRED_ECN_QUEUE group).
    ecn_queue_counters: str = "enabled"

    def __post_init__(self) -> None:
        if not _HOSTNAME.match(self.hostname):
            raise ValueError(f"invalid hostname {self.hostname!r}")
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {self.role!r}")
        _check_fraction(f"utilization of {self.hostname}", self.utilization)
        if self.buffer_model not in ("traditional", "dynamic"):
            raise ValueError(f"buffer_model must be traditional or dynamic, "
                             f"got {self.buffer_model!r}")
        if self.ecn_queue_counters not in ("enabled", "disabled", "unsupported"):
            raise ValueError("ecn_queue_counters must be enabled, disabled or unsupported, "
                             f"got {self.ecn_queue_counters!r}")
        if self.response_delay < 0:
            raise ValueError("response_delay must not be negative")
        cabled = [neighbor.port for neighbor in self.neighbors]
        doubled = sorted({port for port in cabled if cabled.count(port) > 1})
        if doubled:
            raise ValueError(f"{self.hostname}: more than one neighbor on {', '.join(doubled)}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SwitchSpec:
        """Build a spec from parsed JSON, rejecting unknown fields."""
        values = _known_fields(cls, data)
        values["neighbors"] = [
            NeighborSpec(**_known_fields(NeighborSpec, item)) for item in data.get("neighbors", [])
        ]
        values["bgp_peers"] = [
            BgpPeerSpec(**_known_fields(BgpPeerSpec, item)) for item in data.get("bgp_peers", [])
        ]
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {item.name for item in fields(cls)}
    unknown = set(data).difference(names)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} field(s): {', '.join(sorted(unknown))}")
    return dict(data)


def load_specs(path: str | Path) -> list[SwitchSpec]:
    """Read a JSON spec file: a list of switches or an object with a `switches` list."""
    data = json.loads(Path(path).read_text())
    items = data["switches"] if isinstance(data, dict) else data
    specs = [SwitchSpec.from_dict(item) for item in items]
    names = [spec.hostname for spec in specs]
    if len(set(names)) != len(names):
        raise ValueError("hostnames in a spec file must be unique")
    return specs


def generic_specs(count: int) -> list[SwitchSpec]:
    """`count` unwired leaf switches sw01, sw02, ... (for `--switches N`)."""
    return [
        SwitchSpec(hostname=f"sw{number:02d}", router_id=f"10.1.0.{number}")
        for number in range(1, count + 1)
    ]

"""The plan a topology spec expands into: plain rows, no database, ready to diff and write."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

# A cable end in a plan: ("nic", hostname, device) or ("port", switch hostname, port name).
End = tuple[str, str, str]


@dataclass(slots=True)
class PodPlan:
    name: str
    description: str = ""


@dataclass(slots=True)
class RackPlan:
    name: str
    pod: str


@dataclass(slots=True)
class NodePlan:
    hostname: str
    pod: str
    rack: str | None
    status: str
    serial: str
    model: str
    cpu_model: str
    cpu_count: int
    memory_gb: int
    disks: list
    bmc_address: str | None = None
    bmc_system_id: str = ""
    bmc_credentials_ref: str = ""


@dataclass(slots=True)
class GpuPlan:
    hostname: str
    index: int
    uuid: str
    serial: str
    model: str
    pci_bus_id: str


@dataclass(slots=True)
class NicPlan:
    hostname: str
    device: str
    netdev: str
    mac: str
    role: str
    rail: int | None
    affinity_gpu_index: int | None
    affinity_kind: str
    speed_gbps: int
    bond_members: list


@dataclass(slots=True)
class SwitchPlan:
    hostname: str
    role: str
    pod: str | None
    rail: int | None
    status: str
    model: str
    asic: str
    nos: str
    nos_version: str
    management_address: str | None
    credentials_ref: str
    port_count: int  # front-panel cages
    template: str
    group: str


@dataclass(slots=True)
class PortPlan:
    switch: str
    name: str
    alias: str
    index: int
    speed_gbps: int
    lanes: int
    breakout_mode: str = ""
    parent: str | None = None  # name of the broken-out cage this half belongs to


@dataclass(slots=True)
class CablePlan:
    a: End
    b: End
    type: str
    length_m: Decimal | None
    status: str
    rule: str  # the wiring rule's location, for error messages


@dataclass
class Plan:
    name: str
    scale: int
    pods: list[PodPlan] = field(default_factory=list)
    racks: list[RackPlan] = field(default_factory=list)
    nodes: list[NodePlan] = field(default_factory=list)
    gpus: list[GpuPlan] = field(default_factory=list)
    nics: list[NicPlan] = field(default_factory=list)
    switches: list[SwitchPlan] = field(default_factory=list)
    ports: list[PortPlan] = field(default_factory=list)
    cables: list[CablePlan] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "pods": len(self.pods),
            "racks": len(self.racks),
            "nodes": len(self.nodes),
            "gpus": len(self.gpus),
            "nics": len(self.nics),
            "switches": len(self.switches),
            "ports": len(self.ports),
            "cables": len(self.cables),
        }

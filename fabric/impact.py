"""Reads for switch actions: what shutting a switch's ports would cut off (the blast radius)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from inventory.cable_trace import NodeBehindPort, nodes_behind_switch
from inventory.hostlist import compress_hostlist
from inventory.models import Switch


@dataclass(frozen=True)
class AffectedLink:
    port: str
    node: str
    node_slurm_state: str  # as last synced from Slurm; blank until the jobs app syncs it
    nic: str
    rail: int | None
    cable_id: int
    cable_label: str


@dataclass(frozen=True)
class BlastRadius:
    """The nodes, rails and cables behind some ports of one switch."""

    switch: str
    ports: tuple[str, ...]
    nodes: tuple[str, ...]
    rails: tuple[int, ...]
    links: tuple[AffectedLink, ...]

    @property
    def nodes_hostlist(self) -> str:
        return compress_hostlist(list(self.nodes)) if self.nodes else ""

    def as_dict(self) -> dict:
        return {**asdict(self), "nodes_hostlist": self.nodes_hostlist}


def blast_radius(*, switch: Switch, ports: Sequence[str] | None = None) -> BlastRadius:
    """What sits behind `ports` of `switch` (every host-facing port when None); two queries."""
    rows = nodes_behind_switch(switch)
    if ports is not None:
        wanted = set(ports)
        rows = [row for row in rows if row.port.name in wanted]
    return _radius(switch, rows, ports)


def host_facing_ports(switch: Switch) -> list[str]:
    """Ports of `switch` cabled to a node's NIC, in port order."""
    return list(dict.fromkeys(row.port.name for row in nodes_behind_switch(switch)))


def _radius(switch: Switch, rows: list[NodeBehindPort], ports: Sequence[str] | None) -> BlastRadius:
    selected = list(ports) if ports is not None else [row.port.name for row in rows]
    return BlastRadius(
        switch=switch.hostname,
        ports=tuple(dict.fromkeys(selected)),
        nodes=tuple(sorted({row.node.hostname for row in rows})),
        rails=tuple(sorted({row.rail for row in rows if row.rail is not None})),
        links=tuple(
            AffectedLink(
                port=row.port.name,
                node=row.node.hostname,
                node_slurm_state=row.node.slurm_state,
                nic=row.nic.device,
                rail=row.rail,
                cable_id=row.cable.pk,
                cable_label=row.cable.label,
            )
            for row in rows
        ),
    )

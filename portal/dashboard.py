"""Reads behind the dashboard's cluster view (issue 7): the node grid and its summary counts.

The grid is built from the same visibility rule as the inventory API (`visible_nodes`), so a
tenant admin's grid holds their allocations' nodes only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from inventory.models import GPU
from inventory.selectors import visible_nodes

# The grid's states, in legend order, with the letter each cell shows (colour is never alone).
GRID_STATES = {
    "idle": "I",
    "allocated": "A",
    "mixed": "M",
    "draining": "d",
    "drained": "D",
    "down": "X",
    "unknown": "?",
}
# Slurm's words (SlurmNodeState.display_state) that the grid shows as one of its states.
_STATE_ALIASES = {"not_responding": "down", "completing": "allocated", "": "unknown"}


def grid_state(slurm_state: str) -> str:
    """The grid state for a node's stored Slurm state."""
    state = _STATE_ALIASES.get(slurm_state, slurm_state)
    return state if state in GRID_STATES else "unknown"


@dataclass
class GridCell:
    node_id: int
    hostname: str
    state: str
    slurm_state: str
    reason: str
    gpus: int


@dataclass
class GridRack:
    name: str
    cells: list[GridCell] = field(default_factory=list)


@dataclass
class GridPod:
    name: str
    racks: list[GridRack] = field(default_factory=list)

    @property
    def node_count(self) -> int:
        return sum(len(rack.cells) for rack in self.racks)


@dataclass
class ClusterGrid:
    pods: list[GridPod]
    state_counts: dict[str, int]
    node_total: int
    gpu_total: int

    @property
    def legend(self) -> list[tuple[str, str, int]]:
        counts = self.state_counts
        return [(state, letter, counts.get(state, 0)) for state, letter in GRID_STATES.items()]


def cluster_grid(*, user) -> ClusterGrid:
    """Every node the user may see, grouped by pod and rack, in three queries."""
    nodes = (
        visible_nodes(user=user)
        .select_related("pod", "rack")
        .only(
            "id", "hostname", "slurm_state", "slurm_reason", "pod__name", "rack__name",
        )
        .order_by("pod__name", "rack__name", "hostname")
    )
    gpu_counts = Counter(
        GPU.objects.filter(node__in=visible_nodes(user=user)).values_list("node_id", flat=True)
    )
    pods: dict[str, GridPod] = {}
    racks: dict[tuple[str, str], GridRack] = {}
    state_counts: Counter[str] = Counter()
    for node in nodes:
        pod_name = node.pod.name if node.pod else "no pod"
        rack_name = node.rack.name if node.rack else "no rack"
        pod = pods.setdefault(pod_name, GridPod(pod_name))
        rack = racks.get((pod_name, rack_name))
        if rack is None:
            rack = racks[(pod_name, rack_name)] = GridRack(rack_name)
            pod.racks.append(rack)
        state = grid_state(node.slurm_state)
        state_counts[state] += 1
        rack.cells.append(
            GridCell(
                node_id=node.pk,
                hostname=node.hostname,
                state=state,
                slurm_state=node.slurm_state or "unknown",
                reason=node.slurm_reason,
                gpus=gpu_counts.get(node.pk, 0),
            )
        )
    return ClusterGrid(
        pods=list(pods.values()),
        state_counts=dict(state_counts),
        node_total=sum(state_counts.values()),
        gpu_total=sum(gpu_counts.values()),
    )

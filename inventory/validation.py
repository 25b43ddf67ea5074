"""Checks of the whole fleet's cabling against the fabric's rules, in five queries.

`validate_topology()` reads NICs, ports, switches, pods and active cables once each into plain
tuples and checks every rule in memory, so its cost does not grow in queries with the fleet.
Each `Violation` names its rule and the objects involved. Active means not decommissioned: a
planned or faulty cable still occupies its ends and still counts as designed capacity.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

from inventory.models import NIC, Cable, CableStatus, LifecycleStatus, Pod, Switch, SwitchPort
from inventory.revision import cached_by_revision

ERROR = "error"
WARNING = "warning"

RULES = {
    "rail": "Rail NIC r of a node lands on leaf r of the node's pod.",
    "storage_plane": "Storage NICs land on storage switches.",
    "bisection": "Each leaf has at least as much uplink capacity as downlink capacity.",
    "dangling": "Rail and storage NICs of nodes in service are cabled; no cable serves "
    "decommissioned hardware.",
    "double_cabled": "An end is in at most one active cable; a cable joins a NIC to a port or two "
    "switches, never two NICs, a switch to itself, or a broken-out cage.",
    "speed_mismatch": "Both ends of a cable run at the same speed (a breakout half counts at its "
    "share of the cage).",
    "leaf_spine_mesh": "Every leaf reaches every spine, with the same number of links to each.",
    "gpu_affinity": "A NIC's affine GPU is in the same node.",
}


@dataclass(frozen=True)
class Violation:
    rule: str
    severity: str
    message: str
    objects: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


class _Nic(NamedTuple):
    id: int
    node_id: int
    hostname: str
    pod_id: int | None
    node_status: str
    device: str
    role: str
    rail: int | None
    speed: int
    affinity_node_id: int | None


class _Port(NamedTuple):
    id: int
    switch_id: int
    name: str
    speed: int
    parent_id: int | None
    breakout_mode: str


class _Switch(NamedTuple):
    id: int
    hostname: str
    role: str
    pod_id: int | None
    rail: int | None
    status: str


class _Cable(NamedTuple):
    id: int
    status: str
    a: tuple[str, int]  # ("nic", id) or ("port", id)
    b: tuple[str, int]


class _Fleet:
    """Everything the rules look at, read in five queries."""

    def __init__(self):
        self.nics = {
            row[0]: _Nic(*row)
            for row in NIC.objects.values_list(
                "id",
                "node_id",
                "node__hostname",
                "node__pod_id",
                "node__status",
                "device",
                "role",
                "rail",
                "speed_gbps",
                "affinity_gpu__node_id",
            ).order_by("node__hostname_sort_key", "device")
        }
        self.ports = {
            row[0]: _Port(*row)
            for row in SwitchPort.objects.values_list(
                "id", "switch_id", "name", "speed_gbps", "breakout_parent_id", "breakout_mode"
            ).order_by()
        }
        self.switches = {
            row[0]: _Switch(*row)
            for row in Switch.objects.values_list(
                "id", "hostname", "role", "pod_id", "rail", "status"
            ).order_by("hostname_sort_key", "hostname")
        }
        self.pods = dict(Pod.objects.values_list("id", "name"))
        self.cables = [
            _Cable(
                pk,
                status,
                ("nic", a_nic) if a_nic else ("port", a_port),
                ("nic", b_nic) if b_nic else ("port", b_port),
            )
            for pk, status, a_nic, a_port, b_nic, b_port in Cable.objects.exclude(
                status=CableStatus.DECOMMISSIONED
            )
            .values_list("id", "status", "a_nic_id", "a_port_id", "b_nic_id", "b_port_id")
            .order_by("id")
        ]
        self.children = Counter(port.parent_id for port in self.ports.values() if port.parent_id)
        # A breakout half carries its share of the cage, whatever speed it is recorded at.
        self.port_speed = {}
        for port in self.ports.values():
            parent = self.ports.get(port.parent_id) if port.parent_id else None
            share = parent.speed // max(self.children[parent.id], 1) if parent else port.speed
            self.port_speed[port.id] = min(port.speed, share)
        # End -> the cables it is in (more than one is itself a violation).
        self.cables_at: dict[tuple[str, int], list[_Cable]] = defaultdict(list)
        for cable in self.cables:
            self.cables_at[cable.a].append(cable)
            if cable.b != cable.a:
                self.cables_at[cable.b].append(cable)

    def describe(self, end: tuple[str, int]) -> tuple[str, dict[str, str]]:
        """A readable name for a cable end and the object references naming it."""
        kind, pk = end
        if kind == "nic":
            nic = self.nics[pk]
            return f"{nic.hostname} {nic.device}", {"node": nic.hostname, "nic": nic.device}
        port = self.ports[pk]
        switch = self.switches[port.switch_id]
        return f"{switch.hostname} {port.name}", {"switch": switch.hostname, "port": port.name}

    def effective_speed(self, end: tuple[str, int]) -> int:
        kind, pk = end
        return self.nics[pk].speed if kind == "nic" else self.port_speed[pk]

    def nic_and_port(self, cable: _Cable) -> tuple[_Nic, _Port] | None:
        ends = {cable.a[0]: cable.a[1], cable.b[0]: cable.b[1]}
        if set(ends) != {"nic", "port"}:
            return None
        return self.nics[ends["nic"]], self.ports[ends["port"]]

    def switch_of(self, end: tuple[str, int]) -> _Switch | None:
        kind, pk = end
        return self.switches[self.ports[pk].switch_id] if kind == "port" else None


def _cable_refs(fleet: _Fleet, cable: _Cable) -> dict[str, str]:
    refs = {"cable": str(cable.id)}
    for end in (cable.a, cable.b):
        _, end_refs = fleet.describe(end)
        for key, value in end_refs.items():
            refs.setdefault(key, value)
            if refs[key] != value:
                refs[f"{key}_b"] = value
    return refs


def _check_rail_and_storage(fleet: _Fleet) -> list[Violation]:
    violations = []
    storage_roles = {NIC.Role.STORAGE, NIC.Role.STORAGE_BOND}
    for cable in fleet.cables:
        pair = fleet.nic_and_port(cable)
        if pair is None:
            continue
        nic, port = pair
        switch = fleet.switches[port.switch_id]
        where = f"{nic.hostname} {nic.device}"
        lands = f"lands on {switch.hostname} {port.name}"
        refs = {
            "node": nic.hostname,
            "nic": nic.device,
            "switch": switch.hostname,
            "port": port.name,
            "cable": str(cable.id),
        }
        if nic.role == NIC.Role.RAIL:
            node_pod = fleet.pods.get(nic.pod_id, "no pod")
            problem = None
            if switch.role != Switch.Role.LEAF:
                problem = f"a {switch.role} switch, not a leaf"
            elif switch.pod_id != nic.pod_id:
                problem = (
                    f"a leaf of pod {fleet.pods.get(switch.pod_id, 'none')}, "
                    f"but {nic.hostname} is in pod {node_pod}"
                )
            elif switch.rail != nic.rail:
                problem = f"the leaf of rail {switch.rail}, not rail {nic.rail}"
            if problem:
                violations.append(
                    Violation("rail", ERROR, f"{where} (rail {nic.rail}) {lands}, {problem}", refs)
                )
        elif nic.role in storage_roles and switch.role != Switch.Role.STORAGE:
            violations.append(
                Violation(
                    "storage_plane",
                    ERROR,
                    f"{where} ({nic.role}) {lands}, a {switch.role} switch, not a storage switch",
                    refs,
                )
            )
        elif nic.role not in storage_roles and switch.role == Switch.Role.STORAGE:
            violations.append(
                Violation(
                    "storage_plane",
                    WARNING,
                    f"{where} ({nic.role}) {lands}, a storage switch",
                    refs,
                )
            )
    return violations


def _check_bisection(fleet: _Fleet) -> list[Violation]:
    down: Counter[int] = Counter()
    up: Counter[int] = Counter()
    for cable in fleet.cables:
        for near, far in ((cable.a, cable.b), (cable.b, cable.a)):
            switch = fleet.switch_of(near)
            if switch is None or switch.role != Switch.Role.LEAF:
                continue
            speed = min(fleet.effective_speed(near), fleet.effective_speed(far))
            far_switch = fleet.switch_of(far)
            if far[0] == "nic":
                down[switch.id] += speed
            elif far_switch is not None and far_switch.role == Switch.Role.SPINE:
                up[switch.id] += speed
    violations = []
    for switch_id, downlink in sorted(down.items()):
        uplink = up[switch_id]
        if uplink < downlink:
            switch = fleet.switches[switch_id]
            violations.append(
                Violation(
                    "bisection",
                    ERROR,
                    f"{switch.hostname} has {uplink:,} Gb/s up to the spines for {downlink:,} Gb/s "
                    f"down to nodes ({downlink - uplink:,} Gb/s short of full bisection)",
                    {"switch": switch.hostname},
                )
            )
    return violations


def _check_dangling(fleet: _Fleet) -> list[Violation]:
    must_be_cabled = {NIC.Role.RAIL, NIC.Role.STORAGE, NIC.Role.STORAGE_BOND}
    violations = []
    for nic in fleet.nics.values():
        if nic.role not in must_be_cabled or nic.node_status == LifecycleStatus.DECOMMISSIONED:
            continue
        if not fleet.cables_at.get(("nic", nic.id)):
            rail = f" (rail {nic.rail})" if nic.rail is not None else f" ({nic.role})"
            violations.append(
                Violation(
                    "dangling",
                    ERROR,
                    f"{nic.hostname} {nic.device}{rail} is not cabled",
                    {"node": nic.hostname, "nic": nic.device},
                )
            )
    for cable in fleet.cables:
        for end in (cable.a, cable.b):
            kind, pk = end
            if kind == "nic":
                retired = fleet.nics[pk].node_status == LifecycleStatus.DECOMMISSIONED
                owner = fleet.nics[pk].hostname
            else:
                switch = fleet.switches[fleet.ports[pk].switch_id]
                retired = switch.status == LifecycleStatus.DECOMMISSIONED
                owner = switch.hostname
            if retired:
                name, _ = fleet.describe(end)
                violations.append(
                    Violation(
                        "dangling",
                        WARNING,
                        f"cable #{cable.id} ({cable.status}) still serves {name}, and {owner} "
                        "is decommissioned",
                        _cable_refs(fleet, cable),
                    )
                )
    return violations


def _check_double_cabled(fleet: _Fleet) -> list[Violation]:
    violations = []
    for end, cables in fleet.cables_at.items():
        if len(cables) > 1:
            name, refs = fleet.describe(end)
            listed = ", ".join(f"#{cable.id} ({cable.status})" for cable in cables)
            violations.append(
                Violation(
                    "double_cabled",
                    ERROR,
                    f"{name} is in {len(cables)} active cables: {listed}",
                    {**refs, "cables": ",".join(str(cable.id) for cable in cables)},
                )
            )
    for cable in fleet.cables:
        a_name, _ = fleet.describe(cable.a)
        b_name, _ = fleet.describe(cable.b)
        problem = None
        if cable.a[0] == cable.b[0] == "nic":
            problem = "joins two NICs; a cable runs from a NIC to a switch port"
        elif cable.a[0] == cable.b[0] == "port" and (
            fleet.switch_of(cable.a) == fleet.switch_of(cable.b)
        ):
            problem = "loops a switch back to itself"
        for end in (cable.a, cable.b):
            if end[0] == "port" and fleet.children[end[1]]:
                port = fleet.ports[end[1]]
                mode = port.breakout_mode or "into halves"
                problem = f"lands on {port.name}, a cage broken out {mode}; cable its halves"
        if problem:
            violations.append(
                Violation(
                    "double_cabled",
                    ERROR,
                    f"cable #{cable.id} {a_name} <-> {b_name} {problem}",
                    _cable_refs(fleet, cable),
                )
            )
    return violations


def _check_speeds(fleet: _Fleet) -> list[Violation]:
    violations = []
    for cable in fleet.cables:
        a_speed, b_speed = fleet.effective_speed(cable.a), fleet.effective_speed(cable.b)
        if a_speed != b_speed:
            a_name, _ = fleet.describe(cable.a)
            b_name, _ = fleet.describe(cable.b)
            violations.append(
                Violation(
                    "speed_mismatch",
                    ERROR,
                    f"cable #{cable.id} joins {a_name} at {a_speed}G to {b_name} at {b_speed}G",
                    _cable_refs(fleet, cable),
                )
            )
    return violations


def _check_leaf_spine_mesh(fleet: _Fleet) -> list[Violation]:
    leafs = [s for s in fleet.switches.values() if s.role == Switch.Role.LEAF]
    spines = [s for s in fleet.switches.values() if s.role == Switch.Role.SPINE]
    if not leafs or not spines:
        return []
    links: Counter[tuple[int, int]] = Counter()
    for cable in fleet.cables:
        a_switch, b_switch = fleet.switch_of(cable.a), fleet.switch_of(cable.b)
        if a_switch is None or b_switch is None:
            continue
        if a_switch.role == Switch.Role.SPINE:
            a_switch, b_switch = b_switch, a_switch
        if a_switch.role == Switch.Role.LEAF and b_switch.role == Switch.Role.SPINE:
            links[(a_switch.id, b_switch.id)] += 1
    violations = []
    for leaf in leafs:
        counts = {spine.hostname: links[(leaf.id, spine.id)] for spine in spines}
        for spine, count in counts.items():
            if count == 0:
                violations.append(
                    Violation(
                        "leaf_spine_mesh",
                        ERROR,
                        f"{leaf.hostname} has no link to {spine}",
                        {"switch": leaf.hostname, "spine": spine},
                    )
                )
        present = {count for count in counts.values() if count}
        if len(present) > 1:
            usual = Counter(counts.values()).most_common(1)[0][0]
            odd = ", ".join(
                f"{count} to {spine}" for spine, count in counts.items() if count not in (0, usual)
            )
            if odd:
                violations.append(
                    Violation(
                        "leaf_spine_mesh",
                        WARNING,
                        f"{leaf.hostname} has {usual} links to most spines but {odd}: "
                        "ECMP will be uneven",
                        {"switch": leaf.hostname},
                    )
                )
    return violations


def _check_gpu_affinity(fleet: _Fleet) -> list[Violation]:
    return [
        Violation(
            "gpu_affinity",
            ERROR,
            f"{nic.hostname} {nic.device} is affine to a GPU of another node",
            {"node": nic.hostname, "nic": nic.device},
        )
        for nic in fleet.nics.values()
        if nic.affinity_node_id is not None and nic.affinity_node_id != nic.node_id
    ]


CHECKS = (
    _check_rail_and_storage,
    _check_bisection,
    _check_dangling,
    _check_double_cabled,
    _check_speeds,
    _check_leaf_spine_mesh,
    _check_gpu_affinity,
)


def validate_topology(*, rules: set[str] | None = None) -> list[Violation]:
    """Every violation of the fabric rules (`RULES`) in the whole fleet, errors first.

    `rules` keeps only violations of those rules. Runs a constant number of queries (five).
    """
    fleet = _Fleet()
    violations = [violation for check in CHECKS for violation in check(fleet)]
    if rules is not None:
        violations = [violation for violation in violations if violation.rule in rules]
    order = {rule: position for position, rule in enumerate(RULES)}
    return sorted(
        violations,
        key=lambda v: (v.severity != ERROR, order.get(v.rule, len(order))),
    )


def current_violations(*, rules: set[str] | None = None) -> list[Violation]:
    """`validate_topology()` for the inventory as it is now, computed once per change of it
    (inventory/revision.py) rather than once per page view: the pages and the API read this;
    `manage.py validate_topology` always checks afresh."""
    everything = cached_by_revision("validation", validate_topology)
    if rules is None:
        return everything
    return [violation for violation in everything if violation.rule in rules]

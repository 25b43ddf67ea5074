"""Cable trace: `trace_from_nic`, `trace_from_port` and `nodes_behind_switch` follow cables
through the fabric (NIC -> cable -> switch port -> switch -> uplinks -> spines) in at most four
queries whatever the fleet's size.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import NamedTuple

from django.db.models import Q, QuerySet

from inventory.models import NIC, Cable, Node, Switch, SwitchPort
from inventory.selectors import active_cable_ids_at, active_cables, cables_with_ends
from portal.planner import planned_as_written


@dataclass(frozen=True)
class TraceSwitch:
    id: int
    hostname: str
    role: str
    pod: str | None
    rail: int | None


@dataclass(frozen=True)
class TracePort:
    id: int
    name: str
    speed_gbps: int
    breakout_parent: str | None
    switch: TraceSwitch


@dataclass(frozen=True)
class TraceNic:
    id: int
    node: str
    device: str
    role: str
    rail: int | None
    speed_gbps: int


@dataclass(frozen=True)
class TraceCable:
    id: int
    type: str
    status: str
    length_m: float | None


@dataclass(frozen=True)
class TraceUplink:
    local_port: TracePort  # on the leaf (or whichever switch the trace reached)
    cable: TraceCable
    remote_port: TracePort  # on a spine


@dataclass(frozen=True)
class Trace:
    """The path NIC -> cable -> switch port -> switch -> uplinks -> spines.

    `port` and `switch` are where the NIC lands (a leaf for a rail NIC, a storage switch for a
    storage NIC). A trace from an uplink or spine port has no NIC and the one uplink it names.
    `notes` say where and why a path stops early.
    """

    nic: TraceNic | None
    cable: TraceCable | None
    port: TracePort | None
    switch: TraceSwitch | None
    uplinks: tuple[TraceUplink, ...]
    spines: tuple[TraceSwitch, ...]
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return _plain(self)


def _nic_end_fields(side: str) -> list[str]:
    nic = f"{side}_nic"
    return [
        nic,
        f"{nic}__node",
        f"{nic}__device",
        f"{nic}__role",
        f"{nic}__rail",
        f"{nic}__speed_gbps",
        f"{nic}__node__hostname",
    ]


def _port_end_fields(side: str) -> list[str]:
    port = f"{side}_port"
    return [
        port,
        f"{port}__name",
        f"{port}__speed_gbps",
        f"{port}__switch",
        f"{port}__breakout_parent",
        f"{port}__breakout_parent__name",
        f"{port}__switch__hostname",
        f"{port}__switch__role",
        f"{port}__switch__rail",
        f"{port}__switch__pod",
        f"{port}__switch__pod__name",
    ]


# A trace describes ends by name only; the full rows of the ~12 joined tables were ~10 kB each.
TRACE_CABLE_FIELDS = ["type", "status", "length_m", *_nic_end_fields("a"), *_nic_end_fields("b"),
                      *_port_end_fields("a"), *_port_end_fields("b")]
# An uplink has a switch port at both ends: no NIC or node to join in.
UPLINK_CABLE_FIELDS = ["type", "status", "length_m", *_port_end_fields("a"),
                       *_port_end_fields("b")]


def _trace_cables(queryset: QuerySet[Cable]) -> QuerySet[Cable]:
    return cables_with_ends(queryset).only(*TRACE_CABLE_FIELDS)


def _plain(value):
    """A trace's dataclasses as dicts and lists. dataclasses.asdict deep-copies every leaf,
    which was a tenth of a trace request; the leaves here are immutable."""
    if is_dataclass(value):
        return {field.name: _plain(getattr(value, field.name)) for field in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    return value


def _trace_switch(switch: Switch) -> TraceSwitch:
    pod = switch.pod.name if switch.pod_id else None
    return TraceSwitch(switch.pk, switch.hostname, switch.role, pod, switch.rail)


def _trace_port(port: SwitchPort) -> TracePort:
    parent = port.breakout_parent.name if port.breakout_parent_id else None
    return TracePort(port.pk, port.name, port.speed_gbps, parent, _trace_switch(port.switch))


def _trace_nic(nic: NIC) -> TraceNic:
    return TraceNic(nic.pk, nic.node.hostname, nic.device, nic.role, nic.rail, nic.speed_gbps)


def _trace_cable(cable: Cable) -> TraceCable:
    length = float(cable.length_m) if cable.length_m is not None else None
    return TraceCable(cable.pk, cable.type, cable.status, length)


def _far_end(cable: Cable, *, nic_id: int | None = None, port_id: int | None = None):
    """The (nic, port) at the other end of `cable` from the given NIC or port."""
    if (nic_id is not None and cable.a_nic_id == nic_id) or (
        port_id is not None and cable.a_port_id == port_id
    ):
        return cable.b_nic, cable.b_port
    return cable.a_nic, cable.a_port


def _uplink_cables(switch: Switch) -> QuerySet:
    """Active cables from `switch` to a spine port, both ends joined in, as rows of
    UPLINK_CABLE_FIELDS. Only the uplinks are loaded: a leaf's 50 host cables would triple the
    rows a trace builds for nothing; and as plain rows: the 32 uplinks of a rail leaf were some
    290 model instances (cable, ports, switches, pods, breakout parents).

    The far end is checked on the joined port's switch, row by row after the index lookup of
    this switch's ports: a `port_id IN (every spine port)` subquery read every spine's ports in
    the fleet on each trace, so a trace grew with the fleet."""
    port_ids = list(SwitchPort.objects.filter(switch=switch).values_list("pk", flat=True))
    spine = Switch.Role.SPINE
    return (
        active_cables()
        .filter(
            Q(a_port_id__in=port_ids, b_port__switch__role=spine)
            | Q(b_port_id__in=port_ids, a_port__switch__role=spine)
        )
        .order_by()  # _uplinks sorts by spine and port itself
        .values("id", *UPLINK_CABLE_FIELDS)
    )


def _uplinks(switch: Switch) -> tuple[tuple[TraceUplink, ...], tuple[TraceSwitch, ...]]:
    """Every active cable from `switch` to a spine, in two queries."""
    uplinks = []
    for row in _uplink_cables(switch):
        local, remote = ("a", "b") if row["a_port__switch"] == switch.pk else ("b", "a")
        spine = row[f"{remote}_port__switch__role"] == Switch.Role.SPINE
        if row[f"{remote}_port"] is None or not spine:
            continue
        length = row["length_m"]
        cable = TraceCable(row["id"], row["type"], row["status"],
                           float(length) if length is not None else None)
        uplinks.append(
            TraceUplink(_trace_port_row(row, local), cable, _trace_port_row(row, remote))
        )
    uplinks.sort(key=lambda u: (u.remote_port.switch.hostname, u.local_port.name))
    spines = {uplink.remote_port.switch.id: uplink.remote_port.switch for uplink in uplinks}
    return tuple(uplinks), tuple(sorted(spines.values(), key=lambda s: s.hostname))


def _trace_port_row(row: dict, side: str) -> TracePort:
    """_trace_port of one end of a row of UPLINK_CABLE_FIELDS."""
    port = f"{side}_port"
    pod = row[f"{port}__switch__pod__name"] if row[f"{port}__switch__pod"] else None
    switch = TraceSwitch(row[f"{port}__switch"], row[f"{port}__switch__hostname"],
                         row[f"{port}__switch__role"], pod, row[f"{port}__switch__rail"])
    parent = row[f"{port}__breakout_parent__name"] if row[f"{port}__breakout_parent"] else None
    return TracePort(row[port], row[f"{port}__name"], row[f"{port}__speed_gbps"], parent, switch)


@planned_as_written  # both ends of a cable: 13 tables, planned longer than they take to read
def trace_from_nic(nic: NIC) -> Trace:
    """Follow a NIC's active cable to its switch port, the switch, and that switch's uplinks to
    the spines. Three queries (four when the NIC's node is not loaded yet)."""
    if not NIC._meta.get_field("node").is_cached(nic):
        nic = NIC.objects.select_related("node").get(pk=nic.pk)
    start = _trace_nic(nic)
    cable = _trace_cables(active_cables().filter(Q(a_nic=nic) | Q(b_nic=nic))).first()
    if cable is None:
        return Trace(
            start, None, None, None, (), (), (f"{start.node} {start.device} is not cabled",)
        )
    far_nic, far_port = _far_end(cable, nic_id=nic.pk)
    if far_port is None:
        note = f"cable #{cable.pk} ends at {far_nic.node.hostname} {far_nic.device}, a NIC"
        return Trace(start, _trace_cable(cable), None, None, (), (), (note,))
    uplinks, spines = _uplinks(far_port.switch)
    notes = ()
    if not uplinks and far_port.switch.role == Switch.Role.LEAF:
        notes = (f"{far_port.switch.hostname} has no active uplinks",)
    return Trace(
        start,
        _trace_cable(cable),
        _trace_port(far_port),
        _trace_switch(far_port.switch),
        uplinks,
        spines,
        notes,
    )


@planned_as_written
def trace_from_port(port: SwitchPort) -> Trace:
    """Trace through a switch port: a host-facing port gives the NIC behind it and its switch's
    uplinks; an uplink (leaf side or spine side) gives that one leaf-to-spine link. At most four
    queries."""
    port = SwitchPort.objects.select_related("switch__pod", "breakout_parent").get(pk=port.pk)
    if port.breakout_mode:
        halves = ", ".join(port.breakout_children.order_by("index").values_list("name", flat=True))
        note = f"{port.name} is a cage broken out {port.breakout_mode}; trace {halves}"
        return Trace(None, None, _trace_port(port), _trace_switch(port.switch), (), (), (note,))
    cable = cables_with_ends(active_cables().filter(Q(a_port=port) | Q(b_port=port))).first()
    if cable is None:
        uplinks, spines = _uplinks(port.switch)
        note = f"{port.switch.hostname} {port.name} is not cabled"
        return Trace(
            None, None, _trace_port(port), _trace_switch(port.switch), uplinks, spines, (note,)
        )
    far_nic, far_port = _far_end(cable, port_id=port.pk)
    if far_nic is not None:
        uplinks, spines = _uplinks(port.switch)
        return Trace(
            _trace_nic(far_nic),
            _trace_cable(cable),
            _trace_port(port),
            _trace_switch(port.switch),
            uplinks,
            spines,
        )
    # A switch-to-switch link: orient it leaf (lower) -> spine (upper).
    near, far = _trace_port(port), _trace_port(far_port)
    if near.switch.role == Switch.Role.SPINE and far.switch.role != Switch.Role.SPINE:
        near, far = far, near
    uplink = TraceUplink(near, _trace_cable(cable), far)
    return Trace(None, None, None, near.switch, (uplink,), (far.switch,))


class NodeBehindPort(NamedTuple):
    port: SwitchPort
    node: Node
    nic: NIC
    rail: int | None
    cable: Cable


def nodes_behind_switch(switch: Switch) -> list[NodeBehindPort]:
    """Each port of `switch` with the node, NIC and rail on its far end, in port order; two
    queries (one for a switch with no node behind it). Only the cables to a NIC are loaded: a
    fleet's spine has thousands of cables to leafs and none to a node."""
    ids = active_cable_ids_at(SwitchPort.objects.filter(switch=switch).values("pk"),
                              far_end="nic")
    rows = []
    for cable in cables_with_ends(Cable.objects.filter(pk__in=ids)) if ids else ():
        if cable.a_port_id and cable.a_port.switch_id == switch.pk:
            port, nic = cable.a_port, cable.b_nic
        else:
            port, nic = cable.b_port, cable.a_nic
        if nic is not None:
            rows.append(NodeBehindPort(port, nic.node, nic, nic.rail, cable))
    rows.sort(key=lambda row: (row.port.index, row.port.name))
    return rows

"""Reads of the inventory, restricted by who asks, in a number of queries that does not grow.

Role rules (DESIGN.md section 6): admins, operators, on-call and viewers see the whole cluster's
hardware; a tenant admin sees only the nodes in their tenant's current allocations, with those
nodes' GPUs, NICs and cables, and no switches. Allocations are tenant-private: viewers see none.

The cable trace (following cables through the fabric) lives in inventory/cable_trace.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Value,
    When,
)

from inventory.hostlist import compress_hostlist, expand_hostlist
from inventory.models import (
    GPU,
    NIC,
    RAILS,
    Allocation,
    Cable,
    CableStatus,
    ComponentSwap,
    Node,
    ReservationStatus,
    SpareReservation,
    SpareStock,
    Switch,
    SwitchPort,
)
from portal.errors import InvalidInput, NotFound
from portal.models import Role
from portal.natural_sort import natural_key
from portal.roles import may

# -- visibility ------------------------------------------------------------------------------


def visible_nodes(*, user) -> QuerySet[Node]:
    """The nodes `user` may see: all for cluster-wide roles, the current allocations' for a
    tenant admin, none otherwise."""
    if may(user, "read_cluster"):
        return Node.objects.all()
    if user.role == Role.TENANT_ADMIN and user.tenant_id:
        allocated = Allocation.objects.current().filter(tenant_id=user.tenant_id)
        return Node.objects.filter(pk__in=allocated.values("nodes"))
    return Node.objects.none()


# -- reads for the inventory pages (node rail map, switch ports, fabric picture) ---------------


@dataclass(frozen=True)
class HardwareSearchResult:
    nodes: list[Node]
    gpus: list[GPU]
    nics: list[NIC]
    limit: int  # per kind; a list this long may have been cut short

    @property
    def truncated(self) -> bool:
        return self.limit in (len(self.nodes), len(self.gpus), len(self.nics))

    def __len__(self) -> int:
        return len(self.nodes) + len(self.gpus) + len(self.nics)


def hardware_search(*, user, query: str, limit: int = 50) -> HardwareSearchResult:
    """Nodes, GPUs and NICs `user` may see whose identifiers contain `query` (case-insensitive):
    hostname or serial; GPU UUID, serial or PCI bus id; NIC device, netdev or MAC. At most
    `limit` of each, in three queries. A MAC may be typed with dashes or in upper case."""
    text = query.strip()
    if len(text) < 2:
        raise InvalidInput({"q": ["Type at least two characters to search."]})
    mac = text.lower().replace("-", ":")
    nodes = visible_nodes(user=user)
    return HardwareSearchResult(
        nodes=list(
            nodes.filter(Q(hostname__icontains=text) | Q(serial__icontains=text))
            .select_related("pod", "rack")
            .order_by("hostname_sort_key", "hostname")[:limit]
        ),
        gpus=list(
            GPU.objects.filter(node__in=nodes)
            .filter(
                Q(uuid__icontains=text) | Q(serial__icontains=text) | Q(pci_bus_id__icontains=text)
            )
            .select_related("node")
            .order_by("node__hostname_sort_key", "index")[:limit]
        ),
        nics=list(
            NIC.objects.filter(node__in=nodes)
            .filter(Q(device__iexact=text) | Q(netdev__iexact=text) | Q(mac__icontains=mac))
            .select_related("node", "affinity_gpu")
            .order_by("node__hostname_sort_key", "device")[:limit]
        ),
        limit=limit,
    )


def switch_get(*, user, hostname: str) -> Switch:
    """One switch with its pod and rack; NotFound for a role that may not see the fabric."""
    switch = switch_list(user=user).filter(hostname=hostname).first()
    if switch is None:
        raise NotFound(f"No switch {hostname!r}.")
    return switch


class PortLink(NamedTuple):
    cable: Cable
    port: SwitchPort | None  # the far end, when it is another switch's port
    nic: NIC | None  # the far end, when it is a node's NIC


def port_link(port: SwitchPort) -> PortLink | None:
    """The active cable of a port loaded through `port_list`, and its far end."""
    for cable in getattr(port, "active_cables_as_a", []):
        return PortLink(cable, cable.b_port, cable.b_nic)
    for cable in getattr(port, "active_cables_as_b", []):
        return PortLink(cable, cable.a_port, cable.a_nic)
    return None


@dataclass(frozen=True)
class RailMapRow:
    """Where rail `rail` of a node should land (leaf `rail` of its pod) and where it does."""

    rail: int
    nic: NIC | None
    expected_leaf: Switch | None
    link: NicLink | None

    @property
    def leaf(self) -> Switch | None:
        return self.link.port.switch if self.link and self.link.port else None

    @property
    def verdict(self) -> str:
        """ok, missing (no rail NIC), uncabled, wrong_leaf (the rail rule is broken)."""
        if self.nic is None:
            return "missing"
        if self.link is None or self.link.port is None:
            return "uncabled"
        if self.expected_leaf is None or self.leaf.pk != self.expected_leaf.pk:
            return "wrong_leaf"
        return "ok"

    @property
    def link_state(self) -> str:
        """The leaf port as the last poll or port Action left it: `shut` (administratively
        down, whatever its link says), `up`, `down`, or `unknown` before any poll."""
        if self.link is None or self.link.port is None:
            return "none"
        if self.link.port.admin_status == SwitchPort.LinkStatus.DOWN:
            return "shut"
        return self.link.port.oper_status or "unknown"

    @property
    def carries_traffic(self) -> bool | None:
        """Whether the rail works: cabled by the rail rule and its link up; None while the link
        was never seen. A rail cabled right whose port is shut or down is not "ok", so the
        picture never says "ok" beside "down"."""
        if self.verdict != "ok":
            return False
        if self.link_state == "unknown":
            return None
        return self.link_state == "up"


def node_rail_map(node: Node) -> list[RailMapRow]:
    """Rails 0-7 of a node loaded by `node_get`: its rail NIC, the leaf the rail rule expects
    (leaf r of the node's pod) and the leaf port its cable reaches. One query (the pod's leafs)."""
    leafs = {}
    if node.pod_id:
        leafs = {
            leaf.rail: leaf
            for leaf in Switch.objects.filter(role=Switch.Role.LEAF, pod_id=node.pod_id)
        }
    by_rail = {nic.rail: nic for nic in node.nics.all() if nic.role == NIC.Role.RAIL}
    return [
        RailMapRow(
            rail,
            by_rail.get(rail),
            leafs.get(rail),
            nic_link(by_rail[rail]) if rail in by_rail else None,
        )
        for rail in range(RAILS)
    ]


@dataclass(frozen=True)
class FabricSwitch:
    id: int
    hostname: str
    pod: str | None
    rail: int | None
    status: str


@dataclass(frozen=True)
class FabricSummary:
    """The rail-optimised fabric in numbers: leafs per pod, spines, links per leaf-spine pair,
    nodes behind each leaf, and the nodes of each pod."""

    leafs_by_pod: dict[str, list[FabricSwitch]]
    spines: list[FabricSwitch]
    links: dict[tuple[int, int], int]  # (leaf id, spine id) -> active cables
    nodes_per_leaf: dict[int, int]  # leaf id -> distinct nodes cabled to it
    hostnames_by_pod: dict[str, list[str]]

    def uplinks(self, leaf_id: int) -> int:
        return sum(count for (leaf, _), count in self.links.items() if leaf == leaf_id)

    def only_pod(self, pod: str) -> FabricSummary:
        """The same fabric with one pod's leafs (and their links) only; spines stay."""
        leafs = self.leafs_by_pod.get(pod, [])
        ids = {leaf.id for leaf in leafs}
        return FabricSummary(
            {pod: leafs},
            self.spines,
            {pair: count for pair, count in self.links.items() if pair[0] in ids},
            {leaf: nodes for leaf, nodes in self.nodes_per_leaf.items() if leaf in ids},
            {pod: self.hostnames_by_pod.get(pod, [])},
        )


def fabric_summary() -> FabricSummary:
    """Counts for the topology picture in five queries, whatever the fleet's size."""
    switches = list(
        Switch.objects.filter(role__in=[Switch.Role.LEAF, Switch.Role.SPINE])
        .select_related("pod")
        .order_by("pod__name", "rail", "hostname")
    )
    role_of = {switch.pk: switch.role for switch in switches}
    leafs_by_pod: dict[str, list[FabricSwitch]] = {}
    spines = []
    for switch in switches:
        pod = switch.pod.name if switch.pod_id else None
        summary = FabricSwitch(switch.pk, switch.hostname, pod, switch.rail, switch.status)
        if switch.role == Switch.Role.LEAF:
            leafs_by_pod.setdefault(pod or "no pod", []).append(summary)
        else:
            spines.append(summary)
    spines.sort(key=lambda spine: natural_sort_key(spine.hostname))

    links: dict[tuple[int, int], int] = {}
    switch_pairs = (
        active_cables()
        .filter(a_port__isnull=False, b_port__isnull=False)
        .values_list("a_port__switch_id", "b_port__switch_id")
        .annotate(count=Count("id"))
        .order_by()
    )
    for a_switch, b_switch, count in switch_pairs:
        if role_of.get(a_switch) == Switch.Role.SPINE:
            a_switch, b_switch = b_switch, a_switch
        if role_of.get(a_switch) == Switch.Role.LEAF and role_of.get(b_switch) == Switch.Role.SPINE:
            links[(a_switch, b_switch)] = links.get((a_switch, b_switch), 0) + count

    nodes_per_leaf: dict[int, int] = {}
    for nic_side, port_side in (("a_nic", "b_port"), ("b_nic", "a_port")):
        rows = (
            active_cables()
            .filter(**{f"{nic_side}__isnull": False, f"{port_side}__switch__role": "leaf"})
            .values_list(f"{port_side}__switch_id")
            .annotate(nodes=Count(f"{nic_side}__node_id", distinct=True))
            .order_by()
        )
        for switch_id, nodes in rows:
            nodes_per_leaf[switch_id] = nodes_per_leaf.get(switch_id, 0) + nodes

    hostnames_by_pod: dict[str, list[str]] = {}
    for hostname, pod in Node.objects.values_list("hostname", "pod__name").order_by(
        "hostname_sort_key", "hostname"
    ):
        hostnames_by_pod.setdefault(pod or "no pod", []).append(hostname)
    # The database orders pod names as text (p1, p10, p2): the pages list p2 before p10.
    leafs_by_pod = dict(sorted(leafs_by_pod.items(), key=lambda item: natural_key(item[0])))
    return FabricSummary(leafs_by_pod, spines, links, nodes_per_leaf, hostnames_by_pod)


def natural_sort_key(name: str) -> tuple:
    """spine-2 before spine-10, mlx5_2 before mlx5_11 (the portal's one natural order)."""
    return natural_key(name)


def active_cables() -> QuerySet[Cable]:
    return Cable.objects.exclude(status=CableStatus.DECOMMISSIONED)


def active_cable_ids_at(port_ids, *, far_end: str | None = None) -> list[int]:
    """Ids of the active cables with an end on one of `port_ids` (a list or a subquery) whose
    other end is a NIC (`far_end="nic"`), a switch port ("port") or anything (None); one
    query. Each end is looked up through its own index and the two are united: an OR of both
    ends, or the ends' rows joined in, made PostgreSQL hash every port and NIC of the fleet
    first (3 s for a spine at scale 125, to find no cable to a NIC)."""
    cables = active_cables()
    a_side, b_side = cables.filter(a_port_id__in=port_ids), cables.filter(b_port_id__in=port_ids)
    if far_end is not None:
        a_side = a_side.filter(**{f"b_{far_end}__isnull": False})
        b_side = b_side.filter(**{f"a_{far_end}__isnull": False})
    # No ORDER BY in either half: SQLite refuses one inside a compound statement.
    return list(a_side.order_by().values_list("pk", flat=True)
                .union(b_side.order_by().values_list("pk", flat=True)))


def active_cable_ids_by_far_end(port_ids) -> dict[str, list[int]]:
    """{"nic": [...], "port": [...]}: the ids of the active cables with an end on one of
    `port_ids`, by what their other end is; one query, looked up as `active_cable_ids_at` does
    (a spine's page asked twice, 30 ms each at scale 125)."""
    cables = active_cables()
    halves = [
        cables.filter(**{f"{near}_port_id__in": port_ids})
        .annotate(far_is_nic=Case(When(**{f"{far}_nic__isnull": False}, then=Value(True)),
                                  default=Value(False), output_field=BooleanField()))
        .order_by()
        .values_list("pk", "far_is_nic")
        for near, far in (("a", "b"), ("b", "a"))
    ]
    by_far_end: dict[str, list[int]] = {"nic": [], "port": []}
    for pk, far_is_nic in halves[0].union(halves[1]):
        by_far_end["nic" if far_is_nic else "port"].append(pk)
    return by_far_end


def cables_with_ends(queryset: QuerySet[Cable]) -> QuerySet[Cable]:
    """Cables with both ends and their owners joined in, for describing without more queries."""
    return queryset.select_related(
        "a_nic__node",
        "b_nic__node",
        "a_port__switch__pod",
        "b_port__switch__pod",
        "a_port__breakout_parent",
        "b_port__breakout_parent",
    )


def _apply_filters(queryset: QuerySet, filters: dict | None, known: dict[str, Any]) -> QuerySet:
    """Apply {name: value} filters; `known` maps each name to a lookup or a function."""
    unknown = sorted(set(filters or {}) - set(known))
    if unknown:
        names = ", ".join(sorted(known))
        raise InvalidInput(
            {"filters": [f"unknown filter {name!r} (known: {names})" for name in unknown]}
        )
    for name, value in (filters or {}).items():
        if value in (None, ""):
            continue
        lookup = known[name]
        queryset = (
            lookup(queryset, value) if callable(lookup) else queryset.filter(**{lookup: value})
        )
    return queryset


def _hostlist_filter(path: str):
    def apply(queryset: QuerySet, expression: str) -> QuerySet:
        return queryset.filter(**{f"{path}__in": expand_hostlist(expression)})

    return apply


# -- nodes -------------------------------------------------------------------------------------

NODE_FILTERS = {
    "hostlist": _hostlist_filter("hostname"),
    "hostname": "hostname",
    "pod": "pod__name",
    "rack": "rack__name",
    "status": "status",
    "slurm_state": "slurm_state",
    "model": "model",
}


def node_list(*, user, filters: dict | None = None) -> QuerySet[Node]:
    """Nodes `user` may see, filtered by `filters` (see NODE_FILTERS; `hostlist` takes a Slurm
    expression such as gpu[001-016,020]). One query: pod and rack are joined in."""
    known = dict(NODE_FILTERS)
    if may(user, "read_tenant_data"):
        # Which tenant holds a node is tenant-private: only these roles may ask.
        known["tenant"] = lambda queryset, slug: queryset.filter(
            pk__in=Allocation.objects.current().filter(tenant__slug=slug).values("nodes")
        )
    return _apply_filters(visible_nodes(user=user), filters, known).select_related("pod", "rack")


def node_get(*, user, hostname: str) -> Node:
    """One node with its GPUs and NICs (each NIC with its affine GPU and active cable ends), in
    a constant number of queries; NotFound when `user` may not see it."""
    nics = NIC.objects.select_related("affinity_gpu").order_by("device")
    node = (
        visible_nodes(user=user)
        .select_related("pod", "rack")
        .prefetch_related(
            Prefetch("gpus", queryset=GPU.objects.order_by("index")),
            Prefetch("nics", queryset=with_cable_ends(nics)),
        )
        .filter(hostname=hostname)
        .first()
    )
    if node is None:
        raise NotFound(f"No node {hostname!r}.")
    return node


def nodes_from_hostlist(*, user, expression: str) -> list[Node]:
    """The nodes a hostlist names, in its order; InvalidInput naming any host not found (or not
    visible to `user`), so that an action on `gpu[001-016]` never silently skips one."""
    hostnames = expand_hostlist(expression)
    nodes = {node.hostname: node for node in node_list(user=user).filter(hostname__in=hostnames)}
    missing = [hostname for hostname in hostnames if hostname not in nodes]
    if missing:
        raise InvalidInput({"hostlist": [f"unknown node(s): {compress_hostlist(missing)}"]})
    return [nodes[hostname] for hostname in hostnames]


# -- GPUs, NICs, switches, ports, cables -------------------------------------------------------


def gpu_list(*, user, filters: dict | None = None) -> QuerySet[GPU]:
    known = {
        "node": "node__hostname",
        "hostlist": _hostlist_filter("node__hostname"),
        "pod": "node__pod__name",
        "model": "model",
        "index": "index",
    }
    gpus = GPU.objects.filter(node__in=visible_nodes(user=user))
    return _apply_filters(gpus, filters, known).select_related("node")


def with_cable_ends(nics: QuerySet[NIC]) -> QuerySet[NIC]:
    """Prefetch each NIC's active cables with their far ends (two queries for any number of
    NICs); read them with `nic_link(nic)`."""
    cables = cables_with_ends(active_cables())
    return nics.prefetch_related(
        Prefetch("cables_as_a", queryset=cables, to_attr="active_cables_as_a"),
        Prefetch("cables_as_b", queryset=cables, to_attr="active_cables_as_b"),
    )


NIC_FILTERS = {
    "node": "node__hostname",
    "hostlist": _hostlist_filter("node__hostname"),
    "pod": "node__pod__name",
    "role": "role",
    "rail": "rail",
    "device": "device",
}


def nic_list(*, user, filters: dict | None = None, with_links: bool = False) -> QuerySet[NIC]:
    """NICs of the nodes `user` may see; `with_links` also prefetches their cables' far ends."""
    nics = NIC.objects.filter(node__in=visible_nodes(user=user))
    nics = _apply_filters(nics, filters, NIC_FILTERS).select_related(
        "node", "node__pod", "affinity_gpu"
    )
    return with_cable_ends(nics) if with_links else nics


class NicLink(NamedTuple):
    cable: Cable
    port: SwitchPort | None  # the far end, when it is a switch port
    nic: NIC | None  # the far end, when it is another NIC (a validation error)


def nic_link(nic: NIC) -> NicLink | None:
    """The active cable of a NIC loaded through `with_cable_ends`, and its far end."""
    for cable in getattr(nic, "active_cables_as_a", []):
        return NicLink(cable, cable.b_port, cable.b_nic)
    for cable in getattr(nic, "active_cables_as_b", []):
        return NicLink(cable, cable.a_port, cable.a_nic)
    return None


SWITCH_FILTERS = {
    "hostlist": _hostlist_filter("hostname"),
    "hostname": "hostname",
    "role": "role",
    "pod": "pod__name",
    "rail": "rail",
    "status": "status",
}


def switch_list(*, user, filters: dict | None = None) -> QuerySet[Switch]:
    """Switches, for cluster-wide roles only: the fabric is not part of a tenant's slice."""
    if not may(user, "read_fabric"):
        return Switch.objects.none()
    return _apply_filters(Switch.objects.all(), filters, SWITCH_FILTERS).select_related(
        "pod", "rack"
    )


def port_list(*, user, switch: Switch | None = None, filters: dict | None = None):
    """Ports with their switch, breakout cage and the active cable on them (constant queries)."""
    if not may(user, "read_fabric"):
        return SwitchPort.objects.none()
    ports = SwitchPort.objects.all() if switch is None else switch.ports.all()
    known = {"switch": "switch__hostname", "name": "name", "speed_gbps": "speed_gbps"}
    cables = cables_with_ends(active_cables())
    return (
        _apply_filters(ports, filters, known)
        .select_related("switch", "breakout_parent")
        .prefetch_related(
            Prefetch("cables_as_a", queryset=cables, to_attr="active_cables_as_a"),
            Prefetch("cables_as_b", queryset=cables, to_attr="active_cables_as_b"),
        )
        .order_by("switch__hostname_sort_key", "index", "name_sort_key")
    )


def switch_port_cabling_counts(switch: Switch) -> dict[str, int]:
    """How many of the switch's ports there are (cages and breakout halves), how many carry an
    active cable, and how many of those lead to another switch: counted in the database, as
    the switch page shows one page of its ports."""
    active = active_cables()
    here = OuterRef("pk")
    cabled = Exists(active.filter(Q(a_port=here) | Q(b_port=here)))
    to_switch = Exists(active.filter(Q(a_port=here, b_port__isnull=False)
                                     | Q(b_port=here, a_port__isnull=False)))
    return switch.ports.aggregate(ports=Count("pk"), cabled=Count("pk", filter=Q(cabled)),
                                  to_switches=Count("pk", filter=Q(to_switch)))


def cable_list(*, user, filters: dict | None = None) -> QuerySet[Cable]:
    """Cables with both ends joined in; a tenant admin sees only cables of their nodes."""
    cables = Cable.objects.all()
    if not may(user, "read_cluster"):
        nodes = visible_nodes(user=user)
        cables = cables.filter(Q(a_nic__node__in=nodes) | Q(b_nic__node__in=nodes))
    known = {
        "cable": "pk",
        "status": "status",
        "type": "type",
        "node": lambda qs, hostname: qs.filter(
            Q(a_nic__node__hostname=hostname) | Q(b_nic__node__hostname=hostname)
        ),
        "switch": lambda qs, hostname: qs.filter(
            Q(a_port__switch__hostname=hostname) | Q(b_port__switch__hostname=hostname)
        ),
    }
    return cables_with_ends(_apply_filters(cables, filters, known))


def allocation_list(*, user, current_only: bool = False) -> QuerySet[Allocation]:
    """Allocations: all for admins, operators and on-call; a tenant admin's own; none for
    viewers (tenant-private). Nodes are prefetched in one extra query."""
    allocations = Allocation.objects.select_related("tenant").prefetch_related("nodes")
    if current_only:
        allocations = allocations.current()
    if may(user, "read_tenant_data"):
        return allocations
    if user.role == Role.TENANT_ADMIN and user.tenant_id:
        return allocations.filter(tenant_id=user.tenant_id)
    return allocations.none()


def may_read_tenant_data(user, tenant) -> bool:
    """Whether `user` sees `tenant`'s private data (allocations, jobs, usage): the rule
    allocation_list applies, for a page that must say "hidden" rather than show an empty list."""
    if may(user, "read_tenant_data"):
        return True
    return user.role == Role.TENANT_ADMIN and user.tenant_id == tenant.pk


# -- the API's lists: only what the serializers read ---------------------------------------------


def _far_end_cables(near: str) -> Prefetch:
    """Active cables with `near` ("a" or "b") on the listed object, stored as
    `active_cables_as_<near>` for `nic_link`; only the far end and its owner are joined in (the
    near end is the object itself), which halves the rows built per cable."""
    far = "b" if near == "a" else "a"
    cables = active_cables().select_related(f"{far}_port__switch", f"{far}_nic__node")
    return Prefetch(f"cables_as_{near}", queryset=cables, to_attr=f"active_cables_as_{near}")


def nic_list_with_links(*, user) -> QuerySet[NIC]:
    """NICs `user` may see, each with its active cable's far end (`nic_link`), in three queries
    for any number of NICs."""
    if may(user, "read_cluster"):
        nics = NIC.objects.all()  # no need to ask which nodes are visible: all are
    else:
        nics = NIC.objects.filter(node__in=visible_nodes(user=user))
    return nics.prefetch_related(_far_end_cables("a"), _far_end_cables("b"))


def port_list_with_links(*, user) -> QuerySet[SwitchPort]:
    """Switch ports for cluster-wide roles, each with its active cable's far end (`nic_link`),
    in three queries for any number of ports."""
    if not may(user, "read_fabric"):
        return SwitchPort.objects.none()
    return SwitchPort.objects.prefetch_related(_far_end_cables("a"), _far_end_cables("b"))


# -- parts swapped: a slot's history and a serial's life ----------------------------------------


def swap_list(*, user, filters: dict | None = None) -> QuerySet[ComponentSwap]:
    """Swaps on the nodes `user` may see, newest first. Filters: node (hostname), kind, serial
    (in or out), reference."""
    swaps = ComponentSwap.objects.filter(node__in=visible_nodes(user=user)).select_related(
        "node", "gpu", "nic", "swapped_by", "returned_from"
    )
    filters = {name: value for name, value in (filters or {}).items() if value}
    if "node" in filters:
        swaps = swaps.filter(node__hostname=filters["node"])
    if "kind" in filters:
        swaps = swaps.filter(kind=filters["kind"])
    if "serial" in filters:
        swaps = swaps.filter(Q(serial_in=filters["serial"]) | Q(serial_out=filters["serial"]))
    if "reference" in filters:
        swaps = swaps.filter(reference=filters["reference"])
    return swaps.order_by("-swapped_at", "-pk")


SWAP_CSV_HEADER = [
    "swapped_at", "node", "kind", "slot", "position", "serial_out", "serial_in", "uuid_out",
    "uuid_in", "mac_out", "mac_in", "firmware_version_in", "reference", "returning_from",
    "swapped_by", "note",
]


def swap_csv_rows(swaps: QuerySet[ComponentSwap]):
    """One CSV row per swap (SWAP_CSV_HEADER), oldest first: when, where (node, part type, the
    slot as named then), serial, GPU UUID and NIC MAC out and in, firmware, what asked for it
    (RC-12), the earlier swap a returning serial left with, and who. `swaps` from swap_list."""
    for swap in swaps.order_by("swapped_at", "pk"):
        yield [
            swap.swapped_at.isoformat(), swap.node.hostname if swap.node_id else "", swap.kind,
            swap.slot, swap.position, swap.serial_out, swap.serial_in, swap.uuid_out,
            swap.uuid_in, swap.mac_out, swap.mac_in, swap.firmware_version_in, swap.reference,
            swap.returned_from.slot if swap.returned_from_id else "",
            swap.swapped_by.username if swap.swapped_by_id else "", swap.note,
        ]


@dataclass(frozen=True)
class PartEvent:
    """One step in a part's life: it arrived in a slot, or left one (and what replaced it)."""

    at: Any
    event: str  # "installed" or "removed"
    slot: str
    node: str | None
    reference: str
    other_serial: str  # what it replaced, or what replaced it
    returning: bool  # installed again after leaving an earlier slot: a refurbished part


def part_history(*, user, serial: str) -> list[PartEvent]:
    """The life of the part with `serial` as its swaps tell it, oldest first: where it was
    installed, when it was removed, and where it went next (a refurbished part comes back)."""
    events: list[PartEvent] = []
    for swap in swap_list(user=user, filters={"serial": serial}).order_by("swapped_at", "pk"):
        hostname = swap.node.hostname if swap.node_id else None
        if swap.serial_out == serial:
            events.append(
                PartEvent(
                    swap.swapped_at,
                    "removed",
                    swap.slot,
                    hostname,
                    swap.reference,
                    swap.serial_in,
                    False,
                )
            )
        if swap.serial_in == serial:
            events.append(
                PartEvent(
                    swap.swapped_at,
                    "installed",
                    swap.slot,
                    hostname,
                    swap.reference,
                    swap.serial_out,
                    swap.returned_from_id is not None,
                )
            )
    return events


def part_installed_in(*, user, serial: str) -> str | None:
    """The slot (among the nodes `user` sees) whose GPU, NIC, node or last swap holds `serial`
    now, or None."""
    nodes = visible_nodes(user=user)
    gpu = GPU.objects.filter(serial=serial, node__in=nodes).select_related("node").first()
    if gpu is not None:
        return f"{gpu.node.hostname} GPU{gpu.index}"
    nic = NIC.objects.filter(serial=serial, node__in=nodes).select_related("node").first()
    if nic is not None:
        return f"{nic.node.hostname} {nic.device}"
    node = nodes.filter(serial=serial).first()
    if node is not None:
        return node.hostname
    events = part_history(user=user, serial=serial)
    if events and events[-1].event == "installed":
        return events[-1].slot
    return None


def with_free_counts(stocks: QuerySet[SpareStock]) -> QuerySet[SpareStock]:
    """Each stock with `reserved` (live reservations) and `free` (on hand and not reserved)."""
    return stocks.annotate(
        reserved=Count("reservations", filter=Q(reservations__status=ReservationStatus.RESERVED))
    ).annotate(free=F("on_hand") - F("reserved"))


SPARE_FILTERS = ("kind", "site")


def spare_stock_list(*, user, filters: dict | None = None) -> QuerySet[SpareStock]:
    """The spares shelves, per site and part type, with their reserved and free counts. Spares
    name no tenant's data: every reader of the inventory sees them. Filters: kind, site."""
    stocks = with_free_counts(SpareStock.objects.all())
    filters = {name: value for name, value in (filters or {}).items() if value}
    if "kind" in filters:
        stocks = stocks.filter(kind=filters["kind"])
    if "site" in filters:
        stocks = stocks.filter(site=filters["site"])
    return stocks.order_by("site", "kind")


def spares_below_minimum() -> list[SpareStock]:
    """The shelves with fewer free parts than their minimum: the dashboard's warning."""
    return list(spare_stock_list(user=None).filter(free__lt=F("minimum")))


def spare_reservation_list(*, reference: str = "") -> QuerySet[SpareReservation]:
    reservations = SpareReservation.objects.select_related("stock", "swap", "reserved_by")
    if reference:
        reservations = reservations.filter(reference=reference)
    return reservations.order_by("-reserved_at", "-pk")

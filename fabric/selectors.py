"""Reads of the fabric monitor, for cluster-wide roles only (the fabric is not tenant data).

Every list here costs a constant number of queries whatever the fabric's size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    FloatField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.utils import timezone

from fabric.models import (
    LldpFinding,
    Maintenance,
    MaintenanceWindow,
    PortCounterHistory,
    PortCounterLatest,
    SwitchThroughputLatest,
)
from fabric.port_state import port_state_letter
from inventory.models import Switch, SwitchPort
from inventory.selectors import active_cables, port_list, switch_list
from portal.errors import InvalidInput, NotFound
from portal.roles import may


def monitored_switches(*, user, filters: dict | None = None) -> QuerySet[Switch]:
    """Switches `user` may see, with their latest poll state joined in (one query)."""
    return switch_list(user=user, filters=filters).select_related("poll_state").order_by(
        "role", "pod__name", "rail", "hostname"
    )


def monitored_switch(*, user, hostname: str) -> Switch:
    switch = monitored_switches(user=user).filter(hostname=hostname).first()
    if switch is None:
        raise NotFound(f"No switch {hostname!r}.")
    return switch


def monitored_ports(*, user, switch: Switch | None = None,
                    filters: dict | None = None) -> QuerySet[SwitchPort]:
    """Interfaces (not broken-out cages) with their latest counters and cables joined in."""
    return (
        port_list(user=user, switch=switch, filters=filters)
        .filter(breakout_mode="")
        .select_related("counters", "lldp")
    )


def port_history(*, port: SwitchPort, since: datetime | None = None,
                 until: datetime | None = None) -> QuerySet[PortCounterHistory]:
    """A port's history rows, oldest first, within the retention window."""
    now = timezone.now()
    window = timedelta(seconds=settings.FABRIC_HISTORY_SECONDS)
    since = max(since, now - window) if since else now - window
    rows = PortCounterHistory.objects.filter(port=port, bucket_start__gte=since)
    if until:
        rows = rows.filter(bucket_start__lte=until)
    return rows.order_by("bucket_start")


def lldp_findings(*, user, open_only: bool = True,
                  kind: str | None = None) -> QuerySet[LldpFinding]:
    if not may(user, "read_fabric"):
        return LldpFinding.objects.none()
    findings = LldpFinding.objects.all()
    if open_only:
        findings = findings.filter(resolved_at__isnull=True)
    if kind:
        if kind not in LldpFinding.Kind.values:
            raise InvalidInput({"kind": [f"unknown kind {kind!r} (known: "
                                         f"{', '.join(LldpFinding.Kind.values)})"]})
        findings = findings.filter(kind=kind)
    return findings.order_by("kind", "key")


# -- aggregates ----------------------------------------------------------------------------------


@dataclass
class Throughput:
    """Summed rates of a group of ports (bytes/s, frames/s, packets/s)."""

    ports: int = 0
    ports_up: int = 0
    in_bytes_per_second: float = 0.0
    out_bytes_per_second: float = 0.0
    pfc_rx_per_second: list[float] = field(default_factory=lambda: [0.0] * 8)
    pfc_tx_per_second: list[float] = field(default_factory=lambda: [0.0] * 8)
    ecn_marked_per_second: float = 0.0
    # Ports with rates whose switch does not collect ECN marks: left out of the ECN sum.
    ecn_ports_not_collected: int = 0

    def add(self, row: PortCounterLatest | None) -> None:
        self.ports += 1
        if row is None:
            return
        self.ports_up += row.oper_up is True  # None: unknown, not up
        if row.in_bytes_per_second is None:
            return
        self.in_bytes_per_second += row.in_bytes_per_second
        self.out_bytes_per_second += row.out_bytes_per_second or 0.0
        # A priority the switch does not count has a None rate: unknown, left out of the sum.
        for index, value in enumerate(row.pfc_rx_rates[:8]):
            self.pfc_rx_per_second[index] += value or 0.0
        for index, value in enumerate(row.pfc_tx_rates[:8]):
            self.pfc_tx_per_second[index] += value or 0.0
        if row.ecn_marked_per_second is None:
            self.ecn_ports_not_collected += 1
        else:
            self.ecn_marked_per_second += row.ecn_marked_per_second


@dataclass
class SwitchAggregate:
    hostname: str
    role: str
    pod: str | None
    rail: int | None
    host_facing: Throughput = field(default_factory=Throughput)
    uplinks: Throughput = field(default_factory=Throughput)
    other: Throughput = field(default_factory=Throughput)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class RailAggregate:
    rail: int
    leafs: list[str] = field(default_factory=list)
    total: Throughput = field(default_factory=Throughput)
    host_facing: Throughput = field(default_factory=Throughput)

    def as_dict(self) -> dict:
        return asdict(self)


def _port_far_ends(switch_ids: list[int] | None = None) -> dict[int, str]:
    """Port id -> "nic" or "switch": what each cabled switch port faces (one query), for every
    switch or those in `switch_ids`."""
    far: dict[int, str] = {}
    columns = ("a_port_id", "b_port_id", "a_nic_id", "b_nic_id")
    rows = active_cables().order_by().values_list(*columns)
    if switch_ids is not None:
        # One indexed lookup per cable end, UNION ALL'd (a cable between two of the switches
        # comes twice, harmlessly): an OR of the two joined ends made PostgreSQL hash every
        # cable and port of the fleet, 0.9 s for one spine at scale 125. No ORDER BY in either
        # half: SQLite refuses one inside a compound statement.
        rows = rows.filter(a_port__switch_id__in=switch_ids).union(
            rows.filter(b_port__switch_id__in=switch_ids), all=True)
    for a_port, b_port, a_nic, b_nic in rows:
        if a_port:
            far[a_port] = "nic" if b_nic else "switch"
        if b_port:
            far[b_port] = "nic" if a_nic else "switch"
    return far


def _facing(port: str = "port"):
    """What the port `port` (a path from the queried model to a SwitchPort) faces through its
    active cable: "nic", "switch", or "other" (no cable). In SQL, so a fleet's tens of
    thousands of ports are classified where they are summed."""
    here = OuterRef(port)
    cables = active_cables()

    # One EXISTS per cable end, each an index lookup (an OR inside one would scan the cables).
    def cabled_to(far_end: str) -> Q:
        return (Q(Exists(cables.filter(a_port=here, **{f"b_{far_end}__isnull": False})))
                | Q(Exists(cables.filter(b_port=here, **{f"a_{far_end}__isnull": False}))))

    return Case(When(cabled_to("nic"), then=Value("nic")),
                When(cabled_to("port"), then=Value("switch")),
                default=Value("other"), output_field=CharField())


def _throughput_sums() -> dict:
    """Throughput.add's arithmetic as SQL aggregates over PortCounterLatest rows: every row is
    a port, an unknown oper state is not up, and only ports with rates add rates (a priority
    or ECN rate that is not counted, None, is left out of its sum). The names differ from the
    columns': an aggregate named like a column would be what the filters read."""
    rated = Q(in_bytes_per_second__isnull=False)

    def priority(name: str, index: int):
        return Sum(Cast(KeyTextTransform(str(index), name), FloatField()), filter=rated)

    return {
        "sum_ports": Count("pk"),
        "sum_ports_up": Count("pk", filter=Q(oper_up=True)),
        "sum_in_bytes_per_second": Sum("in_bytes_per_second", filter=rated),
        "sum_out_bytes_per_second": Sum("out_bytes_per_second", filter=rated),
        "sum_ecn_marked_per_second": Sum("ecn_marked_per_second", filter=rated),
        "sum_ecn_ports_not_collected": Count(
            "pk", filter=rated & Q(ecn_marked_per_second__isnull=True)),
        **{f"sum_pfc_rx_{index}": priority("pfc_rx_rates", index) for index in range(8)},
        **{f"sum_pfc_tx_{index}": priority("pfc_tx_rates", index) for index in range(8)},
    }


def _throughput_of(row: dict) -> Throughput:
    return Throughput(
        ports=row["sum_ports"],
        ports_up=row["sum_ports_up"],
        in_bytes_per_second=row["sum_in_bytes_per_second"] or 0.0,
        out_bytes_per_second=row["sum_out_bytes_per_second"] or 0.0,
        pfc_rx_per_second=[row[f"sum_pfc_rx_{index}"] or 0.0 for index in range(8)],
        pfc_tx_per_second=[row[f"sum_pfc_tx_{index}"] or 0.0 for index in range(8)],
        ecn_marked_per_second=row["sum_ecn_marked_per_second"] or 0.0,
        ecn_ports_not_collected=row["sum_ecn_ports_not_collected"],
    )


# SwitchThroughputLatest's columns, named as Throughput's fields.
THROUGHPUT_COLUMNS = ("ports", "ports_up", "in_bytes_per_second", "out_bytes_per_second",
                      "pfc_rx_per_second", "pfc_tx_per_second", "ecn_marked_per_second",
                      "ecn_ports_not_collected")


def aggregate_switches(*, user, role: str | None = None) -> QuerySet[Switch]:
    """The switches switch_aggregates reports on, in the order the API pages them: by role,
    pod, rail and hostname (natural order)."""
    switches = switch_list(user=user).select_related(None).select_related("pod")
    if role:
        switches = switches.filter(role=role)
    return switches.order_by(
        "role", F("pod__name").asc(nulls_first=True), F("rail").asc(nulls_first=True),
        "hostname_sort_key", "hostname")


def switch_aggregates(switches: Sequence[Switch]) -> list[SwitchAggregate]:
    """Per switch of `switches` (a page of aggregate_switches), in that order: host-facing,
    uplink and other throughput, PFC and ECN rates, as the latest poll summed them
    (SwitchThroughputLatest; one query): a fleet of 100,000 GPUs has over 150,000 switch
    ports, too many to sum per request."""
    aggregates = {
        s.pk: SwitchAggregate(s.hostname, s.role, s.pod.name if s.pod_id else None, s.rail)
        for s in switches
    }
    parts = {"nic": "host_facing", "switch": "uplinks"}
    for switch_id, facing, *sums in SwitchThroughputLatest.objects.filter(
        switch_id__in=list(aggregates)
    ).values_list("switch_id", "facing", *THROUGHPUT_COLUMNS):
        setattr(aggregates[switch_id], parts.get(facing, "other"),
                Throughput(**dict(zip(THROUGHPUT_COLUMNS, sums, strict=True))))
    return list(aggregates.values())


def throughput_by_facing(switch_ids: list[int]) -> list[tuple[int, str, Throughput]]:
    """(switch id, what the ports face, their summed Throughput) of the switches' latest
    counters, summed in the database in one grouped query: what each poll stores for
    switch_aggregates to read."""
    sums = (
        PortCounterLatest.objects.filter(port__switch_id__in=switch_ids)
        .annotate(switch_id=F("port__switch_id"), facing=_facing())
        .values("switch_id", "facing")
        .annotate(**_throughput_sums())
        .order_by()
    )
    return [(row["switch_id"], row["facing"], _throughput_of(row)) for row in sums]


def rail_aggregates(*, user) -> list[RailAggregate]:
    """Per rail r: every port of the leafs serving rail r (all pods), and their host-facing
    share. Summed in the database over what the polls stored per leaf and facing (3 queries):
    2,000 leafs' rows read into Python took a second at scale 125."""
    leafs = switch_list(user=user).select_related(None).filter(
        role=Switch.Role.LEAF, rail__isnull=False)
    rails: dict[int, RailAggregate] = {}
    # Each rail's leafs by pod, then hostname.
    for rail, _pod, hostname in sorted(
        leafs.values_list("rail", "pod__name", "hostname"),
        key=lambda row: (row[0], row[1] or "", row[2]),
    ):
        rails.setdefault(rail, RailAggregate(rail)).leafs.append(hostname)

    def priority(name: str, index: int):
        return Sum(Cast(KeyTextTransform(str(index), name), FloatField()))

    sums = (
        SwitchThroughputLatest.objects.filter(switch__in=leafs)
        .values("switch__rail", "facing")
        .annotate(
            sum_ports=Sum("ports"), sum_ports_up=Sum("ports_up"),
            sum_in_bytes_per_second=Sum("in_bytes_per_second"),
            sum_out_bytes_per_second=Sum("out_bytes_per_second"),
            sum_ecn_marked_per_second=Sum("ecn_marked_per_second"),
            sum_ecn_ports_not_collected=Sum("ecn_ports_not_collected"),
            **{f"sum_pfc_rx_{index}": priority("pfc_rx_per_second", index) for index in range(8)},
            **{f"sum_pfc_tx_{index}": priority("pfc_tx_per_second", index) for index in range(8)},
        )
        .order_by()
    )
    for row in sums:
        rail = rails[row["switch__rail"]]
        part = _throughput_of(row)
        _merge(rail.total, part)
        if row["facing"] == SwitchThroughputLatest.Facing.NIC:
            _merge(rail.host_facing, part)
    return [rails[r] for r in sorted(rails)]


def _merge(into: Throughput, part: Throughput) -> None:
    into.ports += part.ports
    into.ports_up += part.ports_up
    into.in_bytes_per_second += part.in_bytes_per_second
    into.out_bytes_per_second += part.out_bytes_per_second
    into.ecn_marked_per_second += part.ecn_marked_per_second
    into.ecn_ports_not_collected += part.ecn_ports_not_collected
    for index in range(8):
        into.pfc_rx_per_second[index] += part.pfc_rx_per_second[index]
        into.pfc_tx_per_second[index] += part.pfc_tx_per_second[index]


# -- the heat map --------------------------------------------------------------------------------


@dataclass
class HeatCell:
    name: str
    state: str  # a letter of fabric.port_state.STATE_LETTERS
    utilization: float | None
    faces: str  # "nic", "switch" or ""

    @property
    def percent(self) -> int | None:
        return None if self.utilization is None else round(self.utilization * 100)

    @property
    def level(self) -> int:
        """0-5 load band for the colour (static/js/fabric.js computes it the same way); the
        mark and the title (written by fabric.js from shown_percent) carry it as text."""
        if self.state != "U" or self.percent is None:
            return 0
        return min(5, 1 + self.percent * 5 // 100)

    @property
    def mark(self) -> str:
        """The character in the cell: load in tens of percent when up, else the state."""
        if self.state == "U" and self.percent is not None:
            return str(min(9, self.percent // 10))
        return self.state

    @property
    def shown_percent(self) -> int | None:
        """The load the cell's title names (static/js/fabric.js describeCell): an up port's."""
        return self.percent if self.state == "U" else None

    @property
    def code(self) -> str:
        """The compact form the "fabric" event uses: state letter + percent (U37)."""
        return f"{self.state}{self.percent if self.percent is not None else ''}"


@dataclass
class HeatSwitch:
    switch: Switch
    cells: list[HeatCell]
    # Set for a switch drawn without its cells (port_strips): how many it would have.
    deferred_ports: int | None = None


@dataclass
class HeatMap:
    pods: dict[str, list[HeatSwitch]]
    spines: list[HeatSwitch]
    others: list[HeatSwitch]

    def entries(self) -> list[HeatSwitch]:
        """Every switch of the map: leafs pod by pod, spines, others."""
        leafs = [entry for entries in self.pods.values() for entry in entries]
        return [*leafs, *self.spines, *self.others]


def heat_map(*, user, hostnames: list[str] | None = None) -> HeatMap:
    """Leafs by pod, spines, and other switches (all, or those named), each with a cell per
    interface (4 queries)."""
    switches = monitored_switches(user=user)
    if hostnames is not None:
        switches = switches.filter(hostname__in=hostnames)
    switches = list(switches)
    cells = _cells_by_switch(switches, whole_fleet=hostnames is None)
    heat = HeatMap(pods={}, spines=[], others=[])
    for switch in switches:
        entry = HeatSwitch(switch, cells.get(switch.pk, []))
        if switch.role == Switch.Role.LEAF:
            heat.pods.setdefault(switch.pod.name if switch.pod_id else "-", []).append(entry)
        elif switch.role == Switch.Role.SPINE:
            heat.spines.append(entry)
        else:
            heat.others.append(entry)
    return heat


def _cells_by_switch(switches: list[Switch], *, whole_fleet: bool) -> dict[int, list[HeatCell]]:
    """{switch id: a cell per interface, in port order} (2 queries)."""
    far = _port_far_ends(None if whole_fleet else [switch.pk for switch in switches])
    ports = (
        SwitchPort.objects.filter(switch__in=switches, breakout_mode="")
        .select_related("counters")
        .only("id", "name", "index", "switch_id", "admin_status", "oper_status",
              "counters__oper_up", "counters__admin_up", "counters__utilization")
        .order_by("switch_id", "index", "name")
    )
    cells: dict[int, list[HeatCell]] = defaultdict(list)
    for port in ports:
        counters = getattr(port, "counters", None)
        if counters is None:
            state, utilization = "?", None
        else:
            state = port_state_letter(counters.admin_up, counters.oper_up)
            utilization = counters.utilization
        cells[port.switch_id].append(HeatCell(port.name, state, utilization, far.get(port.pk, "")))
    return cells


# Past this many ports a switch is not drawn cell by cell beside others: a scale-125 spine has
# 8,000, and the eight spines' strips made that page 6.7 MB in 3.4 s. Its strip offers its cells
# on demand instead, one fragment (fabric.views.monitoring.SwitchPortsView).
PORT_CELLS_INLINE_MAX = 1024


def port_strips(*, user, hostnames: list[str]) -> list[HeatSwitch]:
    """The port cells of the named switches `user` may see, in the order named; a switch with
    more than PORT_CELLS_INLINE_MAX ports comes without its cells, its port count given."""
    visible = {switch.hostname: switch
               for switch in monitored_switches(user=user).filter(hostname__in=hostnames)}
    port_counts = dict(
        SwitchPort.objects.filter(switch__in=visible.values(), breakout_mode="")
        .values_list("switch__hostname").annotate(ports=Count("id")).order_by()
    )
    inline = {name: switch for name, switch in visible.items()
              if port_counts.get(name, 0) <= PORT_CELLS_INLINE_MAX}
    cells = _cells_by_switch(list(inline.values()), whole_fleet=False) if inline else {}
    strips = []
    for name in hostnames:
        if name in inline:
            strips.append(HeatSwitch(inline[name], cells.get(inline[name].pk, [])))
        elif name in visible:
            strips.append(HeatSwitch(visible[name], [], deferred_ports=port_counts[name]))
    return strips


@dataclass(frozen=True)
class PortCounts:
    """A switch's ports by state: up, down (enabled without a link) and shut on purpose."""

    up: int
    down: int
    shut: int


def switch_port_counts(switch: Switch) -> PortCounts:
    """The switch's ports counted from the inventory's last-seen state, which both a port
    Action's read-back and every poll write: the poll state's own counts wait for the next poll,
    so after a shut the page said "82 / 0" beside a port row saying shut. A port whose state is
    unknown is none of the three. One query."""
    UP, DOWN = SwitchPort.LinkStatus.UP, SwitchPort.LinkStatus.DOWN
    counted = SwitchPort.objects.filter(switch=switch, breakout_mode="").aggregate(
        up=Count("pk", filter=Q(admin_status=UP, oper_status=UP)),
        down=Count("pk", filter=Q(admin_status=UP, oper_status=DOWN)),
        shut=Count("pk", filter=Q(admin_status=DOWN)),
    )
    return PortCounts(**counted)


def running_maintenance(switch: Switch) -> Maintenance | None:
    """The maintenance of `switch` that has not ended (starting, active or ending), with the
    Action that started it: what the switch page's badge names. One query."""
    return (
        Maintenance.objects.filter(switch=switch, status__in=Maintenance.OPEN_STATUSES)
        .select_related("start_action")
        .first()
    )


def ports_under_maintenance(switch_hostname: str) -> set[str]:
    """The ports of a switch that a maintenance which has not ended plans to shut, has shut, or
    is about to start again: planned work, whose shutting is not a fault (faults asks)."""
    names: set[str] = set()
    for ports in Maintenance.objects.filter(
        switch__hostname=switch_hostname, status__in=Maintenance.OPEN_STATUSES
    ).values_list("ports", flat=True):
        names.update(ports)
    return names


def maintenance_window_list() -> QuerySet[MaintenanceWindow]:
    """Every maintenance window, soonest first (the fabric's readers may see them all)."""
    return MaintenanceWindow.objects.select_related("owner").prefetch_related("switches")


def maintenance_calendar(*, around: datetime, days: int = 28) -> dict:
    """The windows that touch the `days` from the start of `around`'s week, by day, and those
    running now; past, current and future alike."""
    first = (around - timedelta(days=around.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0)
    last = first + timedelta(days=days)
    # Each window's row lists its switches' maintenances with their switch: prefetched, so
    # the page is a fixed number of queries however many windows the weeks hold.
    windows = list(maintenance_window_list().filter(
        planned_start__lt=last, planned_end__gt=first).prefetch_related(
        Prefetch("maintenances", queryset=Maintenance.objects.select_related("switch"))))
    by_day = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        following = day + timedelta(days=1)
        by_day.append({"day": day, "windows": [
            window for window in windows
            if window.planned_start < following and window.planned_end > day]})
    return {"first": first, "last": last, "days": by_day, "windows": windows}


def nodes_in_running_windows(hostnames) -> set[str]:
    """Of `hostnames`, those a running maintenance window covers (for the node badges)."""
    wanted = set(hostnames)
    covered: set[str] = set()
    for reserved in MaintenanceWindow.objects.filter(
            status=MaintenanceWindow.Status.RUNNING).values_list("reserved_nodes", flat=True):
        covered.update(wanted.intersection(reserved))
    return covered


def running_window_by_node() -> dict[str, int]:
    """Every node a running maintenance window holds, with the window's id: one query, for the
    dashboard grid's maintenance marks (a running window holds tens of nodes, not the fleet)."""
    by_node: dict[str, int] = {}
    for window_id, reserved in MaintenanceWindow.objects.filter(
            status=MaintenanceWindow.Status.RUNNING).order_by("-pk").values_list(
            "pk", "reserved_nodes"):
        by_node.update(dict.fromkeys(reserved, window_id))
    return by_node


def running_window_of_switch(switch) -> MaintenanceWindow | None:
    """The running maintenance window that covers `switch`, if any (the switch pages' badge)."""
    return MaintenanceWindow.objects.filter(status=MaintenanceWindow.Status.RUNNING,
                                            switches=switch).order_by("pk").first()


def running_window_of_node(hostname: str) -> MaintenanceWindow | None:
    """The running maintenance window whose reservation holds `hostname`, if any."""
    # Read in Python: JSON containment is not a lookup SQLite (the embedded default) has.
    running = MaintenanceWindow.objects.filter(status=MaintenanceWindow.Status.RUNNING)
    return next((window for window in running if hostname in window.reserved_nodes), None)

"""The fabric overview (reads): one row per switch and one per group (a pod's leafs, the spines,
the storage and management switches), problems first, and the delta between two overviews that
a counter poll publishes instead of making open pages re-read the page.

Built from each switch's poll state (the poll already sums its ports and names its busiest up
port) plus one port read: the first port down of the switches that have one. Three queries
whatever the fabric's size: finding the hottest port per request read 180,000 counter rows at
scale 125 (0.7 s).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fabric.models import PortCounterLatest
from fabric.templatetags.fabric_tags import byte_rate, event_rate
from inventory.models import Switch
from inventory.selectors import switch_list
from portal.errors import InvalidInput
from portal.models.accounts import Role
from portal.natural_sort import natural_key

# A port this busy (of its line rate) makes its switch "hot": RoCE flows on a link that full
# start to see PFC pauses and ECN marks (the paper's Table 15 thresholds are in the buffers).
HOT_UTILIZATION = 0.9

# States, most urgent first; the overview sorts by this order and filters by these names.
STATES = {
    "unreachable": "unreachable",
    "down": "ports down",
    "hot": "hot port",
    "unpolled": "not polled",
    "ok": "ok",
}
PROBLEM_STATES = frozenset({"unreachable", "down", "hot"})
# The switch table lists at most this many rows, problems first (scale 20 has 330 switches;
# scale 125 has 2,010, which would be a 1.2 MB page): the rest are counted, and a pod, role or
# state filter lists them.
SWITCH_ROWS_MAX = 340
STATE_FILTERS = (*STATES, "problems")
ROLE_FILTERS = tuple(Switch.Role.values)
SPINES_GROUP = "spines"
OTHERS_GROUP = "storage/management"
# The live delta sends a rate cell (traffic, PFC, ECN) only when its value moved to another
# bucket of this many significant digits: the page prints three ("12.3 GB/s"), and the third
# flickers on every poll of a busy fabric, so at scale 125 every row went out each poll (211 kB).
# Buckets, not "moved more than x% since the last poll": a slow ramp still reaches the page
# once it crosses a bucket, so what is shown is never more than one bucket (<10%) off.
RATE_SIGNIFICANT_DIGITS = 2
# Likewise the load cell ("mean% / peak%") goes out when either moved to another band of this
# many percentage points; a switch crossing HOT_UTILIZATION changes state and goes out whole.
LOAD_BAND_POINTS = 5
# Key of a row's change marks in event_cells(); overview_delta compares them and never sends them.
MARKS = "~marks"


def _rate_mark(*values: float | None) -> tuple:
    """The bucket the rates fall in (None stays None: unknown is a visible change)."""
    digits = RATE_SIGNIFICANT_DIGITS - 1
    return tuple(None if value is None else f"{value:.{digits}e}" for value in values)


def _load_mark(mean: float | None, peak: float | None) -> tuple | None:
    if mean is None:
        return None
    return (round(mean * 100 / LOAD_BAND_POINTS), round((peak or 0.0) * 100 / LOAD_BAND_POINTS))


def _worst_mark(text: str, problem: bool, busiest: float | None) -> str | tuple:
    """A problem's worst port (down, or hot) is sent whenever it changes. On a healthy switch
    it is merely the busiest port, and with jitter of a few percent which of many equally busy
    ports that is changes every poll: it goes out when the busiest load leaves its band."""
    if problem or busiest is None:
        return text
    return ("busiest", round(busiest * 100 / LOAD_BAND_POINTS))


def _rank(state: str) -> int:
    return list(STATES).index(state)


@dataclass
class SwitchRow:
    hostname: str
    role: str
    group: str  # the pod for a leaf; "spines"; "storage/management"
    rail: int | None
    state: str
    error: str = ""
    # None while unknown (never polled, or unreachable now): shown as "—", never as zero.
    mean_load: float | None = None  # 0..1 over up ports
    max_load: float | None = None
    in_bytes_per_second: float | None = None
    out_bytes_per_second: float | None = None
    pfc_per_second: float | None = None
    ecn_per_second: float | None = None
    ports_up: int = 0
    ports_down: int = 0
    worst_port: str = ""
    worst_port_detail: str = ""  # "down" or "96%"

    @property
    def is_problem(self) -> bool:
        return self.state in PROBLEM_STATES

    @property
    def state_label(self) -> str:
        return STATES[self.state]

    def sort_key(self) -> tuple:
        return (_rank(self.state), -self.ports_down, -(self.max_load or 0.0),
                -(self.pfc_per_second or 0.0), natural_key(self.hostname))

    def cells(self) -> dict[str, str]:
        """The row as the page shows it; the live delta carries exactly these strings, when
        they changed visibly (the marks: overview_delta)."""
        worst_text = f"{self.worst_port} {self.worst_port_detail}".strip() or "—"
        return {
            "group": self.group,
            "role": self.role,
            "state": self.state,
            "state_label": self.state_label,
            "load": _load_text(self.mean_load, self.max_load),
            "traffic": _traffic_text(self.in_bytes_per_second, self.out_bytes_per_second),
            "pfc": event_rate(self.pfc_per_second),
            "ecn": event_rate(self.ecn_per_second),
            "down": str(self.ports_down) if self.mean_load is not None else "—",
            "worst": worst_text,
            "error": self.error[:200],
            MARKS: {
                "worst": _worst_mark(worst_text, self.is_problem, self.max_load),
                "load": _load_mark(self.mean_load, self.max_load),
                "traffic": _rate_mark(self.in_bytes_per_second, self.out_bytes_per_second),
                "pfc": _rate_mark(self.pfc_per_second),
                "ecn": _rate_mark(self.ecn_per_second),
            },
        }


@dataclass
class GroupRow:
    """A pod's leafs, the spines, or the storage and management switches, summed."""

    name: str
    switches: list[SwitchRow] = field(default_factory=list)

    @property
    def state(self) -> str:
        return min((row.state for row in self.switches), key=_rank, default="ok")

    @property
    def problems(self) -> int:
        return sum(1 for row in self.switches if row.is_problem)

    @property
    def ports_down(self) -> int:
        return sum(row.ports_down for row in self.switches)

    @property
    def max_load(self) -> float | None:
        loads = [row.max_load for row in self.switches if row.max_load is not None]
        return max(loads) if loads else None

    @property
    def mean_load(self) -> float | None:
        loads = [row.mean_load for row in self.switches if row.mean_load is not None]
        return sum(loads) / len(loads) if loads else None

    @property
    def worst(self) -> SwitchRow | None:
        return min(self.switches, key=SwitchRow.sort_key, default=None)

    def _known_sum(self, name: str) -> float | None:
        """The sum over the switches whose value is known; None when none is (not a zero)."""
        known = [getattr(row, name) for row in self.switches if getattr(row, name) is not None]
        return sum(known) if known else None

    def sort_key(self) -> tuple:
        return (_rank(self.state), -self.problems, -self.ports_down, -(self.max_load or 0.0),
                natural_key(self.name))

    def cells(self) -> dict[str, str]:
        worst = self.worst
        worst_text = "—"
        if worst is not None and (worst.worst_port or worst.is_problem):
            worst_text = f"{worst.hostname} {worst.worst_port} {worst.worst_port_detail}".strip()
        into, out = self._known_sum("in_bytes_per_second"), self._known_sum("out_bytes_per_second")
        pfc, ecn = self._known_sum("pfc_per_second"), self._known_sum("ecn_per_second")
        return {
            "state": self.state,
            "state_label": STATES[self.state],
            "switches": str(len(self.switches)),
            "problems": str(self.problems),
            "load": _load_text(self.mean_load, self.max_load),
            "traffic": _traffic_text(into, out),
            "pfc": event_rate(pfc),
            "ecn": event_rate(ecn),
            "down": str(self.ports_down) if self.mean_load is not None else "—",
            "worst": worst_text,
            MARKS: {"worst": _worst_mark(worst_text, worst is not None and worst.is_problem,
                                         self.max_load),
                    "load": _load_mark(self.mean_load, self.max_load),
                    "traffic": _rate_mark(into, out), "pfc": _rate_mark(pfc),
                    "ecn": _rate_mark(ecn)},
        }


@dataclass
class FabricOverview:
    groups: list[GroupRow]  # problems first
    switches: list[SwitchRow]  # the filtered switches, problems first, at most SWITCH_ROWS_MAX
    total_switches: int
    state_counts: dict[str, int]
    pods: list[str]  # every pod with leafs, in natural order (the filter's choices)
    switches_not_listed: int = 0  # filtered in but past SWITCH_ROWS_MAX

    def event_cells(self) -> dict:
        """Every row's cells, keyed as the delta keys them."""
        return {
            "switches": {row.hostname: row.cells() for row in self.switches},
            "groups": {group.name: group.cells() for group in self.groups},
            "counts": dict(self.state_counts),
        }


def _traffic_text(into: float | None, out: float | None) -> str:
    return "—" if into is None else f"{byte_rate(into)} / {byte_rate(out)}"


def _load_text(mean: float | None, peak: float | None) -> str:
    if mean is None:
        return "—"
    return f"{round(mean * 100)}% / {round((peak or 0.0) * 100)}%"


def _group_of(role: str, pod: str | None) -> str:
    if role == Switch.Role.LEAF:
        return pod or "no pod"
    return SPINES_GROUP if role == Switch.Role.SPINE else OTHERS_GROUP


def _first_ports_down(switch_ids: list[int]) -> dict[int, str]:
    """Switch id -> the first (lowest index) port enabled but without link. One query."""
    first: dict[int, str] = {}
    if not switch_ids:
        return first
    for switch_id, name in PortCounterLatest.objects.filter(
        port__switch_id__in=switch_ids, admin_up=True, oper_up=False
    ).values_list("port__switch_id", "port__name").order_by("port__switch_id", "port__index"):
        first.setdefault(switch_id, name)
    return first


def _switch_row(switch: Switch, first_down) -> SwitchRow:
    poll = getattr(switch, "poll_state", None)
    row = SwitchRow(
        hostname=switch.hostname,
        role=switch.role,
        group=_group_of(switch.role, switch.pod.name if switch.pod_id else None),
        rail=switch.rail,
        state="unpolled",
    )
    if poll is None or (poll.last_seen_at is None and not poll.consecutive_failures):
        return row
    if poll.consecutive_failures:
        row.state, row.error = "unreachable", poll.last_error
        return row  # its last counters are stale: show none rather than old numbers
    row.mean_load, row.max_load = poll.mean_utilization, poll.max_utilization
    row.in_bytes_per_second = poll.in_bytes_per_second
    row.out_bytes_per_second = poll.out_bytes_per_second
    row.pfc_per_second, row.ecn_per_second = poll.pfc_pause_per_second, poll.ecn_marked_per_second
    row.ports_up, row.ports_down = poll.ports_up, poll.ports_down
    if row.ports_down and switch.pk in first_down:
        row.worst_port, row.worst_port_detail = first_down[switch.pk], "down"
    elif poll.hottest_port:  # the poll found it, with max_utilization its load
        row.worst_port = poll.hottest_port
        row.worst_port_detail = f"{round(poll.max_utilization * 100)}%"
    if row.ports_down:
        row.state = "down"
    elif (row.max_load or 0.0) >= HOT_UTILIZATION:
        row.state = "hot"
    else:
        row.state = "ok"
    return row


def clean_overview_filters(params) -> dict[str, str]:
    """pod, role and state from a query string; an unknown value names its field."""
    filters = {name: (params.get(name) or "").strip() for name in ("pod", "role", "state")}
    errors = {}
    if filters["role"] and filters["role"] not in ROLE_FILTERS:
        errors["role"] = [f"unknown role {filters['role']!r} (known: {', '.join(ROLE_FILTERS)})"]
    if filters["state"] and filters["state"] not in STATE_FILTERS:
        errors["state"] = [
            f"unknown state {filters['state']!r} (known: {', '.join(STATE_FILTERS)})"
        ]
    if len(filters["pod"]) > 100:
        errors["pod"] = ["at most 100 characters"]
    if errors:
        raise InvalidInput(errors)
    return {name: value for name, value in filters.items() if value}


def fabric_overview(*, user, filters: dict[str, str] | None = None,
                    row_limit: int | None = SWITCH_ROWS_MAX) -> FabricOverview:
    """Per switch and per group aggregates, problems first; `filters` (clean_overview_filters)
    narrow the switch rows, and the groups to those with a switch left. Cluster-wide roles only,
    as every fabric read (switch_list returns nothing to anyone else)."""
    filters = filters or {}
    switches = list(switch_list(user=user).select_related("poll_state"))
    # Only switches whose last poll counted a port down have one to name: a handful, not 330.
    with_ports_down = [switch.pk for switch in switches
                       if getattr(switch, "poll_state", None) and switch.poll_state.ports_down]
    first_down = _first_ports_down(with_ports_down)
    rows = [_switch_row(switch, first_down) for switch in switches]
    state_counts = {state: 0 for state in STATES}
    for row in rows:
        state_counts[row.state] += 1
    pods = sorted({row.group for row in rows if row.role == Switch.Role.LEAF}, key=natural_key)

    def kept(row: SwitchRow) -> bool:
        if filters.get("pod") and row.group != filters["pod"]:
            return False
        if filters.get("role") and row.role != filters["role"]:
            return False
        state = filters.get("state")
        if state == "problems":
            return row.is_problem
        return not state or row.state == state

    shown = sorted(filter(kept, rows), key=SwitchRow.sort_key)
    groups: dict[str, GroupRow] = {}
    for row in rows:  # groups sum every switch of theirs, whatever the row filter keeps
        groups.setdefault(row.group, GroupRow(row.group)).switches.append(row)
    shown_groups = {row.group for row in shown}
    listed = shown if row_limit is None else shown[:row_limit]
    return FabricOverview(
        groups=sorted((g for g in groups.values() if g.name in shown_groups),
                      key=GroupRow.sort_key),
        switches=listed,
        total_switches=len(rows),
        state_counts=state_counts,
        pods=pods,
        switches_not_listed=len(shown) - len(listed),
    )


# Cells sent whole whenever a row's state changes: a page filtered by state may have to draw
# (or drop) the row, and needs its group and role to decide.
_STATE_CELLS = ("state", "state_label", "error")


def _row_delta(old: dict | None, new: dict) -> dict:
    """The cells of a row that changed: all of them for a new row or a new state (the page
    may have to add it), else only those whose text differs, rate cells only when their value
    left its bucket (RATE_SIGNIFICANT_DIGITS). Change marks are compared, never sent."""
    cells = {name: value for name, value in new.items() if name != MARKS}
    if old is None or any(old.get(name) != new.get(name) for name in _STATE_CELLS):
        return cells
    old_marks, new_marks = old.get(MARKS, {}), new.get(MARKS, {})

    def changed(name: str) -> bool:
        if old.get(name) == new[name]:
            return False  # the page shows this already
        return name not in new_marks or old_marks.get(name) != new_marks[name]

    return {name: value for name, value in cells.items() if changed(name)}


def overview_delta(before: dict, after: dict) -> dict:
    """What changed between two `FabricOverview.event_cells()`: per switch and group row the
    cells whose shown text differs (whole rows when new or changing state), the names of rows
    gone, and the state counts. A poll that changes nothing on screen sends empty maps."""
    delta: dict = {"switches": {}, "groups": {}, "removed": []}
    for kind in ("switches", "groups"):
        old, new = before.get(kind, {}), after.get(kind, {})
        for name, cells in new.items():
            changed = _row_delta(old.get(name), cells)
            if changed:
                delta[kind][name] = changed
        delta["removed"] += [name for name in old if name not in new]
    if before.get("counts") != after.get("counts"):
        delta["counts"] = after.get("counts", {})
    return delta


def unscoped_overview_cells() -> dict:
    """Every row's cells for the poll's delta: the fabric is the same for every role allowed to
    see it, so one computation serves every subscriber of the "fabric" groups."""
    return fabric_overview(user=_FabricReader(), row_limit=None).event_cells()


class _FabricReader:
    """A stand-in user for the poll (no request): a cluster-wide role sees the whole fabric."""

    role = Role.ADMIN
    tenant_id = None


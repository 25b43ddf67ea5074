"""Reads behind the dashboard's cluster view: the node grid and its summary counts.

The grid is built from the same visibility rules as the APIs: `visible_nodes` (a tenant admin's
grid holds their allocations' nodes only), `visible_jobs` (their own tenant's jobs only, viewers
none) and the `read_faults` capability (tenant admins see no fault tickets at all). Every read
here is a fixed number of queries, whatever the cluster's size.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count, Q

from fabric.selectors import running_window_by_node
from faults.models import Category, FaultTicket
from faults.selectors import ticket_list
from faults.workflow import OPEN_STATUSES
from inventory.models import GPU
from inventory.revision import cached_by_revision
from inventory.selectors import visible_nodes
from jobs.models import Job
from jobs.selectors import running_jobs, visible_jobs
from portal.errors import InvalidInput
from portal.natural_sort import natural_key
from portal.node_states import GRID_STATES, grid_state
from portal.roles import may

_TRAILING_DIGITS = re.compile(r"\d+$")
# What the "problems only" view keeps (besides any node with an open fault ticket).
PROBLEM_STATES = frozenset({"draining", "drained", "down"})


@dataclass(frozen=True)
class RunningJob:
    job_id: str
    user: str

    def __str__(self) -> str:
        return f"{self.job_id} ({self.user})" if self.user else self.job_id


@dataclass
class GridCell:
    node_id: int
    hostname: str
    state: str
    slurm_state: str
    reason: str
    gpus: int
    open_faults: int = 0
    jobs: list[RunningJob] = field(default_factory=list)
    maintenance_window: int | None = None  # the running maintenance window holding it

    @property
    def jobs_text(self) -> str:
        return ", ".join(str(job) for job in self.jobs)

    @property
    def short_name(self) -> str:
        """What the cell shows: the hostname's trailing number (042 of gpu042, 1999 of
        gpu1999), or its last three characters when it ends in none."""
        digits = _TRAILING_DIGITS.search(self.hostname)
        return digits.group(0) if digits else self.hostname[-3:]

    @property
    def is_problem(self) -> bool:
        """Drained, draining, down, or with an open fault ticket: what "problems only" keeps."""
        return self.state in PROBLEM_STATES or self.open_faults > 0

    @property
    def label(self) -> str:
        """The hover text and accessible name; static/js/cluster.js builds the same string."""
        parts = [f"{self.hostname}: {self.slurm_state}"]
        if self.reason:
            parts.append(f"reason: {self.reason}")
        if self.open_faults:
            plural = "s" if self.open_faults > 1 else ""
            parts.append(f"{self.open_faults} open fault ticket{plural}")
        if self.jobs:
            parts.append(f"running job {self.jobs_text}")
        if self.maintenance_window:
            parts.append(f"maintenance window #{self.maintenance_window}")
        return " · ".join(parts)


@dataclass
class GridRack:
    name: str
    cells: list[GridCell] = field(default_factory=list)


@dataclass
class AggregateCell:
    """A pod (or a rack of a pod too big to draw node by node) as one cell: its nodes counted by
    grid state, its GPUs and those in use, its open tickets; it links to its nodes as cells."""

    level: str  # "pod" or "rack"
    pod: str
    rack: str
    state_counts: dict[str, int]
    gpus: int = 0
    gpus_in_use: int | None = 0
    open_faults: int = 0
    in_maintenance: int = 0  # nodes a running maintenance window holds

    @property
    def name(self) -> str:
        return self.rack if self.level == "rack" else self.pod

    @property
    def node_count(self) -> int:
        return sum(self.state_counts.values())

    @property
    def counts(self) -> list[tuple[str, str, int]]:
        """(state, letter, count) for every grid state, zeros included: a live event may move
        a node into any of them (static/js/cluster.js counts them in place)."""
        return [(state, letter, self.state_counts.get(state, 0))
                for state, letter in GRID_STATES.items()]

    @property
    def problem_nodes(self) -> int:
        return sum(self.state_counts.get(state, 0) for state in PROBLEM_STATES)

    @property
    def query(self) -> str:
        """The drill-down: the dashboard narrowed to this pod (or rack)."""
        params = {"pod": self.pod} | ({"rack": self.rack} if self.level == "rack" else {})
        return urlencode(params)

    @property
    def label(self) -> str:
        """The hover text and accessible name; static/js/cluster.js builds the same string."""
        counted = ", ".join(f"{count} {state}" for state, _, count in self.counts if count)
        parts = [f"{self.level} {self.name}: {self.node_count} nodes ({counted or 'none'})"]
        if self.open_faults:
            parts.append(f"{self.open_faults} open fault tickets")
        if self.in_maintenance:
            parts.append(f"{self.in_maintenance} in maintenance")
        return " · ".join(parts)


@dataclass
class GridPod:
    name: str
    racks: list[GridRack] = field(default_factory=list)

    @property
    def node_count(self) -> int:
        return sum(len(rack.cells) for rack in self.racks)

    @property
    def problem_count(self) -> int:
        return sum(cell.is_problem for rack in self.racks for cell in rack.cells)


@dataclass
class ClusterGrid:
    pods: list[GridPod]
    state_counts: dict[str, int]
    node_total: int
    gpu_total: int
    # None: the user may not read jobs (a viewer), so the page cannot say how many are in use.
    gpus_in_use: int | None = 0
    # GPUs the user's running jobs hold on nodes the grid does not count (a tenant's job on
    # shared nodes, outside its allocation): said beside "in use", never added to it, so the
    # figure is never "8 of 0". Always 0 for a role that sees every node.
    gpus_in_use_elsewhere: int = 0
    # None: the user may not see fault tickets (the page shows no fault information at all).
    faults_by_category: list[tuple[str, str, int]] | None = None
    # Every pod the user may see, in natural order, whatever `pods` was narrowed to.
    pod_names: list[str] = field(default_factory=list)
    pod: str = ""  # the pod the grid was narrowed to, if any
    rack: str = ""  # the rack of that pod the grid was narrowed to, if any
    problems_only: bool = False
    # Past settings.DASHBOARD_AGGREGATE_ABOVE_NODES: pods (or one big pod's racks) as aggregate
    # cells, in natural order, instead of `pods`' cells per node.
    aggregates: list[AggregateCell] = field(default_factory=list)
    aggregate_level: str = ""  # "pod" or "rack" when `aggregates` is what the grid draws

    @property
    def open_fault_total(self) -> int:
        return sum(count for _, _, count in self.faults_by_category or [])

    @property
    def legend(self) -> list[tuple[str, str, int]]:
        counts = self.state_counts
        return [(state, letter, counts.get(state, 0)) for state, letter in GRID_STATES.items()]


def open_faults_by_category(*, user) -> list[tuple[str, str, int]] | None:
    """(category, label, count) of open tickets for every category, or None for a user who may
    not read fault tickets. One query."""
    if not may(user, "read_faults"):
        return None
    counts = dict(
        ticket_list(user=user, filters={"status": "open"})
        .order_by()
        .values_list("category")
        .annotate(count=Count("id"))
    )
    return [(value, label, counts.get(value, 0)) for value, label in Category.choices]


def _open_faults_by_node(*, user, nodes) -> dict[int, int]:
    if not may(user, "read_faults"):
        return {}
    rows = (
        FaultTicket.objects.filter(status__in=OPEN_STATUSES, node__in=nodes)
        .order_by()
        .values_list("node_id")
        .annotate(count=Count("id"))
    )
    return dict(rows)


def _running_jobs_by_node(*, user, nodes) -> dict[int, list[RunningJob]]:
    """The running jobs `user` may see on each node, by job id. One query."""
    jobs = visible_jobs(user=user).filter(pk__in=running_jobs().values("pk"))
    rows = (
        Job.nodes.through.objects.filter(job__in=jobs, node__in=nodes)
        .order_by("job__job_id")
        .values_list("node_id", "job__job_id", "job__user")
    )
    by_node: dict[int, list[RunningJob]] = defaultdict(list)
    for node_id, job_id, job_user in rows:
        by_node[node_id].append(RunningJob(job_id, job_user))
    return by_node


def _maintenance_by_node(*, user) -> dict[str, int]:
    """Hostname -> the running maintenance window holding it, for a user who may read the
    fabric (windows are fabric planning: a tenant admin sees the nodes drained, not why)."""
    if not may(user, "read_fabric"):
        return {}
    return running_window_by_node()


def _gpus_by_place(*, user, visible) -> Counter:
    """{(pod, rack): GPUs} of the visible nodes. For a reader of the whole cluster it is the same
    for every reader until the inventory changes, and counting 100,000 GPUs through their nodes
    was the largest query of the dashboard at scale 125 (0.23-0.36 s): cached per revision."""

    def count() -> Counter:
        return Counter(dict(
            ((place_pod, place_rack), count)
            for place_pod, place_rack, count in GPU.objects.filter(node__in=visible).order_by()
            .values_list("node__pod__name", "node__rack__name").annotate(count=Count("id"))
        ))

    if may(user, "read_cluster"):
        return cached_by_revision("dashboard-gpus-by-place", count)
    return count()


def gpus_in_use(*, user) -> int:
    """GPUs that the running jobs `user` may see hold on the nodes `user` may see: the same
    nodes the total counts, so the figure is never "8 of 0" (a tenant's job running outside
    its allocation). A job's GPUs are spread evenly over its nodes, as Slurm's --gpus-per-node
    does. One query."""
    jobs = visible_jobs(user=user).filter(pk__in=running_jobs().values("pk"))
    rows = Job.nodes.through.objects.filter(job__in=jobs, node__in=visible_nodes(user=user))
    total = 0
    for gpus, node_count in rows.values_list("job__gpus", "job__node_count"):
        total += (gpus or 0) // max(node_count or 1, 1)
    return total


def gpus_in_use_elsewhere(*, user) -> int:
    """GPUs that the running jobs `user` may see hold on nodes `user` does not see: a tenant
    admin's job on shared nodes outside their allocation ("0 of 64" while it ran, issue 26).
    Their own jobs only (visible_jobs); no node of theirs is named, only the count. No query
    for a role that sees every node; one otherwise."""
    if may(user, "read_cluster"):
        return 0
    jobs = visible_jobs(user=user).filter(pk__in=running_jobs().values("pk"))
    rows = Job.nodes.through.objects.filter(job__in=jobs).exclude(
        node__in=visible_nodes(user=user))
    total = 0
    for gpus, node_count in rows.values_list("job__gpus", "job__node_count"):
        total += (gpus or 0) // max(node_count or 1, 1)
    return total


def clean_grid_filters(params) -> dict:
    """`pod`, `rack` and `view` ("problems") from a query string, as cluster_grid's arguments;
    a bad value names its field (cluster_grid names a pod or rack that does not exist)."""
    pod = (params.get("pod") or "").strip()
    rack = (params.get("rack") or "").strip()
    view = (params.get("view") or "").strip()
    errors = {}
    if len(pod) > 100:
        errors["pod"] = ["at most 100 characters"]
    if len(rack) > 100:
        errors["rack"] = ["at most 100 characters"]
    elif rack and not pod:
        errors["rack"] = ["a rack is chosen within a pod: give pod too"]
    if view not in ("", "problems"):
        errors["view"] = [f"unknown view {view[:100]!r} (known: problems)"]
    if errors:
        raise InvalidInput(errors)
    return {"pod": pod, "rack": rack, "problems_only": view == "problems"}


def _sorted_nodes(nodes) -> list:
    return sorted(
        nodes.select_related("pod", "rack").only(
            "id", "hostname", "slurm_state", "slurm_reason", "pod__name", "rack__name",
        ),
        key=lambda node: (
            node.pod is None, natural_key(node.pod.name if node.pod else ""),
            node.rack is None, natural_key(node.rack.name if node.rack else ""),
            natural_key(node.hostname),
        ),
    )


def _node_pods(*, user, nodes, scope, gpu_counts, keep) -> list[GridPod]:
    """`nodes` (sorted) as cells grouped by pod and rack, those `keep` accepts; `scope` (a
    queryset or ids) holds them. Two queries (open tickets, running jobs) whatever their
    number, and one more (running maintenance windows) for a reader of the fabric."""
    faults_by_node = _open_faults_by_node(user=user, nodes=scope)
    jobs_by_node = _running_jobs_by_node(user=user, nodes=scope)
    windows_by_node = _maintenance_by_node(user=user)
    pods: dict[str, GridPod] = {}
    racks: dict[tuple[str, str], GridRack] = {}
    for node in nodes:
        pod_name = node.pod.name if node.pod else "no pod"
        rack_name = node.rack.name if node.rack else "no rack"
        cell = GridCell(
            node_id=node.pk,
            hostname=node.hostname,
            state=grid_state(node.slurm_state),
            slurm_state=node.slurm_state or "unknown",
            reason=node.slurm_reason,
            gpus=gpu_counts.get(node.pk, 0),
            open_faults=faults_by_node.get(node.pk, 0),
            jobs=jobs_by_node.get(node.pk, []),
            maintenance_window=windows_by_node.get(node.hostname),
        )
        if not keep(pod_name, cell):
            continue
        grid_pod = pods.setdefault(pod_name, GridPod(pod_name))
        rack = racks.get((pod_name, rack_name))
        if rack is None:
            rack = racks[(pod_name, rack_name)] = GridRack(rack_name)
            grid_pod.racks.append(rack)
        rack.cells.append(cell)
    return list(pods.values())


def _unknown_place(field_name: str, name: str, known: list[str]) -> InvalidInput:
    shown = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
    message = f"no {field_name} {name!r} among your nodes (known: {shown})"
    return InvalidInput({field_name: [message]})


def cluster_grid(
    *, user, pod: str = "", rack: str = "", problems_only: bool = False
) -> ClusterGrid:
    """Every node the user may see, grouped by pod and rack in natural order (p2 before p10),
    with its open fault tickets and running jobs, and the summary counts: a fixed number of
    queries whatever the size (fewer for a tenant admin, who gets no fault information, and a
    viewer, who gets no jobs).

    `pod`, `rack` and `problems_only` narrow the cells drawn (one pod or one of its racks;
    drained, down or ticketed nodes), never the counts, which always cover every node the user
    may see. Past settings.DASHBOARD_AGGREGATE_ABOVE_NODES nodes the grid is `_fleet_grid`'s.
    """
    visible = visible_nodes(user=user)
    # One grouped read says how big the fleet is, and past the threshold it is all the counts.
    groups = list(
        visible.order_by()
        .values_list("pod__name", "rack__name", "slurm_state")
        .annotate(count=Count("id"))
    )
    if sum(row[3] for row in groups) > settings.DASHBOARD_AGGREGATE_ABOVE_NODES:
        return _fleet_grid(
            user=user, groups=groups, pod=pod, rack=rack, problems_only=problems_only
        )
    nodes = _sorted_nodes(visible)
    gpu_counts = Counter(dict(
        GPU.objects.filter(node__in=visible).order_by().values_list("node_id")
        .annotate(count=Count("id"))
    ))
    state_counts: Counter[str] = Counter(grid_state(node.slurm_state) for node in nodes)
    pod_names: list[str] = []
    for node in nodes:
        if node.pod and (not pod_names or pod_names[-1] != node.pod.name):
            pod_names.append(node.pod.name)
    if pod and pod not in pod_names:
        raise _unknown_place("pod", pod, pod_names)
    rack_names = sorted(
        {node.rack.name for node in nodes if node.rack and node.pod and node.pod.name == pod},
        key=natural_key,
    )
    if rack and rack not in rack_names:
        raise _unknown_place("rack", rack, rack_names)
    if pod or rack:
        nodes = [
            node for node in nodes
            if node.pod and node.pod.name == pod
            and (not rack or (node.rack and node.rack.name == rack))
        ]
    pods = _node_pods(
        user=user, nodes=nodes, scope=visible, gpu_counts=gpu_counts,
        keep=lambda pod_name, cell: not problems_only or cell.is_problem,
    )
    return ClusterGrid(
        pods=pods,
        state_counts=dict(state_counts),
        node_total=sum(state_counts.values()),
        gpu_total=sum(gpu_counts.values()),
        gpus_in_use=gpus_in_use(user=user) if may(user, "read_jobs") else None,
        gpus_in_use_elsewhere=(
            gpus_in_use_elsewhere(user=user) if may(user, "read_jobs") else 0),
        faults_by_category=open_faults_by_category(user=user),
        pod_names=pod_names,
        pod=pod,
        rack=rack,
        problems_only=problems_only,
    )


def _fleet_grid(*, user, groups, pod: str, rack: str, problems_only: bool) -> ClusterGrid:
    """The grid of a fleet too big to draw node by node (100,000 GPUs: 12,500 cells were 2.96 MB):
    every count comes from grouped queries, never a row per node in Python. The whole fleet is
    drawn as a cell per pod, a pod bigger than the threshold as a cell per rack, and a pod, a
    rack or the problems-only view small enough as its nodes' cells (only those nodes read).
    Seven queries at most, whatever the number of nodes (one more, the nodes' pods and racks,
    while a maintenance window runs)."""
    visible = visible_nodes(user=user)
    state_counts: Counter[str] = Counter()
    pod_names = sorted({name for name, _, _, _ in groups if name is not None}, key=natural_key)
    for _, _, slurm_state, count in groups:
        state_counts[grid_state(slurm_state)] += count
    if pod and pod not in pod_names:
        raise _unknown_place("pod", pod, pod_names)
    rack_names = sorted({r for p, r, _, _ in groups if p == pod and r is not None}, key=natural_key)
    if rack and rack not in rack_names:
        raise _unknown_place("rack", rack, rack_names)
    in_scope = sum(
        count for p, r, _, count in groups if (not pod or p == pod) and (not rack or r == rack)
    )
    level = ""
    if not problems_only and in_scope > settings.DASHBOARD_AGGREGATE_ABOVE_NODES:
        level = "rack" if pod and not rack else "pod" if not pod else ""

    gpus_by_place = _gpus_by_place(user=user, visible=visible)
    may_read_jobs = may(user, "read_jobs")
    in_use_by_place: Counter[tuple] = Counter()
    if may_read_jobs:
        jobs = visible_jobs(user=user).filter(pk__in=running_jobs().values("pk"))
        rows = Job.nodes.through.objects.filter(job__in=jobs, node__in=visible).values_list(
            "node__pod__name", "node__rack__name", "job__gpus", "job__node_count"
        )
        # Spread as gpus_in_use() does: a job's GPUs evenly over its nodes.
        for place_pod, place_rack, gpus, node_count in rows:
            in_use_by_place[(place_pod, place_rack)] += (gpus or 0) // max(node_count or 1, 1)

    aggregates: list[AggregateCell] = []
    pods: list[GridPod] = []
    if level:
        def key_of(place_pod, place_rack):
            return (place_pod or "", place_rack or "") if level == "rack" else (place_pod or "", "")

        def wanted(place_pod):
            return level == "pod" or place_pod == pod

        cells: dict[tuple[str, str], AggregateCell] = {}

        def cell_for(place_pod, place_rack) -> AggregateCell:
            key = key_of(place_pod, place_rack)
            if key not in cells:
                cells[key] = AggregateCell(level, key[0], key[1], {},
                                           gpus_in_use=0 if may_read_jobs else None)
            return cells[key]

        for place_pod, place_rack, slurm_state, count in groups:
            if wanted(place_pod):
                counts = cell_for(place_pod, place_rack).state_counts
                state = grid_state(slurm_state)
                counts[state] = counts.get(state, 0) + count
        for (place_pod, place_rack), count in gpus_by_place.items():
            if wanted(place_pod):
                cell_for(place_pod, place_rack).gpus += count
        if may_read_jobs:
            for (place_pod, place_rack), count in in_use_by_place.items():
                if wanted(place_pod):
                    cell_for(place_pod, place_rack).gpus_in_use += count
        if may(user, "read_faults"):
            tickets = (
                FaultTicket.objects.filter(status__in=OPEN_STATUSES, node__in=visible)
                .order_by().values_list("node__pod__name", "node__rack__name")
                .annotate(count=Count("id"))
            )
            for place_pod, place_rack, count in tickets:
                if wanted(place_pod):
                    cell_for(place_pod, place_rack).open_faults += count
        in_maintenance = _maintenance_by_node(user=user)
        if in_maintenance:  # one more grouped read, only while a window runs
            held = (visible.filter(hostname__in=list(in_maintenance)).order_by()
                    .values_list("pod__name", "rack__name").annotate(count=Count("id")))
            for place_pod, place_rack, count in held:
                if wanted(place_pod):
                    cell_for(place_pod, place_rack).in_maintenance += count
        aggregates = sorted(
            cells.values(),
            key=lambda cell: (not cell.pod, natural_key(cell.pod), not cell.rack,
                              natural_key(cell.rack)),
        )
    else:
        nodes = visible
        if pod:
            nodes = nodes.filter(pod__name=pod)
        if rack:
            nodes = nodes.filter(rack__name=rack)
        if problems_only:
            problem_words = {s for _, _, s, _ in groups if grid_state(s) in PROBLEM_STATES}
            problem = Q(slurm_state__in=problem_words)
            if may(user, "read_faults"):
                problem |= Q(pk__in=FaultTicket.objects.filter(status__in=OPEN_STATUSES)
                             .values("node_id"))
            nodes = nodes.filter(problem)
        nodes = _sorted_nodes(nodes)
        ids = [node.pk for node in nodes]
        gpu_counts = Counter(dict(
            GPU.objects.filter(node__in=ids).order_by().values_list("node_id")
            .annotate(count=Count("id"))
        ))
        pods = _node_pods(
            user=user, nodes=nodes, scope=ids, gpu_counts=gpu_counts,
            keep=lambda pod_name, cell: not problems_only or cell.is_problem,
        )
    return ClusterGrid(
        pods=pods,
        state_counts=dict(state_counts),
        node_total=sum(state_counts.values()),
        gpu_total=sum(gpus_by_place.values()),
        gpus_in_use=sum(in_use_by_place.values()) if may_read_jobs else None,
        gpus_in_use_elsewhere=gpus_in_use_elsewhere(user=user) if may_read_jobs else 0,
        faults_by_category=open_faults_by_category(user=user),
        pod_names=pod_names,
        pod=pod,
        rack=rack,
        problems_only=problems_only,
        aggregates=aggregates,
        aggregate_level=level,
    )

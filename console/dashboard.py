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

from django.db.models import Count

from faults.models import Category, FaultTicket
from faults.selectors import ticket_list
from faults.workflow import OPEN_STATUSES
from inventory.models import GPU
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
        return " · ".join(parts)


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
    # None: the user may not see fault tickets (the page shows no fault information at all).
    faults_by_category: list[tuple[str, str, int]] | None = None
    # Every pod the user may see, in natural order, whatever `pods` was narrowed to.
    pod_names: list[str] = field(default_factory=list)
    pod: str = ""  # the pod the grid was narrowed to, if any
    problems_only: bool = False

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


def clean_grid_filters(params) -> dict:
    """`pod` and `view` ("problems") from a query string, as cluster_grid's arguments; a bad
    value names its field (cluster_grid names a pod that does not exist)."""
    pod = (params.get("pod") or "").strip()
    view = (params.get("view") or "").strip()
    errors = {}
    if len(pod) > 100:
        errors["pod"] = ["at most 100 characters"]
    if view not in ("", "problems"):
        errors["view"] = [f"unknown view {view[:100]!r} (known: problems)"]
    if errors:
        raise InvalidInput(errors)
    return {"pod": pod, "problems_only": view == "problems"}


def cluster_grid(*, user, pod: str = "", problems_only: bool = False) -> ClusterGrid:
    """Every node the user may see, grouped by pod and rack in natural order (p2 before p10),
    with its open fault tickets and running jobs, and the summary counts: eight queries
    whatever the size (fewer for a tenant admin, who gets no fault information, and a viewer,
    who gets no jobs).

    `pod` and `problems_only` narrow the cells drawn (one pod; drained, down or ticketed
    nodes), never the counts, which always cover every node the user may see.
    """
    nodes = sorted(
        visible_nodes(user=user)
        .select_related("pod", "rack")
        .only(
            "id", "hostname", "slurm_state", "slurm_reason", "pod__name", "rack__name",
        ),
        key=lambda node: (
            node.pod is None, natural_key(node.pod.name if node.pod else ""),
            node.rack is None, natural_key(node.rack.name if node.rack else ""),
            natural_key(node.hostname),
        ),
    )
    gpu_counts = Counter(
        GPU.objects.filter(node__in=visible_nodes(user=user)).values_list("node_id", flat=True)
    )
    faults_by_node = _open_faults_by_node(user=user, nodes=visible_nodes(user=user))
    jobs_by_node = _running_jobs_by_node(user=user, nodes=visible_nodes(user=user))
    pods: dict[str, GridPod] = {}
    racks: dict[tuple[str, str], GridRack] = {}
    state_counts: Counter[str] = Counter()
    pod_names: list[str] = []
    for node in nodes:
        pod_name = node.pod.name if node.pod else "no pod"
        rack_name = node.rack.name if node.rack else "no rack"
        if node.pod and (not pod_names or pod_names[-1] != pod_name):
            pod_names.append(pod_name)
        state = grid_state(node.slurm_state)
        state_counts[state] += 1
        cell = GridCell(
            node_id=node.pk,
            hostname=node.hostname,
            state=state,
            slurm_state=node.slurm_state or "unknown",
            reason=node.slurm_reason,
            gpus=gpu_counts.get(node.pk, 0),
            open_faults=faults_by_node.get(node.pk, 0),
            jobs=jobs_by_node.get(node.pk, []),
        )
        if (pod and pod_name != pod) or (problems_only and not cell.is_problem):
            continue
        grid_pod = pods.setdefault(pod_name, GridPod(pod_name))
        rack = racks.get((pod_name, rack_name))
        if rack is None:
            rack = racks[(pod_name, rack_name)] = GridRack(rack_name)
            grid_pod.racks.append(rack)
        rack.cells.append(cell)
    if pod and pod not in pod_names:
        shown = ", ".join(pod_names[:10]) + (", ..." if len(pod_names) > 10 else "")
        raise InvalidInput({"pod": [f"no pod {pod!r} among your nodes (known: {shown})"]})
    return ClusterGrid(
        pods=list(pods.values()),
        state_counts=dict(state_counts),
        node_total=sum(state_counts.values()),
        gpu_total=sum(gpu_counts.values()),
        gpus_in_use=gpus_in_use(user=user) if may(user, "read_jobs") else None,
        faults_by_category=open_faults_by_category(user=user),
        pod_names=pod_names,
        pod=pod,
        problems_only=problems_only,
    )

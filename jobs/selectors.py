"""Reads of the jobs app, restricted by who asks, in a number of queries that does not grow.

Visibility (DESIGN.md section 6): jobs are tenant data. Admins, operators and on-call see every
job; a tenant admin sees the jobs of their tenant's Slurm account; viewers see none.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Prefetch, Q, QuerySet

from inventory.hostlist import compress_hostlist
from inventory.models import GPU, NIC, Cable, CableStatus, Node, Switch, SwitchPort
from inventory.selectors import nic_link, nodes_from_hostlist, visible_nodes, with_cable_ends
from jobs.buckets import SIZE_BUCKET_LABELS, bucket_bounds
from jobs.models import LIVE_STATES, Job
from portal.errors import InvalidInput
from portal.models import Role
from portal.roles import may


def visible_jobs(*, user) -> QuerySet[Job]:
    return Job.objects.filter(job_visibility(user=user))


def job_visibility(*, user, tenant_field: str = "tenant_id") -> Q:
    """Who sees which jobs, as a filter on a tenant column: `tenant_field` names it, so that a
    copy of the jobs kept by an app above (telemetry's summaries) is scoped by the same rule."""
    if may(user, "read_tenant_data"):
        return Q()
    if user.role == Role.TENANT_ADMIN and user.tenant_id:
        return Q(**{tenant_field: user.tenant_id})
    return Q(pk__in=[])  # nothing: Django answers it without a query


def running_jobs() -> QuerySet[Job]:
    """Jobs running now, as the last squeue sync saw them."""
    return Job.objects.filter(state="RUNNING", left_queue_at__isnull=True)


def live_jobs() -> QuerySet[Job]:
    return Job.objects.filter(state__in=LIVE_STATES, left_queue_at__isnull=True)


# -- the job list ------------------------------------------------------------------------------


def _size_filter(queryset: QuerySet[Job], label: str) -> QuerySet[Job]:
    bucket = bucket_bounds(label)
    if bucket is None:
        raise InvalidInput({"size": [f"unknown size {label!r}; use one of {SIZE_BUCKET_LABELS}"]})
    queryset = queryset.filter(node_count__gte=bucket.min_nodes)
    if bucket.max_nodes is not None:
        queryset = queryset.filter(node_count__lte=bucket.max_nodes)
    return queryset


def _live_filter(queryset: QuerySet[Job], value) -> QuerySet[Job]:
    live = Q(state__in=LIVE_STATES, left_queue_at__isnull=True)
    wanted = str(value).lower() in ("1", "true", "yes")
    return queryset.filter(live) if wanted else queryset.exclude(live)


def _node_filter(queryset: QuerySet[Job], value) -> QuerySet[Job]:
    """Jobs on a node, or on any node of a hostlist (`gpu[001-004]`); each job once."""
    from inventory.hostlist import expand_hostlist

    hostnames = expand_hostlist(str(value), field="node")
    on_nodes = Job.nodes.through.objects.filter(node__hostname__in=hostnames).values("job_id")
    return queryset.filter(pk__in=on_nodes)


JOB_FILTERS = {
    "state": lambda qs, value: qs.filter(state=str(value).upper()),
    "user": lambda qs, value: qs.filter(user=value),
    "account": lambda qs, value: qs.filter(account=value),
    "partition": lambda qs, value: qs.filter(partition=value),
    "size": _size_filter,
    "live": _live_filter,
    "node": lambda qs, value: _node_filter(qs, value),
}


def job_list(*, user, filters: dict | None = None) -> QuerySet[Job]:
    """Jobs `user` may see, newest first, filtered by JOB_FILTERS names; the tenant is joined
    in (one query per page whatever its size)."""
    jobs = visible_jobs(user=user)
    unknown = sorted(set(filters or {}) - set(JOB_FILTERS))
    if unknown:
        raise InvalidInput(
            {"filters": [f"unknown filter {name!r} (known: {', '.join(JOB_FILTERS)})"
                         for name in unknown]}
        )
    for name, value in (filters or {}).items():
        if value not in (None, ""):
            jobs = JOB_FILTERS[name](jobs, value)
    return jobs.select_related("tenant").order_by("-submit_time", "-id")


def job_filter_choices(*, user) -> dict[str, list[str]]:
    """Values offered in the list's filter menus, from the jobs `user` may see."""
    jobs = visible_jobs(user=user).order_by()
    return {
        "state": sorted(set(jobs.values_list("state", flat=True).distinct())),
        "partition": sorted(set(jobs.values_list("partition", flat=True).distinct())),
        "size": list(SIZE_BUCKET_LABELS),
    }


def running_jobs_on_node(*, user, node: Node) -> QuerySet[Job]:
    return visible_jobs(user=user).filter(
        pk__in=running_jobs().filter(nodes=node).values("pk")
    ).order_by("job_id")


# -- the job's hardware: nodes, GPUs, rail NICs, leaf ports -------------------------------------


@dataclass(frozen=True)
class RailLink:
    rail: int | None
    nic: NIC
    port: SwitchPort | None
    switch: Switch | None


@dataclass(frozen=True)
class NodeHardware:
    node: Node
    gpus: list[GPU]
    rails: list[RailLink]


@dataclass
class JobHardware:
    """What a job runs on, down to the leaf ports: `switches` are the leafs it crosses."""

    nodes: list[NodeHardware] = field(default_factory=list)
    switches: list[Switch] = field(default_factory=list)
    ports_by_switch: dict[str, list[str]] = field(default_factory=dict)
    missing_nodes: list[str] = field(default_factory=list)

    @property
    def gpu_count(self) -> int:
        return sum(len(row.gpus) for row in self.nodes)


def job_hardware(job: Job) -> JobHardware:
    """The job's nodes with their GPUs and rail NICs, each NIC with the leaf port and switch
    its active cable lands on. Five queries whatever the job's size."""
    rail_nics = with_cable_ends(
        NIC.objects.filter(role=NIC.Role.RAIL).select_related("affinity_gpu").order_by("rail")
    )
    nodes = list(
        job.nodes.select_related("pod", "rack")
        .prefetch_related(
            Prefetch("gpus", queryset=GPU.objects.order_by("index")),
            Prefetch("nics", queryset=rail_nics, to_attr="rail_nics"),
        )
        .order_by("hostname")
    )
    hardware = JobHardware()
    switches: dict[int, Switch] = {}
    ports: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        rails = []
        for nic in node.rail_nics:
            link = nic_link(nic)
            port = link.port if link else None
            switch = port.switch if port else None
            rails.append(RailLink(nic.rail, nic, port, switch))
            if switch is not None:
                switches[switch.pk] = switch
                ports[switch.hostname].append(port.name)
        hardware.nodes.append(NodeHardware(node, list(node.gpus.all()), rails))
    hardware.switches = sorted(switches.values(), key=lambda switch: switch.hostname)
    hardware.ports_by_switch = {name: sorted(ports[name]) for name in sorted(ports)}
    known = {node.hostname for node in nodes}
    if job.nodelist:
        from inventory.hostlist import expand_hostlist

        hardware.missing_nodes = [
            name for name in expand_hostlist(job.nodelist) if name not in known
        ]
    return hardware


# -- the reverse: running jobs behind a switch or a port ---------------------------------------


def _active_cables() -> QuerySet[Cable]:
    return Cable.objects.exclude(status=CableStatus.DECOMMISSIONED)


def _nodes_cabled_to(port_ids) -> QuerySet:
    """Ids of the nodes whose NICs are cabled (active cables) to any of `port_ids`."""
    cables = _active_cables()
    nic_ids = NIC.objects.filter(
        Q(pk__in=cables.filter(a_port_id__in=port_ids, b_nic__isnull=False).values("b_nic"))
        | Q(pk__in=cables.filter(b_port_id__in=port_ids, a_nic__isnull=False).values("a_nic"))
    )
    return nic_ids.values("node")


def _jobs_spanning_pods(jobs: QuerySet[Job], pod_ids: set[int]) -> QuerySet[Job]:
    """The jobs among `jobs` whose nodes sit in more than one pod, at least one of them among
    `pod_ids`: their traffic between pods crosses the spines."""
    rows = (
        Job.nodes.through.objects.filter(job__in=jobs)
        .values_list("job_id", "node__pod_id")
        .distinct()
    )
    pods_by_job: dict[int, set] = defaultdict(set)
    for job_pk, pod_id in rows:
        pods_by_job[job_pk].add(pod_id)
    crossing = [pk for pk, pods in pods_by_job.items() if len(pods) > 1 and pods & pod_ids]
    return jobs.filter(pk__in=crossing)


def jobs_behind_switch(switch: Switch) -> QuerySet[Job]:
    """Running jobs whose traffic goes through `switch`.

    A leaf (or storage/management switch): jobs on the nodes cabled to it. A spine: jobs
    spanning both pods (every leaf reaches every spine, so any of them may cross it). At most
    three queries, whatever the fleet's size.
    """
    if switch.role == Switch.Role.SPINE:
        leaf_pods = set(
            Switch.objects.filter(role=Switch.Role.LEAF, pod__isnull=False)
            .values_list("pod_id", flat=True)
            .distinct()
        )
        return _jobs_spanning_pods(running_jobs(), leaf_pods).order_by("job_id")
    port_ids = list(SwitchPort.objects.filter(switch=switch).values_list("pk", flat=True))
    return (
        running_jobs().filter(nodes__in=_nodes_cabled_to(port_ids)).distinct().order_by("job_id")
    )


def running_jobs_on_nodes(node_ids) -> QuerySet[Job]:
    """Running jobs with at least one node among `node_ids` (ids or a values() subquery)."""
    return running_jobs().filter(nodes__in=node_ids).distinct().order_by("job_id")


def running_jobs_named_by_node(nodes) -> dict[str, list[str]]:
    """{hostname: ["job 1234 (alice, physics)", ...]} of the running jobs on `nodes`: what a
    power-off would end (registered as inventory's power guard)."""
    named: dict[str, list[str]] = {}
    jobs = running_jobs_on_nodes([node.pk for node in nodes]).prefetch_related("nodes")
    wanted = {node.hostname for node in nodes}
    for job in jobs:
        for node in job.nodes.all():
            if node.hostname in wanted:
                named.setdefault(node.hostname, []).append(
                    f"job {job.job_id} ({job.user}, {job.account})"
                )
    return named


def running_jobs_crossing_pods(pod_ids: set[int]) -> QuerySet[Job]:
    """Running jobs spanning more than one pod, one of them among `pod_ids`: the jobs whose
    traffic crosses the spines those pods' leafs uplink to."""
    return _jobs_spanning_pods(running_jobs(), set(pod_ids)).order_by("job_id")


def jobs_behind_port(port: SwitchPort) -> QuerySet[Job]:
    """Running jobs whose traffic goes through `port`: a host-facing port (or a broken-out
    cage, through its halves) gives the jobs on the node behind it; a leaf-spine link gives
    the jobs behind the leaf that span both pods."""
    port_ids = [port.pk, *port.breakout_children.values_list("pk", flat=True)]
    cables = _active_cables().filter(Q(a_port_id__in=port_ids) | Q(b_port_id__in=port_ids))
    far_switch_ids = set(
        cables.filter(a_port_id__in=port_ids, b_port__isnull=False).values_list(
            "b_port__switch", flat=True
        )
    ) | set(
        cables.filter(b_port_id__in=port_ids, a_port__isnull=False).values_list(
            "a_port__switch", flat=True
        )
    )
    if not far_switch_ids:
        return (
            running_jobs().filter(nodes__in=_nodes_cabled_to(port_ids)).distinct().order_by("job_id")
        )
    # A switch-to-switch link: the leaf end decides which jobs may use it.
    ends = Switch.objects.filter(pk__in=far_switch_ids | {port.switch_id})
    leaf = next((switch for switch in ends if switch.role == Switch.Role.LEAF), None)
    if leaf is None:
        return Job.objects.none()
    behind_leaf = jobs_behind_switch(leaf)
    return _jobs_spanning_pods(behind_leaf, {leaf.pod_id}).order_by("job_id")


def switch_for_filter(*, user, switch_id) -> Switch:
    from inventory.selectors import switch_list

    switch = switch_list(user=user).filter(pk=_as_id(switch_id, "switch")).first()
    if switch is None:
        raise InvalidInput({"switch": [f"no switch with id {switch_id}"]})
    return switch


def port_for_filter(*, user, port_id) -> SwitchPort:
    from inventory.selectors import port_list

    port = port_list(user=user).filter(pk=_as_id(port_id, "port")).first()
    if port is None:
        raise InvalidInput({"port": [f"no switch port with id {port_id}"]})
    return port


def _as_id(value, field_name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInput({field_name: [f"{value!r} is not an id"]}) from None


# -- nodes named in a drain or resume request --------------------------------------------------


def nodes_for_request(*, user, hostlist: str | None = None, node_ids=None) -> list[Node]:
    """The nodes a drain/resume request names, by hostlist expression or by ids; InvalidInput
    names the field and every node that does not exist (or is not visible to `user`)."""
    if hostlist and node_ids:
        raise InvalidInput({"hostlist": ["Give either hostlist or node_ids, not both."]})
    if hostlist:
        return nodes_from_hostlist(user=user, expression=hostlist)
    if not node_ids:
        raise InvalidInput({"hostlist": ["Name the nodes: a hostlist or node_ids."]})
    ids = [_as_id(value, "node_ids") for value in node_ids]
    nodes = {node.pk: node for node in visible_nodes(user=user).filter(pk__in=ids)}
    missing = [str(pk) for pk in ids if pk not in nodes]
    if missing:
        raise InvalidInput({"node_ids": [f"unknown node id(s): {', '.join(missing)}"]})
    return [nodes[pk] for pk in dict.fromkeys(ids)]


def describe_nodes(nodes) -> str:
    return compress_hostlist(node.hostname for node in nodes)

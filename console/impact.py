"""Impact: what taking one object out of service hits (DESIGN.md section 10).

One answer for a node, GPU, NIC, switch port, switch (leaf, spine, storage), cable or hostlist:
the running jobs on the hardware it takes away (id, user, account, tenant, nodes, GPUs), the
tenants whose jobs or current allocations are hit, the nodes out or degraded (which rails and
storage links they lose), and for leaf-spine links the share of each pod's bisection lost.

The domain facts come from the owning apps: cabling from inventory (the same cable rules as
`fabric.impact.blast_radius`), running jobs from jobs.selectors. This module only composes them
and scopes the answer to the user, like every selector: a tenant admin names and sees only their
own nodes and jobs, a viewer sees the hardware side but no jobs or tenants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from django.db.models import Case, Count, F, Prefetch, Q, QuerySet, Sum, When
from django.db.models.functions import Coalesce, Least
from django.utils import timezone

from inventory.hostlist import compress_hostlist, expand_hostlist
from inventory.models import GPU, NIC, Allocation, Cable, Node, Pod, Switch, SwitchPort
from inventory.revision import cached_by_revision
from inventory.selectors import (
    active_cable_ids_by_far_end,
    active_cables,
    cable_list,
    visible_nodes,
)
from jobs.models import Job
from jobs.selectors import running_jobs_crossing_pods, running_jobs_on_nodes, visible_jobs
from portal.errors import InvalidInput
from portal.lookups import InArray
from portal.models import Role
from portal.planner import reads_from_memory
from portal.roles import may

KINDS = ("node", "hostlist", "gpu", "nic", "port", "switch", "cable")
TARGET_FIELD = "target"
EXAMPLES = "node:gpu011, hostlist:gpu[001-004], gpu:gpu011:3, nic:gpu011:mlx5_4, " \
           "port:leaf-p1-r3:Ethernet8, switch:leaf-p1-r3, cable:1042"
SWITCH_KINDS = frozenset({"port", "switch"})  # the fabric is not part of a tenant's slice


def _bad(message: str) -> InvalidInput:
    return InvalidInput({TARGET_FIELD: [message]})


# -- what a target takes away --------------------------------------------------------------------


@dataclass
class NodeEffect:
    node: Node
    out: bool = False  # the whole node (a drain, a reboot)
    gpus: set[int] = field(default_factory=set)
    rails: set[int] = field(default_factory=set)
    links: list[str] = field(default_factory=list)  # NICs whose link goes: "mlx5_4 (rail 3)"
    link_roles: set[str] = field(default_factory=set)  # storage, management, ... (not rails)

    def as_dict(self) -> dict:
        node = self.node
        return {
            "hostname": node.hostname,
            "pod": node.pod.name if node.pod_id else None,
            "slurm_state": node.slurm_state,
            "effect": "out" if self.out else "degraded",
            "gpus": sorted(self.gpus),
            "rails": sorted(self.rails),
            "links": self.links,
        }


@dataclass
class Reach:
    """What a resolved target takes away: whole or partial nodes, and leaf-spine uplinks."""

    kind: str
    label: str
    nodes: dict[int, NodeEffect] = field(default_factory=dict)
    uplink_cable_ids: set[int] = field(default_factory=set)
    crosses_spine: bool = False  # a spine: every job spanning pods may use it

    def effect(self, node: Node) -> NodeEffect:
        if node.pk not in self.nodes:
            self.nodes[node.pk] = NodeEffect(node)
        return self.nodes[node.pk]

    def lose_nic(self, nic: NIC) -> None:
        effect = self.effect(nic.node)
        if nic.role == NIC.Role.RAIL and nic.rail is not None:
            effect.rails.add(nic.rail)
            effect.links.append(f"{nic.device} (rail {nic.rail})")
        else:
            effect.links.append(f"{nic.device} ({nic.role})")
            effect.link_roles.add(nic.role)


def _cables_with_ends(cables):
    return cables.select_related(
        "a_nic__node__pod", "b_nic__node__pod", "a_port__switch", "b_port__switch"
    )


def _lose_cables(reach: Reach, cables) -> None:
    """Each cable's NIC end loses its link; a switch-to-switch cable is an uplink."""
    for cable in cables:
        nics = [nic for nic in (cable.a_nic, cable.b_nic) if nic is not None]
        for nic in nics:
            reach.lose_nic(nic)
        if not nics:
            reach.uplink_cable_ids.add(cable.pk)


def _node(user, hostname: str) -> Node:
    node = visible_nodes(user=user).select_related("pod").filter(hostname=hostname).first()
    if node is None:
        raise _bad(f"Unknown node {hostname!r}.")
    return node


def _switch(hostname: str) -> Switch:
    switch = Switch.objects.select_related("pod").filter(hostname=hostname).first()
    if switch is None:
        raise _bad(f"Unknown switch {hostname!r}.")
    return switch


def _resolve_node(user, name: str) -> Reach:
    node = _node(user, name)
    reach = Reach("node", node.hostname)
    reach.effect(node).out = True
    return reach


def _resolve_hostlist(user, name: str) -> Reach:
    hostnames = expand_hostlist(name, field=TARGET_FIELD)
    nodes = {n.hostname: n for n in
             visible_nodes(user=user).select_related("pod").filter(hostname__in=hostnames)}
    missing = [hostname for hostname in hostnames if hostname not in nodes]
    if missing:
        raise _bad(f"Unknown node(s): {compress_hostlist(missing)}.")
    reach = Reach("hostlist", compress_hostlist(hostnames))
    for hostname in hostnames:
        reach.effect(nodes[hostname]).out = True
    return reach


def _resolve_gpu(user, name: str) -> Reach:
    host, _, index = name.rpartition(":")
    gpus = GPU.objects.select_related("node__pod").filter(node__in=visible_nodes(user=user))
    if host:
        if not index.isdigit():
            raise _bad(f"Name the GPU as <node>:<index>, e.g. gpu011:3; got {name!r}.")
        gpu = gpus.filter(node__hostname=host, index=int(index)).first()
    else:
        gpu = gpus.filter(Q(uuid=name) | Q(serial=name)).first() if name else None
    if gpu is None:
        raise _bad(f"Unknown GPU {name!r}: use <node>:<index>, a UUID or a serial.")
    reach = Reach("gpu", f"{gpu.node.hostname} GPU{gpu.index}")
    reach.effect(gpu.node).gpus.add(gpu.index)
    return reach


def _resolve_nic(user, name: str) -> Reach:
    host, _, device = name.partition(":")
    nic = (
        NIC.objects.select_related("node__pod")
        .filter(node__in=visible_nodes(user=user), node__hostname=host, device=device)
        .first()
    )
    if nic is None:
        raise _bad(f"Unknown NIC {name!r}: use <node>:<device>, e.g. gpu011:mlx5_4.")
    reach = Reach("nic", f"{nic.node.hostname} {nic.device}")
    reach.lose_nic(nic)
    return reach


def _resolve_port(user, name: str) -> Reach:
    """`<switch>:<port>[,<port>...]`: a confirmation shutting several ports asks about all."""
    hostname, _, port_names = name.partition(":")
    switch = _switch(hostname)
    wanted = [port_name for port_name in port_names.split(",") if port_name]
    ports = list(SwitchPort.objects.filter(switch=switch, name__in=wanted))
    missing = sorted(set(wanted) - {port.name for port in ports})
    if missing or not wanted:
        raise _bad(f"Unknown port {', '.join(missing) or port_names!r} on {switch.hostname}; use "
                   "port:<switch>:<port>, e.g. port:leaf-p1-r3:Ethernet8.")
    # A broken-out cage carries the links of its halves.
    port_ids = [port.pk for port in ports] + list(
        SwitchPort.objects.filter(breakout_parent__in=ports).values_list("pk", flat=True)
    )
    reach = Reach("port", f"{switch.hostname} {', '.join(port.name for port in ports)}")
    cables = active_cables().filter(Q(a_port_id__in=port_ids) | Q(b_port_id__in=port_ids))
    _lose_cables(reach, _cables_with_ends(cables))
    return reach


def _resolve_switch(user, name: str) -> Reach:
    switch = _switch(name)
    words = [switch.role]
    if switch.pod_id:
        words.append(switch.pod.name)
    if switch.rail is not None:
        words.append(f"rail {switch.rail}")
    reach = Reach("switch", f"{switch.hostname} ({', '.join(words)})")
    # Only the cables to NICs are needed whole; of the switch-to-switch ones (a fleet's spine
    # has thousands) the ids are enough.
    ports = SwitchPort.objects.filter(switch=switch).values("pk")
    cable_ids = active_cable_ids_by_far_end(ports)
    if cable_ids["nic"]:
        _lose_cables(reach, _cables_with_ends(Cable.objects.filter(pk__in=cable_ids["nic"])))
    reach.uplink_cable_ids.update(cable_ids["port"])
    reach.crosses_spine = switch.role == Switch.Role.SPINE
    return reach


def _resolve_cable(user, name: str) -> Reach:
    cables = _cables_with_ends(cable_list(user=user))
    cable = cables.filter(pk=int(name)).first() if name.isdigit() else None
    cable = cable or (cables.filter(label=name).first() if name else None)
    if cable is None:
        raise _bad(f"Unknown cable {name!r}: use its number or label.")
    reach = Reach("cable", f"cable #{cable.pk}" + (f" {cable.label}" if cable.label else ""))
    _lose_cables(reach, [cable])
    return reach


RESOLVERS = {
    "node": _resolve_node,
    "hostlist": _resolve_hostlist,
    "gpu": _resolve_gpu,
    "nic": _resolve_nic,
    "port": _resolve_port,
    "switch": _resolve_switch,
    "cable": _resolve_cable,
}


def resolve_target(*, user, target: str) -> Reach:
    """Parse `<kind>:<name>` and find what it takes away, as far as `user` may see; a bad,
    unknown or invisible target is an InvalidInput naming `target`."""
    if not isinstance(target, str) or not target.strip():
        raise _bad(f"Name what to assess as <kind>:<name>, e.g. {EXAMPLES}.")
    kind, separator, name = target.strip().partition(":")
    if not separator or kind not in RESOLVERS:
        raise _bad(f"Unknown target kind {kind!r}; use one of {', '.join(KINDS)} "
                   f"(e.g. {EXAMPLES}).")
    if kind in SWITCH_KINDS and not may(user, "read_fabric"):
        raise _bad("Switches and ports are not part of a tenant's slice: name your nodes, "
                   "GPUs, NICs or cables.")
    return RESOLVERS[kind](user, name.strip())


# -- the answer ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Impact:
    target: str
    kind: str
    label: str
    jobs: list[dict]
    tenants: list[dict]
    nodes: list[dict]
    summary: dict

    def as_dict(self) -> dict:
        return {"target": self.target, "kind": self.kind, "label": self.label,
                "jobs": self.jobs, "tenants": self.tenants, "nodes": self.nodes,
                "summary": self.summary}


def impact_of(*, user, target: str) -> Impact:
    """What `target` (`<kind>:<name>`, see console/README.md) hits, as `user` may see it.

    A constant number of queries whatever the fleet's size (about ten)."""
    reach = resolve_target(user=user, target=target)
    nodes = _visible_effects(user, reach)
    node_ids = [effect.node.pk for effect in nodes]
    bisection = _bisection_lost(reach.uplink_cable_ids) if reach.uplink_cable_ids else []
    jobs_visible = may(user, "read_tenant_data") or (
        user.role == Role.TENANT_ADMIN and user.tenant_id is not None
    )
    jobs = _jobs_hit(user, reach, node_ids, bisection) if jobs_visible else []
    tenants = _tenants_hit(user, jobs, node_ids) if jobs_visible else []
    job_rows = [_job_row(job, reach) for job in jobs]
    summary = _summary(reach, target.strip(), nodes, job_rows, tenants, bisection, jobs_visible)
    return Impact(
        target=target.strip(),
        kind=reach.kind,
        label=reach.label,
        jobs=job_rows,
        tenants=tenants,
        nodes=[effect.as_dict() for effect in nodes],
        summary=summary,
    )


def _visible_effects(user, reach: Reach) -> list[NodeEffect]:
    effects = list(reach.nodes.values())
    if not may(user, "read_cluster"):
        allowed = set(visible_nodes(user=user).filter(
            pk__in=[effect.node.pk for effect in effects]).values_list("pk", flat=True))
        effects = [effect for effect in effects if effect.node.pk in allowed]
    return sorted(effects, key=lambda effect: effect.node.hostname)


def _jobs_hit(user, reach: Reach, node_ids: list[int], bisection: list[dict]) -> list[Job]:
    pks: set[int] = set()
    if node_ids:
        pks |= set(running_jobs_on_nodes(node_ids).values_list("pk", flat=True))
    if reach.crosses_spine or bisection:
        # A lost uplink slows every job whose traffic leaves the pod: those spanning pods.
        pods = {row["pod_id"] for row in bisection}
        pks |= set(running_jobs_crossing_pods(pods).values_list("pk", flat=True))
    if not pks:
        return []
    return list(
        visible_jobs(user=user)
        .filter(pk__in=pks)
        .select_related("tenant")
        .prefetch_related(Prefetch("nodes", queryset=Node.objects.only("pk", "hostname")))
        .order_by("job_id")
    )


def _job_row(job: Job, reach: Reach) -> dict:
    hit = sorted(node.hostname for node in job.nodes.all() if node.pk in reach.nodes)
    return {
        "job_id": job.job_id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "tenant": job.tenant.slug if job.tenant_id else None,
        "nodes": job.nodelist,
        "node_count": job.node_count,
        "gpus": job.gpus,
        "nodes_hit": compress_hostlist(hit) if hit else "",
        "how": "on the nodes hit" if hit else "traffic between pods",
    }


def _tenants_hit(user, jobs: list[Job], node_ids: list[int]) -> list[dict]:
    allocations = (
        Allocation.objects.current()
        .filter(nodes__in=node_ids)
        .distinct()
        .select_related("tenant")
        .prefetch_related(Prefetch("nodes", queryset=Node.objects.only("pk", "hostname")))
    ) if node_ids else Allocation.objects.none()
    if not may(user, "read_tenant_data"):
        allocations = allocations.filter(tenant_id=user.tenant_id)
    rows: dict[int, dict] = {}

    def row_for(tenant) -> dict:
        if tenant.pk not in rows:
            rows[tenant.pk] = {"slug": tenant.slug, "name": tenant.name, "jobs": [],
                               "users": [], "allocations": []}
        return rows[tenant.pk]

    for job in jobs:
        if job.tenant_id:
            row = row_for(job.tenant)
            row["jobs"].append(job.job_id)
            if job.user not in row["users"]:
                row["users"].append(job.user)
    wanted = set(node_ids)
    for allocation in allocations:
        hit = sorted(node.hostname for node in allocation.nodes.all() if node.pk in wanted)
        row_for(allocation.tenant)["allocations"].append(
            {"id": allocation.pk, "purpose": allocation.purpose,
             "nodes_hit": compress_hostlist(hit)}
        )
    return sorted(rows.values(), key=lambda row: row["slug"])


def _uplink_capacity(cables) -> QuerySet:
    """Leaf-to-spine cables of `cables` summed per leaf pod: capacity (the slower end's speed)
    and count; one grouped query."""
    leaf, spine = Switch.Role.LEAF, Switch.Role.SPINE
    leaf_pod = Case(When(a_port__switch__role=leaf, then=F("a_port__switch__pod_id")),
                    When(b_port__switch__role=leaf, then=F("b_port__switch__pod_id")),
                    default=None)
    capacity = Least(Coalesce("a_port__speed_gbps", 0), Coalesce("b_port__speed_gbps", 0))
    return (
        cables.filter(a_port__isnull=False, b_port__isnull=False)
        .filter(Q(a_port__switch__role=spine) | Q(b_port__switch__role=spine))
        .annotate(pod_id=leaf_pod)
        .exclude(pod_id=None)
        .values("pod_id")
        .annotate(capacity=Sum(capacity), cables=Count("pk"))
        .order_by()
    )


def _pod_uplink_capacity() -> dict[int, tuple[str, int]]:
    """Pod id -> (name, Gb/s from its leafs to the spines): the whole fabric's uplinks, read
    once per inventory revision (64,000 cables at 100,000 GPUs), not per impact asked."""
    names = dict(Pod.objects.values_list("pk", "name"))
    return {row["pod_id"]: (names[row["pod_id"]], row["capacity"] or 0)
            for row in _uplink_capacity(active_cables())}


def _bisection_lost(cable_ids: set[int]) -> list[dict]:
    """Per pod, the uplink capacity (leaf to spine) the lost cables carry, of the pod's total:
    with full bisection (uplink = downlink capacity) that is the share of bisection lost."""
    totals = cached_by_revision("pod-uplink-capacity", _pod_uplink_capacity)
    rows = []
    # A spine's thousands of cables: one array parameter, not a placeholder each (InArray),
    # read through the keys of their ports rather than by hashing every port of the fleet.
    with reads_from_memory():
        lost_by_pod = list(_uplink_capacity(active_cables().filter(InArray(F("pk"), cable_ids))))
    for row in lost_by_pod:
        name, total = totals.get(row["pod_id"], ("?", 0))
        lost = row["capacity"] or 0
        rows.append({"pod_id": row["pod_id"], "pod": name, "lost_gbps": lost, "total_gbps": total,
                     "lost_fraction": round(lost / total, 4) if total else 0.0})
    return sorted(rows, key=lambda row: row["pod"])


def _summary(reach, target, nodes, jobs, tenants, bisection, jobs_visible) -> dict:
    out = [effect for effect in nodes if effect.out]
    degraded = [effect for effect in nodes if not effect.out]
    rails = sorted({rail for effect in degraded for rail in effect.rails})
    users = sorted({job["user"] for job in jobs})
    summary = {
        "target": target,
        "label": reach.label,
        "jobs_visible": jobs_visible,
        "running_jobs": len(jobs) if jobs_visible else None,
        "users": users if jobs_visible else None,
        "tenants": [row["slug"] for row in tenants] if jobs_visible else None,
        "gpus_in_jobs": sum(job["gpus"] for job in jobs) if jobs_visible else None,
        "nodes_out": compress_hostlist([e.node.hostname for e in out]) if out else "",
        "nodes_out_count": len(out),
        "nodes_degraded": compress_hostlist([e.node.hostname for e in degraded]) if degraded
        else "",
        "nodes_degraded_count": len(degraded),
        "rails": rails,
        "other_links": sorted({role for effect in degraded for role in effect.link_roles}),
        "bisection": [{key: row[key] for key in ("pod", "lost_gbps", "total_gbps",
                                                  "lost_fraction")} for row in bisection],
    }
    summary["text"] = _sentence(summary)
    return summary


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _sentence(summary: dict) -> str:
    parts = []
    if summary["jobs_visible"]:
        if summary["running_jobs"]:
            parts.append(
                f"{_plural(summary['running_jobs'], 'running job')} of "
                f"{_plural(len(summary['users']), 'user')} "
                f"({_plural(len(summary['tenants']), 'tenant')}, "
                f"{summary['gpus_in_jobs']} GPUs)"
            )
        else:
            parts.append("no running job")
    if summary["nodes_out_count"]:
        parts.append(f"{_plural(summary['nodes_out_count'], 'node')} out "
                     f"({summary['nodes_out']})")
    if summary["nodes_degraded_count"]:
        lost = [f"rail {', '.join(map(str, summary['rails']))}"] if summary["rails"] else []
        lost += [f"a {role} link" for role in summary.get("other_links", [])]
        lost = " and ".join(lost) or "a link"
        parts.append(f"{_plural(summary['nodes_degraded_count'], 'node')} lose {lost} "
                     f"({summary['nodes_degraded']})")
    for row in summary["bisection"]:
        parts.append(f"{row['pod']} loses {row['lost_fraction'] * 100:.1f}% of its bisection "
                     f"({row['lost_gbps']} of {row['total_gbps']} Gb/s)")
    return f"{summary['label']}: " + "; ".join(parts) + "."


# The portal's own view, for what it records (a ticket's impact at detection); pages and the API
# show such a record filtered by the reader's role (`visible_snapshot`).
SYSTEM_VIEW = SimpleNamespace(role=Role.ADMIN, tenant_id=None, is_authenticated=True)


def impact_snapshot(target: str) -> dict:
    """The whole impact of `target` now, with the time it was taken (faults.hooks provider)."""
    return {**impact_of(user=SYSTEM_VIEW, target=target).as_dict(),
            "captured_at": timezone.now().isoformat()}


def visible_snapshot(snapshot: dict, *, user) -> dict:
    """A recorded impact as `user` may read it: a viewer gets no jobs or tenants, a tenant
    admin only their own tenant's."""
    if not snapshot:
        return {}
    if may(user, "read_tenant_data"):
        return snapshot
    shown = {**snapshot, "summary": {**snapshot.get("summary", {})}}
    if getattr(user, "role", None) == Role.TENANT_ADMIN and getattr(user, "tenant_id", None):
        from portal.models import Tenant

        slug = Tenant.objects.filter(pk=user.tenant_id).values_list("slug", flat=True).first()
        shown["jobs"] = [job for job in snapshot.get("jobs", []) if job.get("tenant") == slug]
        shown["tenants"] = [row for row in snapshot.get("tenants", []) if row.get("slug") == slug]
        return shown
    shown["jobs"], shown["tenants"] = [], []
    shown["summary"].update(jobs_visible=False, running_jobs=None, users=None, tenants=None,
                            gpus_in_jobs=None)
    if "label" in shown["summary"]:
        shown["summary"]["text"] = _sentence(shown["summary"])
    return shown

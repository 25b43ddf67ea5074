"""Writes for allocations of nodes to tenants.

An allocation is whole nodes for a period. Two tenants never hold the same node at the same
time; nodes under maintenance or decommissioned are not handed out. Each allocation is backed
by a Slurm reservation for the tenant's account, kept in step by a "slurm.reservation_sync"
Action queued in the same transaction: the handler reads the allocation when it runs and makes
Slurm match it, so a retried or late Action never undoes a newer change.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from inventory.hostlist import compress_hostlist, expand_hostlist
from inventory.models import Allocation, LifecycleStatus, Node, Pod, Rack
from portal.errors import Conflict, InvalidInput
from portal.models import Tenant, User
from portal.realtime import recheck_sockets
from portal.services.actions import enqueue_action
from portal.services.audit import record_change

RESERVATION_SYNC_ACTION = "slurm.reservation_sync"
UNALLOCATABLE_STATUSES = (LifecycleStatus.MAINTENANCE, LifecycleStatus.DECOMMISSIONED)


def reservation_name(allocation: Allocation) -> str:
    return f"alloc-{allocation.pk}"


def _resolve_nodes(
    *,
    nodes: Iterable[Node] | None,
    hostlist: str | None,
    pod: Pod | None,
    rack: Rack | None,
) -> list[Node]:
    """The nodes asked for by exactly one of: node objects, a hostlist, a pod, a rack."""
    given = [
        name
        for name, value in (("nodes", nodes), ("hostlist", hostlist), ("pod", pod), ("rack", rack))
        if value not in (None, "", [])
    ]
    if len(given) != 1:
        raise InvalidInput({"nodes": ["Give exactly one of nodes, hostlist, pod or rack."]})
    if hostlist:
        names = expand_hostlist(hostlist, field="hostlist")
        found = {node.hostname: node for node in Node.objects.filter(hostname__in=names)}
        unknown = [name for name in names if name not in found]
        if unknown:
            raise InvalidInput({"hostlist": [f"Unknown nodes: {compress_hostlist(unknown)}"]})
        return [found[name] for name in names]
    if pod is not None:
        return list(Node.objects.filter(pod=pod))
    if rack is not None:
        return list(Node.objects.filter(rack=rack))
    return list(nodes)


def allocation_period_errors(start: datetime | None, end: datetime | None) -> dict[str, list[str]]:
    """What is wrong with [start, end) as an allocation's period, by field: it has a start, and
    an end, when it has one (none: open-ended), after it. The API checks it before anything else
    of a request; every write here checks it again."""
    if start is None:
        return {"start": ["Say when the allocation starts."]}
    if end is not None and end <= start:
        return {"end": ["The end must be after the start."]}
    return {}


def _check_period(start: datetime | None, end: datetime | None) -> None:
    errors = allocation_period_errors(start, end)
    if errors:
        raise InvalidInput(errors)


def _check_allocatable(nodes: list[Node]) -> None:
    if not nodes:
        raise InvalidInput({"nodes": ["The allocation holds no nodes."]})
    unavailable = sorted(node.hostname for node in nodes if node.status in UNALLOCATABLE_STATUSES)
    if unavailable:
        raise Conflict(
            {
                "nodes": [
                    f"Not allocatable (maintenance or decommissioned): "
                    f"{compress_hostlist(unavailable)}"
                ]
            },
            nodes=unavailable,
        )


def _check_no_overlap(
    *,
    tenant: Tenant,
    nodes: list[Node],
    start: datetime,
    end: datetime | None,
    exclude: Allocation | None = None,
) -> None:
    """Refuse when another tenant holds any of the nodes during any part of the period."""
    overlapping = Allocation.objects.filter(nodes__in=nodes).exclude(tenant=tenant)
    overlapping = overlapping.filter(Q(end__isnull=True) | Q(end__gt=start))
    if end is not None:
        overlapping = overlapping.filter(start__lt=end)
    if exclude is not None:
        overlapping = overlapping.exclude(pk=exclude.pk)
    clashes = (
        Allocation.nodes.through.objects.filter(allocation__in=overlapping, node__in=nodes)
        .values_list("node__hostname", "allocation_id", "allocation__tenant__name")
        .order_by("node__hostname")
    )
    clashes = list(clashes)
    if clashes:
        names = sorted({hostname for hostname, _, _ in clashes})
        holders = sorted({f"#{pk} ({tenant_name})" for _, pk, tenant_name in clashes})
        raise Conflict(
            {
                "nodes": [
                    f"Already allocated to another tenant in that period: "
                    f"{compress_hostlist(names)} by allocation {', '.join(holders)}"
                ]
            },
            conflicting_nodes=names,
            conflicting_allocations=sorted({pk for _, pk, _ in clashes}),
        )


def _lock_nodes(nodes: list[Node]) -> None:
    # Two requests for the same nodes serialise here, so the overlap check cannot race.
    list(Node.objects.select_for_update().filter(pk__in=[node.pk for node in nodes]).order_by("pk"))


def _queue_reservation_sync(allocation: Allocation, *, requested_by, reason: str, via: str):
    action, _ = enqueue_action(
        kind=RESERVATION_SYNC_ACTION,
        target=reservation_name(allocation),
        reason=reason,
        requested_by=requested_by,
        parameters={"allocation_id": allocation.pk, "reservation": reservation_name(allocation)},
        via=via,
    )
    return action


def _recheck_tenant_sockets(tenant_id: int) -> None:
    """The tenant may have lost nodes: its admins' open websockets stop following them (the
    "node.<id>" groups) as soon as the change commits. A new allocation takes nothing away."""
    recheck_sockets(user_ids=User.objects.filter(tenant_id=tenant_id).values_list("pk", flat=True))


def _summary(allocation: Allocation, node_names: list[str]) -> dict:
    return {
        "tenant": allocation.tenant.slug,
        "nodes": compress_hostlist(node_names),
        "start": allocation.start.isoformat(),
        "end": allocation.end.isoformat() if allocation.end else None,
        "purpose": allocation.purpose,
    }


def allocation_create(
    *,
    tenant: Tenant,
    start: datetime | None,
    end: datetime | None = None,
    nodes: Iterable[Node] | None = None,
    hostlist: str | None = None,
    pod: Pod | None = None,
    rack: Rack | None = None,
    purpose: str = "",
    created_by=None,
    via: str = "api",
) -> Allocation:
    """Allocate whole nodes to `tenant` for [start, end) and queue its Slurm reservation."""
    if not tenant.slurm_account:
        raise InvalidInput({"tenant": [f"{tenant.name} has no Slurm account to reserve for."]})
    _check_period(start, end)
    with transaction.atomic():
        chosen = _resolve_nodes(nodes=nodes, hostlist=hostlist, pod=pod, rack=rack)
        _check_allocatable(chosen)
        _lock_nodes(chosen)
        _check_no_overlap(tenant=tenant, nodes=chosen, start=start, end=end)
        allocation = Allocation.objects.create(
            tenant=tenant, start=start, end=end, purpose=(purpose or "").strip()
        )
        allocation.nodes.set(chosen)
        names = sorted(node.hostname for node in chosen)
        record_change(
            actor=created_by,
            operation="create",
            instance=allocation,
            after=_summary(allocation, names),
            via=via,
        )
        _queue_reservation_sync(
            allocation,
            requested_by=created_by,
            via=via,
            reason=f"allocation #{allocation.pk} for {tenant.name}",
        )
    return allocation


def allocation_update(
    *,
    allocation: Allocation,
    end: datetime | None = ...,  # type: ignore[assignment] - Ellipsis: leave the end as it is
    nodes: Iterable[Node] | None = None,
    hostlist: str | None = None,
    purpose: str | None = None,
    updated_by=None,
    via: str = "api",
) -> Allocation:
    """Change the end, the nodes or the purpose; the reservation follows."""
    with transaction.atomic():
        allocation = (
            Allocation.objects.select_for_update().select_related("tenant").get(pk=allocation.pk)
        )
        before_names = sorted(allocation.nodes.values_list("hostname", flat=True))
        before = _summary(allocation, before_names)
        new_end = allocation.end if end is ... else end
        _check_period(allocation.start, new_end)
        chosen = None
        if nodes is not None or hostlist:
            chosen = _resolve_nodes(nodes=nodes, hostlist=hostlist, pod=None, rack=None)
            _check_allocatable(chosen)
        current = chosen if chosen is not None else list(allocation.nodes.all())
        _lock_nodes(current)
        _check_no_overlap(
            tenant=allocation.tenant,
            nodes=current,
            start=allocation.start,
            end=new_end,
            exclude=allocation,
        )
        allocation.end = new_end
        if purpose is not None:
            allocation.purpose = purpose.strip()
        allocation.save(update_fields=["end", "purpose"])
        if chosen is not None:
            allocation.nodes.set(chosen)
        names = sorted(node.hostname for node in current)
        record_change(
            actor=updated_by,
            operation="update",
            instance=allocation,
            before=before,
            after=_summary(allocation, names),
            via=via,
        )
        _queue_reservation_sync(
            allocation,
            requested_by=updated_by,
            via=via,
            reason=f"allocation #{allocation.pk} changed",
        )
        _recheck_tenant_sockets(allocation.tenant_id)
    return allocation


def allocation_end(*, allocation: Allocation, ended_by=None, via: str = "api") -> Allocation:
    """End the allocation now (kept for the record); its reservation is removed."""
    now = timezone.now()
    if allocation.end is not None and allocation.end <= now:
        raise Conflict({"end": [f"Allocation #{allocation.pk} has already ended."]})
    return allocation_update(
        allocation=allocation,
        end=max(now, allocation.start + timedelta(seconds=1)),
        updated_by=ended_by,
        via=via,
    )


def allocation_delete(*, allocation: Allocation, deleted_by=None, via: str = "api") -> None:
    """Remove a mistaken allocation outright; its reservation goes with it. (End one that ran.)"""
    with transaction.atomic():
        allocation = (
            Allocation.objects.select_for_update().select_related("tenant").get(pk=allocation.pk)
        )
        names = sorted(allocation.nodes.values_list("hostname", flat=True))
        record_change(
            actor=deleted_by,
            operation="delete",
            instance=allocation,
            before=_summary(allocation, names),
            via=via,
        )
        # The sync runs after the row is gone and so removes the reservation.
        _queue_reservation_sync(
            allocation,
            requested_by=deleted_by,
            via=via,
            reason=f"allocation #{allocation.pk} deleted",
        )
        _recheck_tenant_sockets(allocation.tenant_id)
        allocation.delete()

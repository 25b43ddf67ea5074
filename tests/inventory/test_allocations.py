"""Allocations of nodes to tenants: overlap refused by name, bad periods, shortcuts, the
reservation Action queued with the allocation, nothing partially written."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.allocations import (
    RESERVATION_SYNC_ACTION,
    allocation_create,
    allocation_end,
    allocation_period_errors,
    allocation_update,
)
from inventory.models import Allocation, LifecycleStatus, Node, Pod, Rack
from portal.errors import Conflict, InvalidInput
from portal.models import Action, AuditEntry

pytestmark = pytest.mark.django_db
NOW = timezone.now()
DAY = timedelta(days=1)


@pytest.fixture
def racks(db):
    pod = Pod.objects.create(name="p1")
    first, second = (
        Rack.objects.create(name="r01", pod=pod),
        Rack.objects.create(name="r02", pod=pod),
    )
    for number in range(1, 9):
        Node.objects.create(
            hostname=f"gpu{number:03d}",
            pod=pod,
            rack=first if number <= 4 else second,
            status=LifecycleStatus.ACTIVE,
        )
    return pod, first, second


def test_create_by_hostlist_queues_the_reservation_in_the_same_transaction(racks, tenant_a):
    allocation = allocation_create(
        tenant=tenant_a, hostlist="gpu[001-004]", start=NOW, end=NOW + DAY
    )
    assert sorted(allocation.nodes.values_list("hostname", flat=True)) == [
        "gpu001",
        "gpu002",
        "gpu003",
        "gpu004",
    ]
    action = Action.objects.get(kind=RESERVATION_SYNC_ACTION)
    assert action.parameters == {
        "allocation_id": allocation.pk,
        "reservation": f"alloc-{allocation.pk}",
    }
    assert AuditEntry.objects.filter(object_id=str(allocation.pk), operation="create").exists()


def test_pod_and_rack_shortcuts(racks, tenant_a, tenant_b):
    pod, _first, second = racks
    by_rack = allocation_create(tenant=tenant_a, rack=second, start=NOW)
    assert by_rack.nodes.count() == 4
    with pytest.raises(Conflict):
        allocation_create(tenant=tenant_b, pod=pod, start=NOW)


def test_overlap_with_another_tenant_is_refused_naming_the_nodes(racks, tenant_a, tenant_b):
    held = allocation_create(tenant=tenant_a, hostlist="gpu[001-003]", start=NOW, end=NOW + DAY)
    with pytest.raises(Conflict) as refused:
        allocation_create(tenant=tenant_b, hostlist="gpu[003-005]", start=NOW + DAY / 2)
    assert "gpu003" in str(refused.value.detail) and f"#{held.pk}" in str(refused.value.detail)
    assert refused.value.extra["conflicting_nodes"] == ["gpu003"]
    assert Allocation.objects.count() == 1
    assert Action.objects.filter(kind=RESERVATION_SYNC_ACTION).count() == 1
    # After the first allocation ends, the same nodes may go to the other tenant.
    later = allocation_create(tenant=tenant_b, hostlist="gpu[003-005]", start=NOW + DAY)
    assert later.nodes.count() == 3


def test_same_tenant_may_overlap_itself(racks, tenant_a):
    allocation_create(tenant=tenant_a, hostlist="gpu001", start=NOW)
    allocation_create(tenant=tenant_a, hostlist="gpu001", start=NOW + DAY)
    assert Allocation.objects.filter(tenant=tenant_a).count() == 2


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"hostlist": "gpu001", "start": NOW, "end": NOW - DAY}, "end"),
        ({"hostlist": "gpu001", "start": None}, "start"),
        ({"hostlist": "gpu[001-002],gpu999", "start": NOW}, "hostlist"),
        ({"hostlist": "gpu[001", "start": NOW}, "hostlist"),
        ({"start": NOW}, "nodes"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(racks, tenant_a, arguments, field):
    with pytest.raises(InvalidInput) as refused:
        allocation_create(tenant=tenant_a, **arguments)
    assert field in refused.value.detail
    assert not Allocation.objects.exists() and not Action.objects.exists()


def test_nodes_in_maintenance_are_refused(racks, tenant_a):
    Node.objects.filter(hostname="gpu002").update(status=LifecycleStatus.MAINTENANCE)
    with pytest.raises(Conflict) as refused:
        allocation_create(tenant=tenant_a, hostlist="gpu[001-002]", start=NOW)
    assert "gpu002" in str(refused.value.detail)
    assert not Allocation.objects.exists()


def test_tenant_without_slurm_account_is_refused(racks, tenant_a):
    tenant_a.slurm_account = ""
    tenant_a.save()
    with pytest.raises(InvalidInput) as refused:
        allocation_create(tenant=tenant_a, hostlist="gpu001", start=NOW)
    assert "tenant" in refused.value.detail


def test_update_checks_overlap_and_queues_a_new_sync(racks, tenant_a, tenant_b):
    ours = allocation_create(tenant=tenant_a, hostlist="gpu[001-002]", start=NOW, end=NOW + DAY)
    allocation_create(tenant=tenant_b, hostlist="gpu003", start=NOW)
    with pytest.raises(Conflict):
        allocation_update(allocation=ours, hostlist="gpu[001-003]")
    assert sorted(ours.nodes.values_list("hostname", flat=True)) == ["gpu001", "gpu002"]
    allocation_update(allocation=ours, end=NOW + 2 * DAY)
    ours.refresh_from_db()
    assert ours.end == NOW + 2 * DAY
    assert (
        Action.objects.filter(kind=RESERVATION_SYNC_ACTION, target=f"alloc-{ours.pk}").count() == 2
    )


def test_end_now_and_not_twice(racks, tenant_a):
    allocation = allocation_create(tenant=tenant_a, hostlist="gpu001", start=NOW - DAY)
    ended = allocation_end(allocation=allocation)
    assert ended.end <= timezone.now()
    with pytest.raises(Conflict):
        allocation_end(allocation=ended)


def test_api_allocations_go_through_the_service(racks, tenant_a, tenant_b, operator_api):
    first = operator_api.post(
        "/api/inventory/allocations/",
        {"tenant": tenant_a.pk, "hostlist": "gpu[001-002]", "start": NOW.isoformat()},
        format="json",
    )
    assert first.status_code == 201, first.content
    assert Action.objects.filter(kind=RESERVATION_SYNC_ACTION).count() == 1
    clash = operator_api.post(
        "/api/inventory/allocations/",
        {"tenant": tenant_b.pk, "hostlist": "gpu[002-003]", "start": NOW.isoformat()},
        format="json",
    )
    assert clash.status_code == 409 and "gpu002" in clash.content.decode()
    Node.objects.filter(hostname="gpu005").update(status=LifecycleStatus.MAINTENANCE)
    busy = operator_api.post(
        "/api/inventory/allocations/",
        {"tenant": tenant_b.pk, "hostlist": "gpu005", "start": NOW.isoformat()},
        format="json",
    )
    assert busy.status_code == 409 and "gpu005" in busy.content.decode()
    unknown = operator_api.post(
        "/api/inventory/allocations/",
        {"tenant": 999999, "hostlist": "gpu006", "start": NOW.isoformat()},
        format="json",
    )
    assert unknown.status_code == 400 and "tenant" in unknown.json()
    allocation_id = first.json()["id"]
    moved = operator_api.patch(
        f"/api/inventory/allocations/{allocation_id}/", {"start": (NOW + DAY).isoformat()},
        format="json",
    )
    assert moved.status_code == 400 and "start" in moved.json()
    assert operator_api.delete(f"/api/inventory/allocations/{allocation_id}/").status_code == 204
    assert Action.objects.filter(kind=RESERVATION_SYNC_ACTION).count() == 2
    assert Allocation.objects.count() == 0


def test_api_and_service_refuse_a_backwards_period_alike(racks, tenant_a, operator_api):
    with pytest.raises(InvalidInput) as refused:
        allocation_create(tenant=tenant_a, hostlist="gpu001", start=NOW, end=NOW - DAY)
    assert refused.value.detail == allocation_period_errors(NOW, NOW - DAY)
    backwards = {"tenant": tenant_a.pk, "hostlist": "gpu001", "start": NOW.isoformat(),
                 "end": (NOW - DAY).isoformat()}
    created = operator_api.post("/api/inventory/allocations/", backwards, format="json")
    assert created.status_code == 400 and created.json() == refused.value.detail
    allocation = allocation_create(tenant=tenant_a, hostlist="gpu001", start=NOW)
    changed = operator_api.patch(f"/api/inventory/allocations/{allocation.pk}/",
                                 {"end": (NOW - DAY).isoformat()}, format="json")
    assert changed.status_code == 400 and changed.json() == refused.value.detail

"""Bulk create and bulk update: one transaction, every bad item named by index and field,
nothing written on any error, each written object audited."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import Cable, Node, Pod
from portal.models import AuditEntry
from tests.inventory.api_helpers import API, nic, node, port

pytestmark = pytest.mark.django_db


def new_nodes(count: int, start: int = 900) -> list[dict]:
    pod = Pod.objects.get(name="p1").pk
    return [{"hostname": f"gpu{start + n}", "pod": pod, "status": "planned"} for n in range(count)]


def test_bulk_create_writes_all_and_audits_each(sakuraone, operator_api):
    response = operator_api.post(f"{API}/nodes/bulk/", new_nodes(5), format="json")
    assert response.status_code == 201, response.json()
    assert [row["hostname"] for row in response.json()] == [f"gpu{900 + n}" for n in range(5)]
    assert response.json()[0]["pod"]["name"] == "p1"
    assert Node.objects.filter(hostname__startswith="gpu9").count() == 5
    audited = AuditEntry.objects.filter(object_type="inventory.node", operation="create")
    assert audited.count() == 5


def test_bulk_create_names_every_bad_item_and_writes_nothing(sakuraone, operator_api):
    items = new_nodes(6)
    items[1]["memory_gb"] = "lots"
    items[3]["hostname"] = "gpu001"  # exists already
    items[4]["colour"] = "red"
    before = (Node.objects.count(), AuditEntry.objects.count())
    response = operator_api.post(f"{API}/nodes/bulk/", items, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["detail"] == "3 items are invalid; nothing was written."
    assert [(error["index"], sorted(error["fields"])) for error in body["errors"]] == [
        (1, ["memory_gb"]),
        (3, ["hostname"]),
        (4, ["colour"]),
    ]
    assert (Node.objects.count(), AuditEntry.objects.count()) == before


def test_bulk_create_duplicates_within_the_request_name_the_later_item(sakuraone, operator_api):
    items = new_nodes(3)
    items[2]["hostname"] = items[0]["hostname"]
    before = Node.objects.count()
    response = operator_api.post(f"{API}/nodes/bulk/", items, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"index": 2, "fields": {"hostname": ["another node has this hostname"]}}
    ]
    assert Node.objects.count() == before


def test_bulk_update_changes_all_in_one_request(sakuraone, operator_api):
    targets = list(Node.objects.filter(pod__name="p1").order_by("hostname")[:20])
    items = [{"id": target.pk, "status": "maintenance"} for target in targets]
    response = operator_api.patch(f"{API}/nodes/bulk/", items, format="json")
    assert response.status_code == 200, response.json()
    assert {row["status"] for row in response.json()} == {"maintenance"}
    assert Node.objects.filter(status="maintenance").count() == 20
    assert AuditEntry.objects.filter(object_type="inventory.node", operation="update").count() == 20


def test_bulk_update_queries_grow_only_with_the_writes(sakuraone, operator_api):
    """Reading the items is one query whatever their number; each item costs its own
    savepoint, update, audit row and inventory revision bump, and nothing more."""

    def cost(count: int, start: int) -> int:
        targets = Node.objects.order_by("hostname")[start : start + count]
        items = [{"id": target.pk, "status": "maintenance"} for target in targets]
        with CaptureQueriesContext(connection) as captured:
            assert operator_api.patch(f"{API}/nodes/bulk/", items, format="json").status_code == 200
        return len(captured)

    cost(1, 99)  # the token's last-use stamp
    ten, twenty, thirty = cost(10, 0), cost(20, 10), cost(30, 30)
    per_item = (twenty - ten) // 10
    assert thirty - twenty == twenty - ten == 10 * per_item  # linear in the writes
    # SAVEPOINT, the row read under its lock (portal/api/concurrency.py), UPDATE, revision
    # UPDATE (inventory/revision.py), audit INSERT, RELEASE
    assert per_item == 6
    # token, role, the items' one SELECT, their locks in one SELECT, transaction
    assert ten - 10 * per_item <= 6


def test_bulk_update_names_bad_items_and_changes_nothing(sakuraone, operator_api):
    gpu001, gpu002, gpu003 = node("gpu001"), node("gpu002"), node("gpu003")
    items = [
        {"id": gpu001.pk, "status": "maintenance"},
        {"id": gpu002.pk, "status": "sleeping"},
        {"status": "maintenance"},
        {"id": 10**9, "status": "maintenance"},
        {"id": gpu003.pk, "hostname": "gpu004"},  # clashes with an existing node
        "gpu005",
    ]
    response = operator_api.patch(f"{API}/nodes/bulk/", items, format="json")
    assert response.status_code == 400
    errors = {error["index"]: error["fields"] for error in response.json()["errors"]}
    assert sorted(errors) == [1, 2, 3, 4, 5]
    assert "status" in errors[1]
    assert errors[2] == {"id": ["the id of the object to change"]}
    assert errors[3] == {"id": [f"no object with id {10**9}"]}
    assert "hostname" in errors[4]
    assert errors[5] == {"non_field_errors": ["expected an object"]}
    assert Node.objects.get(pk=gpu001.pk).status == "active"
    assert not AuditEntry.objects.filter(object_type="inventory.node").exists()


@pytest.mark.parametrize("payload", [{}, [], {"hostname": "gpu901"}, "nodes"])
def test_bulk_needs_a_non_empty_list(sakuraone, operator_api, payload):
    response = operator_api.post(f"{API}/nodes/bulk/", payload, format="json")
    assert response.status_code == 400
    assert "non-empty JSON list" in response.json()["detail"]


def test_bulk_cables_check_every_end_and_write_none_on_error(sakuraone, operator_api):
    free = [("gpu001", "leaf-p1-r0", "Ethernet200"), ("gpu002", "leaf-p1-r0", "Ethernet208")]
    for hostname, _, _ in free:
        Cable.objects.filter(a_nic=nic(hostname, "mlx5_0")).update(status="decommissioned")
    items = [
        {
            "a_nic": nic(hostname, "mlx5_0").pk,
            "b_port": port(switch, name).pk,
            "type": "400GBASE-DR4",
        }
        for hostname, switch, name in free
    ]
    # Both items take the same leaf port: the second names the port's side.
    clashing = [items[0], {**items[1], "b_port": items[0]["b_port"]}]
    before = Cable.objects.count()
    response = operator_api.post(f"{API}/cables/bulk/", clashing, format="json")
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["index"] == 1
    assert "leaf-p1-r0 Ethernet200 is already in cable" in error["fields"]["b"][0]
    assert Cable.objects.count() == before
    response = operator_api.post(f"{API}/cables/bulk/", items, format="json")
    assert response.status_code == 201, response.json()
    assert Cable.objects.count() == before + 2


def test_bulk_writes_are_for_operators(sakuraone, api_as):
    for role in ("viewer", "oncall", "tenant_admin"):
        client = api_as(role)
        assert client.post(f"{API}/nodes/bulk/", new_nodes(1), format="json").status_code == 403
        assert (
            client.patch(
                f"{API}/nodes/bulk/",
                [{"id": node("gpu001").pk, "status": "maintenance"}],
                format="json",
            ).status_code
            == 403
        )
    assert not Node.objects.filter(hostname="gpu900").exists()


def test_an_item_a_service_refuses_while_validating_is_named_in_the_bulk_error(
    sakuraone, operator_api, tenant_a
):
    items = [{"tenant": tenant_a.pk, "hostlist": "bad host!", "purpose": "refused",
              "start": "2026-12-01T00:00:00Z", "end": "2026-12-02T00:00:00Z"}]
    response = operator_api.post(f"{API}/allocations/bulk/", items, format="json")
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["detail"] == "1 item is invalid; nothing was written."
    assert body["errors"][0]["index"] == 0 and "hostlist" in body["errors"][0]["fields"]

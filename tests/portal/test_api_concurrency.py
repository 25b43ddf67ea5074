"""Concurrent writers through the API: every PATCH of a different field survives, and a stale
write carrying `If-Match` is a 412 that changes nothing (portal/api/concurrency.py)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from inventory.models import Node
from portal.models import Role, Tenant
from portal.services.accounts import api_token_create, user_create

ROUNDS = 5
WRITERS = 20


def token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def patch_all_at_once(key: str, url: str, bodies: list[dict]) -> list[int]:
    """PATCH each body from its own thread (its own database session), released together."""
    start = threading.Barrier(len(bodies))
    statuses: list[int] = [0] * len(bodies)

    def write(index: int) -> None:
        try:
            client = token_client(key)
            start.wait(timeout=30)
            statuses[index] = client.patch(url, bodies[index], format="json").status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(index,)) for index in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return statuses


@pytest.fixture
def operator_key(transactional_db):
    user = user_create(username="race-operator", role=Role.OPERATOR, password="x" * 12)
    return api_token_create(user=user, name="race")[1]


def test_parallel_patches_of_different_fields_lose_no_update(operator_key):
    node = Node.objects.create(hostname="race01", serial="S-0", model="M-0")
    url = f"/api/inventory/nodes/{node.pk}/"
    for round_number in range(1, ROUNDS + 1):
        bodies = [
            {"serial": f"S-{round_number}"} if index % 2 else {"model": f"M-{round_number}"}
            for index in range(WRITERS)
        ]
        assert patch_all_at_once(operator_key, url, bodies) == [200] * WRITERS
        node.refresh_from_db()
        assert (node.serial, node.model) == (f"S-{round_number}", f"M-{round_number}")


def test_parallel_tenant_patches_lose_no_update(operator_key, transactional_db):
    admin = user_create(username="race-admin", role=Role.ADMIN, password="x" * 12)
    key = api_token_create(user=admin, name="race")[1]
    tenant = Tenant.objects.create(name="Race", slug="race", slurm_account="race", evpn_vni=77)
    url = f"/api/tenants/{tenant.pk}/"
    for round_number in range(1, ROUNDS + 1):
        bodies = [
            {"name": f"Race {round_number}"} if index % 2 else {"evpn_vni": 100 + round_number}
            for index in range(WRITERS)
        ]
        assert patch_all_at_once(key, url, bodies) == [200] * WRITERS
        tenant.refresh_from_db()
        assert (tenant.name, tenant.evpn_vni) == (f"Race {round_number}", 100 + round_number)


def test_a_stale_if_match_is_a_412_and_changes_nothing(operator_key):
    node = Node.objects.create(hostname="race02", serial="S-0", model="M-0")
    url = f"/api/inventory/nodes/{node.pk}/"
    client = token_client(operator_key)
    read = client.get(url)
    etag = read["ETag"]
    assert etag.startswith('"') and etag.endswith('"')

    first = client.patch(url, {"serial": "S-1"}, format="json", HTTP_IF_MATCH=etag)
    assert first.status_code == 200, first.json()
    assert first["ETag"] != etag
    stale = client.patch(url, {"serial": "S-2"}, format="json", HTTP_IF_MATCH=etag)
    assert stale.status_code == 412
    assert stale.json()["etag"] == first["ETag"]
    assert "changed since you read it" in stale.json()["detail"]
    node.refresh_from_db()
    assert node.serial == "S-1"

    again = client.patch(url, {"serial": "S-2"}, format="json", HTTP_IF_MATCH=first["ETag"])
    assert again.status_code == 200
    assert client.get(url)["ETag"] == again["ETag"]
    stale_delete = client.delete(url, HTTP_IF_MATCH=etag)
    assert stale_delete.status_code == 412
    assert Node.objects.filter(pk=node.pk).exists()
    wildcard = client.patch(url, {"model": "M-9"}, format="json", HTTP_IF_MATCH="*")
    assert wildcard.status_code == 200


def test_a_patch_writes_only_the_columns_it_names(operator_key):
    node = Node.objects.create(hostname="race03", serial="S-0", model="M-0")
    client = token_client(operator_key)
    with CaptureQueriesContext(connection) as queries:
        response = client.patch(
            f"/api/inventory/nodes/{node.pk}/", {"serial": "S-1"}, format="json"
        )
    assert response.status_code == 200
    updates = [query["sql"] for query in queries if query["sql"].startswith("UPDATE")]
    node_update = next(sql for sql in updates if Node._meta.db_table in sql.split(" SET ")[0])
    assigned = node_update.split(" SET ")[1].split(" WHERE ")[0]
    assert '"serial"' in assigned and '"updated_at"' in assigned
    assert '"model"' not in assigned and '"hostname"' not in assigned

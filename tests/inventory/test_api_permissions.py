"""Who may do what through the inventory API: a role matrix, and tenant admins confined to
the nodes of their tenant's current allocations (another tenant's are 404)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import GPU, Allocation, Cable, Node, Switch
from tests.inventory.api_helpers import API, allocate, nic, node, port, results

pytestmark = pytest.mark.django_db

READ_ALL = ["admin", "operator", "oncall", "viewer"]


@pytest.mark.parametrize("role", ["viewer", "oncall", "tenant_admin"])
@pytest.mark.parametrize(
    ("method", "path", "payload"),
    [
        ("post", "/nodes/", {"hostname": "gpu901"}),
        ("patch", "/nodes/{gpu001}/", {"status": "maintenance"}),
        ("delete", "/nodes/{gpu001}/", None),
        ("post", "/pods/", {"name": "p9"}),
        ("patch", "/switches/{leaf}/", {"nos_version": "x"}),
        ("post", "/cables/", {"type": "800GBASE-SR8"}),
        ("post", "/allocations/", {}),
        ("post", "/topology/import", {"spec": {}}),
    ],
)
def test_only_admins_and_operators_write(sakuraone, api_as, tenant_a, role, method, path, payload):
    allocate(tenant_a, "gpu[001-004]")
    client = api_as(role, tenant_a if role == "tenant_admin" else None)
    url = API + path.format(
        gpu001=node("gpu001").pk, leaf=Switch.objects.get(hostname="leaf-p1-r0").pk
    )
    response = getattr(client, method)(url, payload, format="json")
    assert response.status_code == 403, response.content
    assert Node.objects.get(hostname="gpu001").status == "active"
    assert not Node.objects.filter(hostname="gpu901").exists()


@pytest.mark.parametrize("role", ["admin", "operator"])
def test_admins_and_operators_write(sakuraone, api_as, role):
    response = api_as(role).patch(
        f"{API}/nodes/{node('gpu001').pk}/", {"status": "maintenance"}, format="json"
    )
    assert response.status_code == 200


@pytest.mark.parametrize("role", READ_ALL)
def test_cluster_wide_roles_read_the_whole_fleet(sakuraone, api_as, role):
    client = api_as(role)
    assert client.get(f"{API}/nodes/").json()["count"] == 100
    assert client.get(f"{API}/switches/").json()["count"] == 26
    assert client.get(f"{API}/nics/{nic('gpu100', 'mlx5_0').pk}/trace/").status_code == 200
    assert client.get(f"{API}/validation", {"rule": "rail"}).status_code == 200


def test_tenant_admin_sees_only_the_nodes_of_current_allocations(
    sakuraone, api_as, tenant_a, tenant_b
):
    allocate(tenant_a, "gpu[001-004]")
    allocate(tenant_a, "gpu[005-006]", end=timezone.now() - timedelta(hours=1))  # over
    allocate(tenant_b, "gpu[050-051]")
    client = api_as("tenant_admin", tenant_a)
    listed = [row["hostname"] for row in results(client.get(f"{API}/nodes/"))]
    assert listed == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert client.get(f"{API}/nodes/{node('gpu001').pk}/").status_code == 200
    assert client.get(f"{API}/nodes/{node('gpu050').pk}/").status_code == 404
    assert client.get(f"{API}/nodes/{node('gpu005').pk}/").status_code == 404
    gpus = results(client.get(f"{API}/gpus/", {"page_size": 1000}))
    assert {row["node"]["hostname"] for row in gpus} == {f"gpu00{n}" for n in range(1, 5)}
    other_gpu = GPU.objects.get(node__hostname="gpu050", index=0)
    assert client.get(f"{API}/gpus/{other_gpu.pk}/").status_code == 404
    nics = results(client.get(f"{API}/nics/", {"page_size": 1000}))
    assert len(nics) == 48
    assert client.get(f"{API}/nics/{nic('gpu050', 'mlx5_0').pk}/").status_code == 404
    cables = results(client.get(f"{API}/cables/", {"page_size": 1000}))
    assert len(cables) == 40
    other_cable = Cable.objects.get(a_nic=nic("gpu050", "mlx5_0"))
    assert client.get(f"{API}/cables/{other_cable.pk}/").status_code == 404
    # The fabric is not part of a tenant's slice.
    assert results(client.get(f"{API}/switches/")) == []
    assert results(client.get(f"{API}/ports/")) == []
    assert client.get(f"{API}/ports/{port('leaf-p1-r0', 'Ethernet0').pk}/").status_code == 404
    assert client.get(f"{API}/nics/{nic('gpu001', 'mlx5_0').pk}/trace/").status_code == 403
    assert client.get(f"{API}/validation").status_code == 403


def test_hostlist_naming_another_tenants_node_is_unknown(sakuraone, api_as, tenant_a, tenant_b):
    allocate(tenant_a, "gpu[001-004]")
    allocate(tenant_b, "gpu[050-051]")
    client = api_as("tenant_admin", tenant_a)
    response = client.get(f"{API}/nodes/", {"hostlist": "gpu[003-004,050]"})
    assert response.status_code == 400
    assert response.json()["hostlist"] == ["unknown node(s): gpu050"]


def test_allocations_are_tenant_private(sakuraone, api_as, tenant_a, tenant_b):
    own = allocate(tenant_a, "gpu[001-004]")
    other = allocate(tenant_b, "gpu[050-051]")
    tenant_admin = api_as("tenant_admin", tenant_a)
    assert [row["id"] for row in results(tenant_admin.get(f"{API}/allocations/"))] == [own.pk]
    assert tenant_admin.get(f"{API}/allocations/{other.pk}/").status_code == 404
    assert results(api_as("viewer").get(f"{API}/allocations/")) == []
    oncall = results(api_as("oncall").get(f"{API}/allocations/"))
    assert {row["id"] for row in oncall} == {own.pk, other.pk}
    assert Allocation.objects.count() == 2


def test_anonymous_requests_are_refused(sakuraone, client):
    assert client.get(f"{API}/nodes/").status_code in (401, 403)

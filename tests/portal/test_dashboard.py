"""The dashboard's cluster grid: nodes by pod and rack, state letters, tenant isolation."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import GPU, Allocation, Node, Pod, Rack
from portal.dashboard import cluster_grid, grid_state
from portal.models import Role

pytestmark = pytest.mark.django_db


def make_nodes(count: int, *, pod_name: str = "p1", rack_name: str = "r01", start: int = 1):
    pod, _ = Pod.objects.get_or_create(name=pod_name)
    rack, _ = Rack.objects.get_or_create(name=rack_name, pod=pod)
    nodes = []
    for number in range(start, start + count):
        node = Node.objects.create(hostname=f"gpu{number:03d}", pod=pod, rack=rack)
        GPU.objects.bulk_create(GPU(node=node, index=index) for index in range(8))
        nodes.append(node)
    return nodes


def browser_for(make_user, role, tenant=None):
    user = make_user(role, tenant=tenant)
    browser = Client()
    assert browser.login(username=user.username, password="correct-horse-battery")
    return browser


@pytest.mark.parametrize(
    ("slurm_state", "expected"),
    [
        ("idle", "idle"),
        ("draining", "draining"),
        ("not_responding", "down"),
        ("", "unknown"),
        ("future", "unknown"),
        ("completing", "allocated"),
    ],
)
def test_grid_state_maps_slurm_words(slurm_state, expected):
    assert grid_state(slurm_state) == expected


def test_grid_groups_by_pod_and_rack_and_counts_states(make_user):
    nodes = make_nodes(3) + make_nodes(2, pod_name="p2", rack_name="r20", start=51)
    Node.objects.filter(pk=nodes[0].pk).update(slurm_state="drained", slurm_reason="XID 79")
    Node.objects.filter(pk=nodes[1].pk).update(slurm_state="idle")
    grid = cluster_grid(user=make_user(Role.OPERATOR))
    assert [pod.name for pod in grid.pods] == ["p1", "p2"]
    assert [cell.hostname for cell in grid.pods[0].racks[0].cells] == ["gpu001", "gpu002", "gpu003"]
    assert grid.state_counts == {"drained": 1, "idle": 1, "unknown": 3}
    assert (grid.node_total, grid.gpu_total) == (5, 40)
    assert grid.pods[0].racks[0].cells[0].reason == "XID 79"


def test_grid_query_count_does_not_grow_with_nodes(make_user):
    user = make_user(Role.OPERATOR)
    make_nodes(2)
    cluster_grid(user=user)  # the user's role is looked up once and then cached on the user
    with CaptureQueriesContext(connection) as small:
        cluster_grid(user=user)
    make_nodes(20, start=10)
    with CaptureQueriesContext(connection) as large:
        cluster_grid(user=user)
    assert len(small) == len(large)


def test_dashboard_shows_cells_with_letters_and_reason(make_user):
    node = make_nodes(1)[0]
    Node.objects.filter(pk=node.pk).update(slurm_state="draining", slurm_reason="FT-3 NVLink")
    page = browser_for(make_user, Role.VIEWER).get("/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="node-cell-gpu001"' in html and 'data-state="draining"' in html
    assert "gpu001: draining — FT-3 NVLink" in html
    assert 'data-live-groups="cluster"' in html and "js/cluster.js" in html
    assert "d draining" in html  # the legend names each state with its letter


def test_tenant_admin_grid_holds_only_their_allocated_nodes(make_user, tenant_a, tenant_b):
    ours, theirs = make_nodes(2), make_nodes(2, start=10)
    now = timezone.now()
    Allocation.objects.create(tenant=tenant_a, start=now - timedelta(days=1)).nodes.set(ours)
    Allocation.objects.create(tenant=tenant_b, start=now - timedelta(days=1)).nodes.set(theirs)
    grid = cluster_grid(user=make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    shown = [cell.hostname for pod in grid.pods for rack in pod.racks for cell in rack.cells]
    assert shown == ["gpu001", "gpu002"]
    html = browser_for(make_user, Role.TENANT_ADMIN, tenant_a).get("/").content.decode()
    assert "node-cell-gpu001" in html and "node-cell-gpu010" not in html

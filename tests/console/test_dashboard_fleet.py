"""The dashboard past settings.DASHBOARD_AGGREGATE_ABOVE_NODES (issue 28 item 1): pods, or one
big pod's racks, drawn as aggregate cells counted in the database, each a link to its nodes;
below the threshold the grid is the node-per-cell grid it always was. The threshold is set low
here so a few dozen nodes stand in for the 12,500 of bench/ui_scale.py --scales 125."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.dashboard import cluster_grid
from inventory.models import Node
from portal.errors import InvalidInput
from portal.models import Role
from tests.console.test_dashboard import (
    all_cells,
    browser_for,
    make_job,
    make_nodes,
    make_ticket,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(settings):
    """Pod p1 of 8 nodes in two racks, pod p2 of 3, pod p10 of 2: 13 nodes past a threshold of 5,
    so the fleet is drawn by pod and p1 (8 > 5) by rack."""
    settings.DASHBOARD_AGGREGATE_ABOVE_NODES = 5
    p1 = make_nodes(4, pod_name="p1", rack_name="p1-r01", start=1)
    p1 += make_nodes(4, pod_name="p1", rack_name="p1-r02", start=5)
    p2 = make_nodes(3, pod_name="p2", rack_name="p2-r01", start=20)
    p10 = make_nodes(2, pod_name="p10", rack_name="p10-r01", start=30)
    Node.objects.filter(pk__in=[node.pk for node in p1[:3]]).update(slurm_state="idle")
    Node.objects.filter(pk=p1[4].pk).update(slurm_state="drained", slurm_reason="XID 79")
    Node.objects.filter(pk=p2[0].pk).update(slurm_state="not_responding")
    make_job("7", p1[5:7])  # 16 GPUs over two nodes of p1-r02
    make_ticket(p1[5])
    make_ticket(p2[1], category="nic_transceiver")
    return {"p1": p1, "p2": p2, "p10": p10}


def test_a_fleet_past_the_threshold_is_drawn_as_pods_counted_by_state(fleet, make_user):
    grid = cluster_grid(user=make_user(Role.OPERATOR))
    assert grid.aggregate_level == "pod" and grid.pods == []
    assert [cell.name for cell in grid.aggregates] == ["p1", "p2", "p10"]
    p1, p2, p10 = grid.aggregates
    assert p1.state_counts == {"idle": 3, "drained": 1, "unknown": 4}
    assert (p1.gpus, p1.gpus_in_use, p1.open_faults, p1.problem_nodes) == (64, 16, 1, 1)
    assert p2.state_counts == {"down": 1, "unknown": 2}
    assert (p2.gpus, p2.gpus_in_use, p2.open_faults) == (24, 0, 1)
    assert p10.node_count == 2 and p10.query == "pod=p10"
    # The summary counts are the same as the node-per-cell grid's.
    assert grid.state_counts == {"idle": 3, "drained": 1, "down": 1, "unknown": 8}
    assert (grid.node_total, grid.gpu_total, grid.gpus_in_use) == (13, 104, 16)
    assert grid.open_fault_total == 2
    assert grid.pod_names == ["p1", "p2", "p10"]


def test_a_big_pod_drills_down_to_racks_and_a_small_one_or_a_rack_to_its_nodes(
    fleet, make_user
):
    user = make_user(Role.OPERATOR)
    big = cluster_grid(user=user, pod="p1")
    assert big.aggregate_level == "rack"
    assert [(cell.name, cell.node_count) for cell in big.aggregates] == [
        ("p1-r01", 4), ("p1-r02", 4),
    ]
    assert big.aggregates[1].query == "pod=p1&rack=p1-r02"
    assert (big.aggregates[1].gpus_in_use, big.aggregates[1].open_faults) == (16, 1)

    rack = cluster_grid(user=user, pod="p1", rack="p1-r02")
    assert rack.aggregate_level == ""
    cells = all_cells(rack)
    assert sorted(cells) == ["gpu005", "gpu006", "gpu007", "gpu008"]
    assert cells["gpu005"].reason == "XID 79" and cells["gpu006"].open_faults == 1
    assert [str(job) for job in cells["gpu007"].jobs] == ["7 (alice)"]

    small = cluster_grid(user=user, pod="p2")
    assert small.aggregate_level == "" and sorted(all_cells(small)) == [
        "gpu020", "gpu021", "gpu022",
    ]
    assert small.node_total == 13  # narrowing never changes the counts

    problems = cluster_grid(user=user, problems_only=True)
    assert sorted(all_cells(problems)) == ["gpu005", "gpu006", "gpu020", "gpu021"]


def test_an_unknown_rack_or_a_rack_without_its_pod_names_the_field(fleet, make_user):
    user = make_user(Role.OPERATOR)
    with pytest.raises(InvalidInput) as error:
        cluster_grid(user=user, pod="p1", rack="p2-r01")
    assert "rack" in error.value.detail
    browser = browser_for(make_user, Role.OPERATOR)
    response = browser.get("/?rack=p1-r01")
    assert response.status_code == 400
    assert "rack: a rack is chosen within a pod" in response.content.decode()


def test_the_fleet_grid_query_count_does_not_grow_with_the_nodes(
    fleet, make_user, django_assert_max_num_queries
):
    user = make_user(Role.OPERATOR)
    cluster_grid(user=user)  # the role is looked up once and then cached on the user
    with CaptureQueriesContext(connection) as small:
        cluster_grid(user=user)
    more = make_nodes(40, pod_name="p3", rack_name="p3-r01", start=100)
    for number, node in enumerate(more[:20], start=100):
        make_job(str(number), [node], user=f"user{number}")
        make_ticket(node)
    with django_assert_max_num_queries(7):
        grid = cluster_grid(user=user)
    with CaptureQueriesContext(connection) as large:
        cluster_grid(user=user)
    assert len(small) == len(large)
    by_pod = {cell.name: cell for cell in grid.aggregates}
    assert grid.node_total == 53 and by_pod["p3"].gpus_in_use == 20 * 8
    # A drill-down reads only its own nodes' rows; 9: the running maintenance windows too.
    with django_assert_max_num_queries(9):
        cells = all_cells(cluster_grid(user=user, pod="p3", rack="p3-r01"))
    assert len(cells) == 40


def test_the_page_draws_a_linked_cell_per_pod_not_a_cell_per_node(fleet, make_user):
    page = browser_for(make_user, Role.OPERATOR).get("/").content.decode()
    assert 'id="node-cell-' not in page
    cells = re.findall(r'<a role="listitem" class="aggregate-cell"[^>]*>', page)
    assert len(cells) == 3
    assert 'data-agg-pod="p10" data-agg-rack="" href="?pod=p10"' in cells[2]
    assert 'data-problems="1"' in cells[0]
    assert '<span data-agg-count="drained" data-n="1">D1</span>' in page
    drill = browser_for(make_user, Role.OPERATOR).get("/?pod=p1").content.decode()
    assert 'href="?pod=p1&amp;rack=p1-r02"' in drill
    nodes = browser_for(make_user, Role.OPERATOR).get("/?pod=p1&rack=p1-r02").content.decode()
    assert nodes.count('id="node-cell-') == 4


def test_a_tenant_admin_past_the_threshold_sees_only_their_nodes_and_no_tickets(
    fleet, make_user, tenant_a
):
    from datetime import timedelta

    from django.utils import timezone

    from inventory.models import Allocation

    allocation = Allocation.objects.create(tenant=tenant_a, start=timezone.now() - timedelta(1))
    allocation.nodes.set(fleet["p1"][:6])
    grid = cluster_grid(user=make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    assert grid.aggregate_level == "pod"
    assert [(cell.name, cell.node_count) for cell in grid.aggregates] == [("p1", 6)]
    assert grid.aggregates[0].open_faults == 0 and grid.faults_by_category is None


def test_below_the_threshold_the_grid_is_a_cell_per_node_as_before(make_user):
    make_nodes(100)  # SAKURAONE's size, under the default threshold
    grid = cluster_grid(user=make_user(Role.OPERATOR))
    assert grid.aggregate_level == "" and grid.aggregates == []
    assert len(all_cells(grid)) == 100

"""The cluster grid at scale: pods, racks and nodes in natural order (p2 before
p10), a pod filter and a problems-only view (drained, draining, down, open tickets) that narrow
the cells but never the counts, and a 400 naming the field for a bad value."""

import pytest
from django.test import Client

from console.dashboard import cluster_grid
from inventory.models import Node
from portal.models import Role
from portal.natural_sort import natural_key, natural_sorted
from tests.console.test_dashboard import all_cells, make_nodes, make_ticket

pytestmark = pytest.mark.django_db


def test_natural_key_orders_numbers_as_numbers():
    names = ["p10", "p2", "P1", "p2-rack10", "p2-rack2", "gpu100", "gpu99", "", "spine-1"]
    assert natural_sorted(names) == [
        "", "gpu99", "gpu100", "P1", "p2", "p2-rack2", "p2-rack10", "p10", "spine-1",
    ]
    assert natural_key("mlx5_11") > natural_key("mlx5_2")


@pytest.fixture
def three_pods():
    make_nodes(2, pod_name="p10", rack_name="p10-rack1", start=1)
    make_nodes(2, pod_name="p2", rack_name="p2-rack10", start=3)
    make_nodes(2, pod_name="p2", rack_name="p2-rack2", start=5)
    nodes = make_nodes(2, pod_name="p1", rack_name="p1-rack1", start=7)
    nodes[0].slurm_state = "drained"
    nodes[0].save()
    return nodes


def test_pods_and_racks_sort_naturally(make_user, three_pods):
    grid = cluster_grid(user=make_user(Role.OPERATOR))
    assert [pod.name for pod in grid.pods] == ["p1", "p2", "p10"]
    assert [rack.name for rack in grid.pods[1].racks] == ["p2-rack2", "p2-rack10"]
    assert grid.pod_names == ["p1", "p2", "p10"]


def test_pod_filter_and_problems_only_narrow_the_cells_not_the_counts(make_user, three_pods):
    operator = make_user(Role.OPERATOR)
    make_ticket(Node.objects.get(hostname="gpu003"))
    one_pod = cluster_grid(user=operator, pod="p2")
    assert [pod.name for pod in one_pod.pods] == ["p2"] and len(all_cells(one_pod)) == 4
    problems = cluster_grid(user=operator, problems_only=True)
    assert sorted(all_cells(problems)) == ["gpu003", "gpu007"]  # a ticket; drained
    assert problems.pods[0].problem_count == 1
    assert problems.node_total == 8 and problems.state_counts["drained"] == 1
    assert cluster_grid(user=operator, pod="p10", problems_only=True).pods == []


def test_dashboard_names_a_bad_filter_and_keeps_it_in_the_form(make_user, three_pods):
    browser = Client()
    browser.force_login(make_user(Role.OPERATOR))
    page = browser.get("/?pod=p3")
    assert page.status_code == 400 and "pod: no pod &#x27;p3&#x27;" in page.text
    page = browser.get("/?view=everything")
    assert page.status_code == 400 and "view: unknown view" in page.text
    page = browser.get("/?pod=p2&view=problems")
    assert page.status_code == 200
    assert '<option value="p2" selected>' in page.text and 'data-grid-problems="true"' in page.text
    assert "No problems in pod p2" in page.text
    options = page.text[page.text.index('id="grid-pod"'):]
    assert options.index(">p2<") < options.index(">p10<")

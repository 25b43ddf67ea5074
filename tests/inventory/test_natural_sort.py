"""Hostnames, switch names, port names and racks sort naturally (gpu2 < gpu10 < gpu100 <
gpu1000), in the database, whichever way the rows were written."""

from __future__ import annotations

import pytest

from inventory.models import Node, Rack, Switch, SwitchPort
from tests.inventory.api_helpers import API, results

pytestmark = pytest.mark.django_db

NATURAL = ["gpu2", "gpu10", "gpu100", "gpu101", "gpu1000"]


@pytest.fixture
def nodes():
    # Three write paths: save(), bulk_create and a rename by bulk_update.
    Node.objects.create(hostname="gpu1000")
    Node.objects.bulk_create([Node(hostname="gpu101"), Node(hostname="gpu2")])
    renamed = [Node.objects.create(hostname="tmp-a"), Node.objects.create(hostname="tmp-b")]
    renamed[0].hostname, renamed[1].hostname = "gpu100", "gpu10"
    Node.objects.bulk_update(renamed, ["hostname"])


def hostnames(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["hostname"] for row in results(response)]


def test_node_list_default_order_is_natural(nodes, operator_api):
    assert hostnames(operator_api.get(f"{API}/nodes/")) == NATURAL


def test_node_list_ordering_by_hostname_is_natural_both_ways(nodes, operator_api):
    assert hostnames(operator_api.get(f"{API}/nodes/", {"ordering": "hostname"})) == NATURAL
    descending = hostnames(operator_api.get(f"{API}/nodes/", {"ordering": "-hostname"}))
    assert descending == NATURAL[::-1]


def test_node_pages_follow_the_natural_order(nodes, operator_api):
    pages = [
        hostnames(
            operator_api.get(
                f"{API}/nodes/", {"ordering": "hostname", "page_size": 2, "page": page}
            )
        )
        for page in (1, 2, 3)
    ]
    assert pages == [NATURAL[:2], NATURAL[2:4], NATURAL[4:]]


def test_switch_ports_order_naturally_by_name(operator_api):
    spine = Switch.objects.create(hostname="spine10", role=Switch.Role.SPINE)
    Switch.objects.create(hostname="spine2", role=Switch.Role.SPINE)
    # The same index on purpose: only the name tells Ethernet2 from Ethernet10.
    for name in ("Ethernet10", "Ethernet2", "Ethernet100"):
        SwitchPort.objects.create(switch=spine, name=name, index=0)
    response = operator_api.get(f"{API}/ports/", {"ordering": "name", "switch": "spine10"})
    assert response.status_code == 200, response.content
    assert [row["name"] for row in results(response)] == ["Ethernet2", "Ethernet10", "Ethernet100"]
    assert list(SwitchPort.objects.values_list("name", flat=True)) == [
        "Ethernet2",
        "Ethernet10",
        "Ethernet100",
    ]
    switches = hostnames(operator_api.get(f"{API}/switches/", {"ordering": "hostname"}))
    assert switches == ["spine2", "spine10"]


def test_racks_order_naturally(operator_api):
    Rack.objects.bulk_create([Rack(name=name) for name in ("r10", "r9", "r100")])
    response = operator_api.get(f"{API}/racks/")
    assert response.status_code == 200
    assert [row["name"] for row in results(response)] == ["r9", "r10", "r100"]

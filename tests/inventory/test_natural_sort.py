"""Hostnames, switch names, port names and racks sort naturally (gpu2 < gpu10 < gpu100 <
gpu1000), in the database, whichever way the rows were written."""

from __future__ import annotations

import pytest

from inventory.models import Node, Rack, Switch, SwitchPort
from tests.inventory.api_helpers import API, results

pytestmark = pytest.mark.django_db

# Names no shipped fleet uses, searched for: another module's committed fleet may be present.

NATURAL = ["lab2", "lab10", "lab100", "lab101", "lab1000"]


@pytest.fixture
def nodes():
    # Three write paths: save(), bulk_create and a rename by bulk_update.
    Node.objects.create(hostname="lab1000")
    Node.objects.bulk_create([Node(hostname="lab101"), Node(hostname="lab2")])
    renamed = [Node.objects.create(hostname="tmp-a"), Node.objects.create(hostname="tmp-b")]
    renamed[0].hostname, renamed[1].hostname = "lab100", "lab10"
    Node.objects.bulk_update(renamed, ["hostname"])


def hostnames(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["hostname"] for row in results(response)]


def test_node_list_default_order_is_natural(nodes, operator_api):
    assert hostnames(operator_api.get(f"{API}/nodes/", {"search": "lab"})) == NATURAL


def test_node_list_ordering_by_hostname_is_natural_both_ways(nodes, operator_api):
    assert (
        hostnames(operator_api.get(f"{API}/nodes/", {"ordering": "hostname", "search": "lab"}))
        == NATURAL
    )
    descending = hostnames(
        operator_api.get(f"{API}/nodes/", {"ordering": "-hostname", "search": "lab"})
    )
    assert descending == NATURAL[::-1]


def test_node_pages_follow_the_natural_order(nodes, operator_api):
    pages = [
        hostnames(
            operator_api.get(
                f"{API}/nodes/",
                {"ordering": "hostname", "search": "lab", "page_size": 2, "page": page},
            )
        )
        for page in (1, 2, 3)
    ]
    assert pages == [NATURAL[:2], NATURAL[2:4], NATURAL[4:]]


def test_switch_ports_order_naturally_by_name(operator_api):
    spine = Switch.objects.create(hostname="labspine10", role=Switch.Role.SPINE)
    Switch.objects.create(hostname="labspine2", role=Switch.Role.SPINE)
    # The same index on purpose: only the name tells Ethernet2 from Ethernet10.
    for name in ("Ethernet10", "Ethernet2", "Ethernet100"):
        SwitchPort.objects.create(switch=spine, name=name, index=0)
    response = operator_api.get(f"{API}/ports/", {"ordering": "name", "switch": "labspine10"})
    assert response.status_code == 200, response.content
    assert [row["name"] for row in results(response)] == ["Ethernet2", "Ethernet10", "Ethernet100"]
    assert list(SwitchPort.objects.filter(switch=spine).values_list("name", flat=True)) == [
        "Ethernet2",
        "Ethernet10",
        "Ethernet100",
    ]
    switches = hostnames(
        operator_api.get(f"{API}/switches/", {"ordering": "hostname", "search": "labspine"})
    )
    assert switches == ["labspine2", "labspine10"]


def test_racks_order_naturally(operator_api):
    Rack.objects.bulk_create([Rack(name=name) for name in ("lab-r10", "lab-r9", "lab-r100")])
    response = operator_api.get(f"{API}/racks/", {"search": "lab-r"})
    assert response.status_code == 200
    assert [row["name"] for row in results(response)] == ["lab-r9", "lab-r10", "lab-r100"]

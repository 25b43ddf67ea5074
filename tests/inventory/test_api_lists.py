"""Inventory API lists: filters (hostlist included), search, ordering, cursor pagination, and a
number of SQL queries that does not depend on the page size."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import GPU, NIC, Cable, CableStatus, Node, SwitchPort
from tests.inventory.api_helpers import API, allocate, nic, results

pytestmark = pytest.mark.django_db


def hostnames(response) -> list[str]:
    return [row["hostname"] for row in results(response)]


def test_nodes_filter_by_hostlist_keeps_the_expression_order(sakuraone, operator_api):
    response = operator_api.get(f"{API}/nodes/", {"hostlist": "gpu[001-003,020]"})
    assert response.status_code == 200
    assert hostnames(response) == ["gpu001", "gpu002", "gpu003", "gpu020"]


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("gpu[001-003,101]", "unknown node(s): gpu101"),
        ("gpu[001-003", "'[' is never closed"),
        ("gpu[a-b]", "is not a number or lo-hi"),
    ],
)
def test_bad_or_unknown_hostlist_is_a_400_naming_hostlist(
    sakuraone, operator_api, expression, words
):
    for resource in ("nodes", "gpus", "nics", "cables"):
        response = operator_api.get(f"{API}/{resource}/", {"hostlist": expression})
        assert response.status_code == 400, resource
        assert words in response.json()["hostlist"][0], resource


def test_nodes_filter_by_pod_rack_and_status(sakuraone, operator_api):
    assert len(results(operator_api.get(f"{API}/nodes/", {"pod": "p2", "page_size": 200}))) == 50
    assert hostnames(operator_api.get(f"{API}/nodes/", {"rack": "p1-rack01"})) == [
        "gpu001",
        "gpu002",
        "gpu003",
        "gpu004",
    ]
    operator_api.patch(
        f"{API}/nodes/{nic('gpu007', 'eno1').node_id}/", {"status": "maintenance"}, format="json"
    )
    assert hostnames(operator_api.get(f"{API}/nodes/", {"status": "maintenance"})) == ["gpu007"]
    bad = operator_api.get(f"{API}/nodes/", {"status": "sleeping"})
    assert bad.status_code == 400
    assert "status" in bad.json()


def test_nics_filter_by_role_rail_node_and_switch(sakuraone, operator_api):
    rail3 = results(operator_api.get(f"{API}/nics/", {"rail": 3, "page_size": 1000}))
    assert len(rail3) == 100
    assert {row["device"] for row in rail3} == {"mlx5_4"}
    of_node = results(operator_api.get(f"{API}/nics/", {"node": "gpu001"}))
    assert len(of_node) == 12
    storage = results(operator_api.get(f"{API}/nics/", {"role": "storage", "pod": "p1"}))
    assert len(storage) == 50
    on_leaf = results(operator_api.get(f"{API}/nics/", {"switch": "leaf-p2-r7", "page_size": 1000}))
    assert len(on_leaf) == 50
    assert {(row["device"], row["rail"]) for row in on_leaf} == {("mlx5_11", 7)}


def test_switches_filter_by_role_pod_rail_and_hostlist(sakuraone, operator_api):
    def names(**params):
        return hostnames(operator_api.get(f"{API}/switches/", params))

    assert names(role="spine") == [f"spine-{n}" for n in range(1, 9)]
    assert names(role="leaf", pod="p2", rail=3) == ["leaf-p2-r3"]
    assert names(hostlist="leaf-p1-r[0-1]") == ["leaf-p1-r0", "leaf-p1-r1"]
    unknown = operator_api.get(f"{API}/switches/", {"hostlist": "leaf-p3-r0"})
    assert unknown.status_code == 400
    assert unknown.json()["hostlist"] == ["unknown switch(es): leaf-p3-r0"]


def test_ports_and_cables_filter_by_switch_node_and_rail(sakuraone, operator_api):
    ports = results(operator_api.get(f"{API}/ports/", {"node": "gpu051"}))
    assert {row["switch"]["hostname"] for row in ports} == (
        {f"leaf-p2-r{rail}" for rail in range(8)} | {"storage-1", "storage-2"}
    )
    uplinks = results(operator_api.get(f"{API}/ports/", {"switch": "spine-1", "page_size": 1000}))
    assert len(uplinks) == 64
    cables = results(operator_api.get(f"{API}/cables/", {"node": "gpu001"}))
    assert len(cables) == 10  # 8 rails + 2 storage
    rail0 = results(operator_api.get(f"{API}/cables/", {"rail": 0, "pod": "p1", "page_size": 1000}))
    assert len(rail0) == 50
    assert {row["b_port"]["switch"]["hostname"] for row in rail0} == {"leaf-p1-r0"}
    spine_cables = results(
        operator_api.get(f"{API}/cables/", {"switch": "spine-1", "page_size": 1000})
    )
    assert len(spine_cables) == 64  # 16 leafs x 4 links


def test_search_and_ordering(sakuraone, operator_api):
    assert hostnames(operator_api.get(f"{API}/nodes/", {"search": "S821GE00042"})) == ["gpu042"]
    first = hostnames(operator_api.get(f"{API}/nodes/", {"ordering": "-hostname", "page_size": 2}))
    assert first == ["gpu100", "gpu099"]
    found = results(operator_api.get(f"{API}/nics/", {"search": "gpu099"}))
    assert {row["node"]["hostname"] for row in found} == {"gpu099"}


def test_nic_list_walks_every_nic_with_a_cursor(sakuraone, operator_api):
    seen = []
    url, params = f"{API}/nics/", {"page_size": 500}
    while url:
        body = operator_api.get(url, params).json()
        assert "count" not in body  # a cursor page costs no COUNT(*)
        seen += [row["id"] for row in body["results"]]
        url, params = body["next"], None
    assert len(seen) == len(set(seen)) == NIC.objects.count() == 1200
    assert seen == sorted(seen)
    # Past max_page_size is refused, naming it, rather than quietly capped (issue 29).
    too_big = operator_api.get(f"{API}/nics/", {"page_size": 5000})
    assert too_big.status_code == 400 and "page_size" in too_big.json()
    assert len(operator_api.get(f"{API}/nics/", {"page_size": 1000}).json()["results"]) == 1000


def query_count(client, url: str, params: dict) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params)
    assert response.status_code == 200, response.json()
    return len(captured)


# Statements a read planned with its joins as written adds inside a test's transaction
# (portal/planner.py: savepoint, SET LOCAL, its reset, release).
PLANNED_AS_WRITTEN = 4
# (resource, filters, queries): 1 for the token with its user's role, then COUNT(*) on
# page-number lists, the page itself, and one per prefetch (a port's active cables by side, an
# allocation's nodes; the NIC list: its cables joined into the page, planned as written, then
# their far ports; see api.fast_lists).
LISTS = [
    ("pods", {}, 3),
    ("racks", {}, 3),
    ("nodes", {}, 3),
    ("nodes", {"hostlist": "gpu[001-050]"}, 4),
    ("gpus", {}, 2),
    ("nics", {}, 3 + PLANNED_AS_WRITTEN),
    ("nics", {"node": "gpu001"}, 3 + PLANNED_AS_WRITTEN),
    ("switches", {}, 3),
    ("ports", {}, 4),
    ("cables", {}, 2),
    ("cables", {"hostlist": "gpu[001-050]"}, 3),
    ("allocations", {}, 4),
]


@pytest.mark.parametrize(("resource", "params", "baseline"), LISTS)
def test_list_queries_do_not_depend_on_the_page_size(
    sakuraone, operator_api, tenant_a, resource, params, baseline
):
    for number in range(12):
        allocate(tenant_a, f"gpu[{number * 4 + 1:03d}-{number * 4 + 4:03d}]")
    url = f"{API}/{resource}/"
    query_count(operator_api, url, {"page_size": 1})  # the token's last-use stamp, once
    small = query_count(operator_api, url, {**params, "page_size": 10})
    large = query_count(operator_api, url, {**params, "page_size": 100})
    assert small == large == baseline


@pytest.mark.parametrize("resource", ["nodes", "nics", "gpus", "cables", "allocations"])
def test_tenant_admin_lists_cost_the_same_queries_at_any_page_size(
    sakuraone, api_as, tenant_a, resource
):
    allocate(tenant_a, "gpu[001-020]")
    client = api_as("tenant_admin", tenant_a)
    url = f"{API}/{resource}/"
    query_count(client, url, {"page_size": 1})
    assert query_count(client, url, {"page_size": 10}) == query_count(
        client, url, {"page_size": 100}
    )


def test_decommissioned_cables_leave_the_nic_link_but_stay_listed(sakuraone, operator_api):
    rail_nic = nic("gpu001", "mlx5_0")
    Cable.objects.filter(a_nic=rail_nic).update(status=CableStatus.DECOMMISSIONED)
    assert operator_api.get(f"{API}/nics/{rail_nic.pk}/").json()["link"] is None
    listed = results(
        operator_api.get(f"{API}/cables/", {"node": "gpu001", "status": "decommissioned"})
    )
    assert [row["a_nic"]["device"] for row in listed] == ["mlx5_0"]


def every_page(client, url: str) -> list[dict]:
    """Every row of a list, following its `next` links, 1,000 to a page."""
    listed, params = [], {"page_size": 1000}
    while url:
        body = client.get(url, params).json()
        listed += body["results"]
        url, params = body["next"], None
    return listed


def serializer_request(client):
    """A request as a serializer's context needs it (absolute URLs), as the client's user."""
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    request = APIRequestFactory().get("/")
    request.user = client.user
    return Request(request)


def test_nic_list_rows_are_exactly_what_the_serializer_shows(sakuraone, operator_api):
    """The NIC list builds its rows from plain values; they must match NICSerializer's
    representation of every NIC, whatever its cable: none, to a port on side B, to a port on
    side A, decommissioned, or (a validation error) to another NIC."""
    from inventory.api.serializers import NICSerializer
    from inventory.selectors import nic_list_with_links

    Cable.objects.filter(a_nic=nic("gpu001", "mlx5_0")).update(status=CableStatus.DECOMMISSIONED)
    flipped = Cable.objects.get(a_nic=nic("gpu002", "mlx5_0"))
    flipped.a_nic, flipped.b_port, flipped.a_port, flipped.b_nic = (
        None,
        None,
        flipped.b_port,
        flipped.a_nic,
    )
    flipped.save()
    Cable.objects.create(
        a_nic=nic("gpu003", "mlx5_3"), b_nic=nic("gpu004", "mlx5_3"), type="400G-DAC"
    )
    # The rows are written as JSON text: strings that need escaping must come out as the
    # serializer's do (quotes, backslashes, control characters, non-ASCII, U+2028), and so
    # must bond members as PostgreSQL prints them.
    NIC.objects.filter(pk=nic("gpu005", "mlx5_0").pk).update(
        serial='SN "7"\\ \n\t\u0001 \u2013 日本 \u2028', netdev="enp\x7f"
    )
    NIC.objects.filter(pk=nic("gpu005", "mlx5_1").pk).update(bond_members=['mlx5_"9', "ü\n", ""])
    Cable.objects.filter(a_nic=nic("gpu006", "mlx5_0")).update(label='rack "A"\\12\n')
    listed = every_page(operator_api, f"{API}/nics/")
    nics = nic_list_with_links(user=operator_api.user).select_related("node", "affinity_gpu")
    expected = NICSerializer(
        nics.order_by("id"), many=True, context={"request": serializer_request(operator_api)}
    ).data
    assert len(listed) == 1200
    assert listed == [dict(row) for row in expected]
    by_device = {(row["node"]["hostname"], row["device"]): row for row in listed}
    assert by_device[("gpu001", "mlx5_0")]["link"] is None
    assert by_device[("gpu002", "mlx5_0")]["link"]["port"]["switch"]["hostname"] == "leaf-p1-r0"
    assert by_device[("gpu003", "mlx5_3")]["link"]["nic"]["node"]["hostname"] == "gpu004"
    assert by_device[("gpu004", "mlx5_3")]["link"]["nic"]["node"]["hostname"] == "gpu003"
    assert by_device[("gpu005", "mlx5_0")]["serial"] == 'SN "7"\\ \n\t\u0001 \u2013 日本 \u2028'
    assert by_device[("gpu005", "mlx5_1")]["bond_members"] == ['mlx5_"9', "ü\n", ""]
    assert by_device[("gpu006", "mlx5_0")]["link"]["cable"]["label"] == 'rack "A"\\12\n'


@pytest.mark.parametrize(
    ("resource", "model", "ordering"),
    [
        ("nics", NIC, "-rail"),
        ("nics", NIC, "device"),
        ("gpus", GPU, "-index"),
        ("cables", Cable, "status"),
        ("ports", SwitchPort, "-name"),
    ],
)
def test_pages_walked_by_a_shared_column_hold_every_row_once(
    sakuraone, operator_api, resource, model, ordering
):
    """Walking cursor pages of 97 by a column many rows share (a NIC's rail or device, a GPU's
    index, a cable's status) must reach every row once, in that column's order, and walking
    back by the previous links from the last page must meet the same pages. Without the id to
    break ties, rows tied in no set order skipped some and repeated others; with DRF's cursor
    (one column's value and an OFFSET capped at 1,000), the 1,500 connected cables gave the same
    page again and again. The NIC list's rows are plain tuples (api.fast_lists), its cursors
    read from their places. A NIC off the rails has no rail: a cursor on such a row was a 500
    (DRF filtered `rail__lt="None"`); they sort as below rail 0."""
    field = ordering.lstrip("-")
    pages, url, params = [], f"{API}/{resource}/", {"page_size": 97, "ordering": ordering}
    while url and len(pages) <= model.objects.count() // 97 + 1:
        response = operator_api.get(url, params)
        assert response.status_code == 200, response.content[:500]
        body = response.json()
        pages.append(body["results"])
        url, params, previous = body["next"], None, body["previous"]
    listed = [row for page in pages for row in page]
    assert sorted(row["id"] for row in listed) == sorted(model.objects.values_list("pk", flat=True))
    if field == "name":  # natural order (Ethernet8 before Ethernet16), by the stored key
        keys = dict(SwitchPort.objects.values_list("pk", "name_sort_key"))
        values = [keys[row["id"]] for row in listed]
        assert values == list(
            SwitchPort.objects.order_by("-name_sort_key").values_list("name_sort_key", flat=True)
        )
    else:
        values = [-1 if row[field] is None else row[field] for row in listed]
        assert values == sorted(values, reverse=ordering.startswith("-"))
    if field == "rail":
        assert -1 in values
    back = []
    while previous:
        body = operator_api.get(previous).json()
        back.insert(0, body["results"])
        previous = body["previous"]
    assert back == pages[:-1]


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64 at all!",
        "W3RydWUsWyJhYmMiXV0",  # [true,["abc"]]: one value for two columns, and a string
        "W2ZhbHNlLFsieCIsMV1d",  # [false,["x",1]]: a string where the id goes
        "W2ZhbHNlLFtudWxsLDFdXQ",  # [false,[null,1]]
    ],
)
def test_a_cursor_the_list_did_not_write_is_a_404(sakuraone, operator_api, cursor):
    response = operator_api.get(f"{API}/gpus/", {"ordering": "index", "cursor": cursor})
    assert response.status_code == 404, response.content[:300]
    assert response.json()["detail"] == "Invalid cursor"


@pytest.mark.parametrize("zone", ["UTC", "Asia/Tokyo"])
def test_node_list_rows_are_exactly_what_the_serializer_shows(sakuraone, operator_api, zone):
    """The node list is written from plain values as JSON text (api.fast_lists); it must match
    NodeSerializer's representation of every node: without pod or rack, with strings that
    need escaping, disks as PostgreSQL prints them, moments with and without microseconds,
    in the current time zone whichever it is."""
    from datetime import UTC, datetime

    from django.utils import timezone

    from inventory.api.serializers import NodeSerializer
    from inventory.selectors import node_list

    Node.objects.filter(hostname="gpu001").update(
        pod=None,
        rack=None,
        serial='SN "7"\\ \n\t\u0001 \u2013 日本 \u2028',
        slurm_reason='down by "ops"\nsee ticket',
        slurm_state_changed_at=datetime(2026, 11, 27, 1, 2, 3, tzinfo=UTC),
        bmc_address="2001:db8::17",
        disks=[{"role": 'scr"atch\n', "count": 4, "note": None}],
    )
    Node.objects.filter(hostname="gpu002").update(
        slurm_state_changed_at=datetime(2026, 11, 27, 1, 2, 3, 450, tzinfo=UTC),
        bmc_address="10.1.2.3",
        disks=[],
    )
    with timezone.override(zone):
        listed = every_page(operator_api, f"{API}/nodes/")
        nodes = node_list(user=operator_api.user).select_related("pod", "rack")
        context = {"request": serializer_request(operator_api)}
        expected = NodeSerializer(nodes, many=True, context=context).data
    assert len(listed) == Node.objects.count() == 100
    assert listed == [dict(row) for row in expected]
    first, second = listed[0], listed[1]
    assert (first["pod"], first["rack"], first["bmc_address"]) == (None, None, "2001:db8::17")
    assert first["disks"] == [{"role": 'scr"atch\n', "count": 4, "note": None}]
    assert first["serial"] == 'SN "7"\\ \n\t\u0001 \u2013 日本 \u2028'
    if zone == "UTC":
        assert first["slurm_state_changed_at"] == "2026-11-27T01:02:03Z"
        assert second["slurm_state_changed_at"] == "2026-11-27T01:02:03.000450Z"
    else:
        assert first["slurm_state_changed_at"] == "2026-11-27T10:02:03+09:00"
    assert second["pod"]["name"] and second["rack"]["url"].endswith(f"/{second['rack']['id']}/")


@pytest.mark.parametrize("resource", sorted({resource for resource, _, _ in LISTS}))
def test_the_browsable_api_shows_every_list_with_its_form(sakuraone, operator_api, resource):
    """The browsable API draws each list and its create form; the NIC page reaches the renderer
    as JSON text (api.fast_lists) and is decoded for it. Related fields are offered by key: their
    brief representation, a dict, was a 500 as a choice's key."""
    response = operator_api.get(f"{API}/{resource}/", {"page_size": 2, "format": "api"})
    assert response.status_code == 200, response.content[-2000:]
    assert "text/html" in response["Content-Type"]
    if resource == "nics":
        page = response.content.decode()
        assert "mlx5_1" in page
        first = Node.objects.get(hostname="gpu001").pk
        assert re.search(rf'<option value="{first}"\s*>gpu001</option>', page)

"""Cable trace (inventory/cable_trace.py): from a NIC or a port to the spines, and the nodes
behind a switch, in constant queries."""

from __future__ import annotations

import pytest

from inventory.cable_trace import nodes_behind_switch, trace_from_nic, trace_from_port
from inventory.models import NIC, Cable, CableStatus, Switch, SwitchPort

pytestmark = pytest.mark.django_db

SPINES = [f"spine-{n}" for n in range(1, 9)]


# A trace runs within portal.planner.joins_as_written: inside the test's transaction that is a
# savepoint, SET LOCAL, its reset and the release, besides the reads counted.
PLANNED_AS_WRITTEN = 4

def nic(hostname: str, device: str) -> NIC:
    return NIC.objects.select_related("node").get(node__hostname=hostname, device=device)


def port(switch: str, name: str) -> SwitchPort:
    return SwitchPort.objects.get(switch__hostname=switch, name=name)


def test_trace_from_a_rail_nic_to_the_spines(sakuraone, django_assert_num_queries):
    start = nic("gpu051", "mlx5_11")
    # the cable, the leaf's port ids, the leaf's cables
    with django_assert_num_queries(3 + PLANNED_AS_WRITTEN):
        trace = trace_from_nic(start)
    assert (trace.nic.node, trace.nic.device, trace.nic.rail) == ("gpu051", "mlx5_11", 7)
    assert (trace.cable.type, trace.cable.status, trace.cable.length_m) == (
        "800GBASE-2DR4",
        "connected",
        5.0,
    )
    assert (trace.port.name, trace.port.speed_gbps, trace.port.breakout_parent) == (
        "Ethernet0",
        400,
        "Port1",
    )
    assert (trace.switch.hostname, trace.switch.pod, trace.switch.rail) == ("leaf-p2-r7", "p2", 7)
    assert len(trace.uplinks) == 32
    assert [spine.hostname for spine in trace.spines] == SPINES
    first = trace.uplinks[0]
    assert (first.local_port.switch.hostname, first.local_port.name) == (
        "leaf-p2-r7",
        "Ethernet256",
    )
    assert (first.remote_port.switch.hostname, first.remote_port.name) == ("spine-1", "Ethernet480")
    assert trace.notes == ()
    as_dict = trace.as_dict()
    assert as_dict["switch"]["hostname"] == "leaf-p2-r7"
    assert as_dict["uplinks"][0]["cable"]["type"] == "800GBASE-SR8"


def test_trace_costs_the_same_for_any_nic(sakuraone, django_assert_num_queries):
    for hostname, device in [("gpu001", "mlx5_0"), ("gpu100", "mlx5_4"), ("gpu042", "mlx5_8")]:
        start = NIC.objects.get(node__hostname=hostname, device=device)  # node not loaded
        with django_assert_num_queries(4 + PLANNED_AS_WRITTEN):
            trace_from_nic(start)


def test_trace_from_a_storage_nic_stops_at_the_storage_switch(sakuraone):
    trace = trace_from_nic(nic("gpu002", "mlx5_bond_0"))
    assert (trace.switch.hostname, trace.switch.role, trace.port.name) == (
        "storage-2",
        "storage",
        "Ethernet4",
    )
    assert trace.uplinks == () and trace.spines == ()


def test_trace_from_an_uncabled_nic(sakuraone):
    trace = trace_from_nic(nic("gpu002", "eno1"))
    assert trace.cable is None and trace.switch is None
    assert trace.notes == ("gpu002 eno1 is not cabled",)


def test_trace_with_a_leaf_cut_off_from_the_spines(sakuraone):
    Cable.objects.filter(
        a_port__switch__hostname="leaf-p1-r3", b_port__switch__role="spine"
    ).update(status=CableStatus.DECOMMISSIONED)
    trace = trace_from_nic(nic("gpu010", "mlx5_4"))
    assert trace.switch.hostname == "leaf-p1-r3"
    assert trace.uplinks == ()
    assert trace.notes == ("leaf-p1-r3 has no active uplinks",)


def test_trace_from_a_host_port(sakuraone, django_assert_num_queries):
    host_port = port("leaf-p1-r0", "Ethernet4")
    with django_assert_num_queries(4 + PLANNED_AS_WRITTEN):
        trace = trace_from_port(host_port)
    assert (trace.nic.node, trace.nic.device) == ("gpu002", "mlx5_0")
    assert (trace.switch.hostname, len(trace.uplinks), len(trace.spines)) == ("leaf-p1-r0", 32, 8)


def test_trace_from_uplink_ports_on_either_side(sakuraone, django_assert_num_queries):
    leaf_side = port("leaf-p1-r1", "Ethernet296")  # cage 37: spine-2, second link
    with django_assert_num_queries(2 + PLANNED_AS_WRITTEN):
        from_leaf = trace_from_port(leaf_side)
    spine_side = port("spine-2", "Ethernet40")  # cage 5: leaf 1 (leaf-p1-r1), second link
    from_spine = trace_from_port(spine_side)
    for trace in (from_leaf, from_spine):
        assert trace.nic is None
        assert trace.switch.hostname == "leaf-p1-r1"
        ((uplink),) = trace.uplinks
        assert (uplink.local_port.name, uplink.remote_port.switch.hostname) == (
            "Ethernet296",
            "spine-2",
        )
        assert uplink.remote_port.name == "Ethernet40"
        assert [spine.hostname for spine in trace.spines] == ["spine-2"]


def test_trace_from_a_cage_or_a_spare_port(sakuraone):
    cage = trace_from_port(port("leaf-p1-r0", "Port2"))
    assert cage.notes == ("Port2 is a cage broken out 2x400G; trace Ethernet8, Ethernet12",)
    spare = trace_from_port(port("leaf-p1-r0", "Ethernet200"))
    assert spare.notes == ("leaf-p1-r0 Ethernet200 is not cabled",)
    assert len(spare.uplinks) == 32


def test_nodes_behind_a_leaf(sakuraone, django_assert_num_queries):
    leaf = Switch.objects.get(hostname="leaf-p2-r3")
    with django_assert_num_queries(2):
        rows = nodes_behind_switch(leaf)
        summary = [(r.port.name, r.node.hostname, r.nic.device, r.rail) for r in rows]
    assert len(rows) == 50
    assert summary[:3] == [
        ("Ethernet0", "gpu051", "mlx5_4", 3),
        ("Ethernet4", "gpu052", "mlx5_4", 3),
        ("Ethernet8", "gpu053", "mlx5_4", 3),
    ]
    assert summary[-1] == ("Ethernet196", "gpu100", "mlx5_4", 3)


def test_nodes_behind_a_storage_switch_and_a_spine(sakuraone):
    rows = nodes_behind_switch(Switch.objects.get(hostname="storage-2"))
    assert len(rows) == 100
    assert {row.nic.device for row in rows} == {"mlx5_bond_0"}
    assert {row.rail for row in rows} == {None}
    assert nodes_behind_switch(Switch.objects.get(hostname="spine-1")) == []


def test_trace_through_the_api_costs_the_same_queries_in_a_larger_fleet(
    sakuraone, sakuraone_spec, operator_api
):
    """The API's trace of one rail NIC reads a fixed number of rows' worth of queries whatever
    the fleet's size: scale 1, then the same NIC after the fleet grows to scale 3."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inventory.topology.importer import import_topology
    from tests.inventory.api_helpers import API

    url = f"{API}/nics/{nic('gpu051', 'mlx5_11').pk}/trace/"

    def traced() -> tuple[int, dict]:
        with CaptureQueriesContext(connection) as queries:
            response = operator_api.get(url)
        assert response.status_code == 200, response.content
        return len(queries), response.json()

    traced()  # the client's first request does one-off reads; compare warm requests
    small_count, small = traced()
    import_topology(sakuraone_spec, scale=3)
    assert NIC.objects.count() == 3 * 1200  # the fleet did grow
    large_count, large = traced()
    assert large_count == small_count
    assert (large["switch"]["hostname"], len(large["uplinks"])) == ("leaf-p2-r7", 32)
    assert small["switch"]["hostname"] == "leaf-p2-r7"

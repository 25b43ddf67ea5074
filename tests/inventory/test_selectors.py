"""Cable trace, nodes behind a switch, and role-restricted lists in constant queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import NIC, Allocation, Cable, CableStatus, Node, Switch, SwitchPort
from inventory.selectors import (
    allocation_list,
    cable_list,
    nic_link,
    nic_list,
    node_get,
    node_list,
    nodes_behind_switch,
    nodes_from_hostlist,
    port_list,
    switch_list,
    trace_from_nic,
    trace_from_port,
)
from portal.errors import InvalidInput, NotFound
from portal.models import Role

pytestmark = pytest.mark.django_db

SPINES = [f"spine-{n}" for n in range(1, 9)]


def nic(hostname: str, device: str) -> NIC:
    return NIC.objects.select_related("node").get(node__hostname=hostname, device=device)


def port(switch: str, name: str) -> SwitchPort:
    return SwitchPort.objects.get(switch__hostname=switch, name=name)


def allocate(tenant, hostlist: str, *, start=None, end=None) -> Allocation:
    now = timezone.now()
    allocation = Allocation.objects.create(
        tenant=tenant, start=start or now - timedelta(days=1), end=end, purpose="tests"
    )
    allocation.nodes.set(Node.objects.filter(hostname__in=hostlist_names(hostlist)))
    return allocation


def hostlist_names(expression: str) -> list[str]:
    from inventory.hostlist import expand_hostlist

    return expand_hostlist(expression)


# -- trace -------------------------------------------------------------------------------


def test_trace_from_a_rail_nic_to_the_spines(sakuraone, django_assert_num_queries):
    start = nic("gpu051", "mlx5_11")
    with django_assert_num_queries(3):  # the cable, the leaf's port ids, the leaf's cables
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
        with django_assert_num_queries(4):
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
    with django_assert_num_queries(4):
        trace = trace_from_port(host_port)
    assert (trace.nic.node, trace.nic.device) == ("gpu002", "mlx5_0")
    assert (trace.switch.hostname, len(trace.uplinks), len(trace.spines)) == ("leaf-p1-r0", 32, 8)


def test_trace_from_uplink_ports_on_either_side(sakuraone, django_assert_num_queries):
    leaf_side = port("leaf-p1-r1", "Ethernet296")  # cage 37: spine-2, second link
    with django_assert_num_queries(2):
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


# -- lists and roles -------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.ADMIN, Role.OPERATOR, Role.ONCALL, Role.VIEWER])
def test_cluster_wide_roles_see_every_node(sakuraone, make_user, role):
    assert node_list(user=make_user(role)).count() == 100
    assert switch_list(user=make_user(role)).count() == 26


def test_tenant_admin_sees_only_current_allocations(sakuraone, make_user, tenant_a, tenant_b):
    admin = make_user(Role.TENANT_ADMIN, tenant=tenant_a)
    now = timezone.now()
    allocate(tenant_a, "gpu[001-004]")
    allocate(tenant_a, "gpu[010-011]", start=now - timedelta(days=9), end=now - timedelta(days=1))
    allocate(tenant_a, "gpu[020-021]", start=now + timedelta(days=1))
    allocate(tenant_b, "gpu[005-008]")
    hostnames = list(node_list(user=admin).values_list("hostname", flat=True))
    assert hostnames == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert nic_list(user=admin).count() == 4 * 12
    assert cable_list(user=admin).count() == 4 * 10
    assert switch_list(user=admin).count() == 0
    assert port_list(user=admin).count() == 0
    assert node_get(user=admin, hostname="gpu001").hostname == "gpu001"
    with pytest.raises(NotFound):
        node_get(user=admin, hostname="gpu005")
    with pytest.raises(InvalidInput) as caught:
        nodes_from_hostlist(user=admin, expression="gpu[003-006]")
    assert caught.value.detail == {"hostlist": ["unknown node(s): gpu[005-006]"]}
    assert [a.tenant for a in allocation_list(user=admin)] == [tenant_a] * 3
    assert len(allocation_list(user=admin, current_only=True)) == 1


def test_users_without_a_role_see_nothing(sakuraone, make_user):
    nobody = make_user(Role.VIEWER)
    nobody.groups.clear()
    nobody.__dict__.pop("_role_cache", None)
    assert node_list(user=nobody).count() == 0
    assert switch_list(user=nobody).count() == 0


def test_allocations_are_tenant_private(sakuraone, make_user, tenant_a, tenant_b):
    allocate(tenant_a, "gpu001")
    allocate(tenant_b, "gpu002")
    assert allocation_list(user=make_user(Role.VIEWER)).count() == 0
    assert allocation_list(user=make_user(Role.OPERATOR)).count() == 2
    # Only roles that may see tenant data may ask which tenant holds a node.
    operator = make_user(Role.ONCALL)
    held = node_list(user=operator, filters={"tenant": tenant_b.slug})
    assert list(held.values_list("hostname", flat=True)) == ["gpu002"]
    with pytest.raises(InvalidInput, match="unknown filter 'tenant'"):
        node_list(user=make_user(Role.VIEWER), filters={"tenant": tenant_b.slug})


def test_node_filters(sakuraone, make_user):
    user = make_user(Role.VIEWER)
    assert node_list(user=user, filters={"hostlist": "gpu[001-016,020]"}).count() == 17
    assert node_list(user=user, filters={"pod": "p2"}).count() == 50
    assert node_list(user=user, filters={"rack": "p1-rack13"}).count() == 2
    assert node_list(user=user, filters={"status": "active", "pod": None}).count() == 100
    with pytest.raises(InvalidInput) as caught:
        node_list(user=user, filters={"hostlist": "gpu[001-016"})
    assert "gpu[001-016" in caught.value.detail["hostlist"][0]
    with pytest.raises(InvalidInput, match="unknown filter 'colour'"):
        node_list(user=user, filters={"colour": "blue"})
    assert switch_list(user=user, filters={"role": "leaf", "pod": "p1"}).count() == 8
    assert nic_list(user=user, filters={"rail": 3, "pod": "p1"}).count() == 50


def test_nodes_from_hostlist_keeps_the_order_asked(sakuraone, make_user):
    nodes = nodes_from_hostlist(user=make_user(Role.OPERATOR), expression="gpu[003,001],gpu100")
    assert [node.hostname for node in nodes] == ["gpu003", "gpu001", "gpu100"]
    with pytest.raises(InvalidInput) as caught:
        nodes_from_hostlist(user=make_user(Role.OPERATOR), expression="gpu[099-102]")
    assert caught.value.detail == {"hostlist": ["unknown node(s): gpu[101-102]"]}


def test_node_list_queries_do_not_grow_with_the_page(
    sakuraone, make_user, django_assert_num_queries
):
    user = make_user(Role.OPERATOR)
    user.role  # noqa: B018 - resolve and cache the role outside the counted block
    for size in (5, 100):
        with django_assert_num_queries(1):
            rows = [(n.hostname, n.pod.name, n.rack.name) for n in node_list(user=user)[:size]]
        assert len(rows) == size


def test_node_detail_in_constant_queries(sakuraone, make_user, django_assert_num_queries):
    user = make_user(Role.OPERATOR)
    user.role  # noqa: B018
    with django_assert_num_queries(5):  # node, GPUs, NICs, cables on side A, cables on side B
        node = node_get(user=user, hostname="gpu042")
        gpus = [gpu.index for gpu in node.gpus.all()]
        links = {}
        for each in node.nics.all():
            link = nic_link(each)
            links[each.device] = (link.port.switch.hostname, link.port.name) if link else None
    assert gpus == list(range(8))
    assert links["mlx5_0"] == ("leaf-p1-r0", "Ethernet164")
    assert links["mlx5_bond_0"] == ("storage-2", "Ethernet164")
    assert links["eno1"] is None
    affinity = {each.device: each.affinity_gpu for each in node.nics.all()}
    assert (affinity["mlx5_11"].index, affinity["eno1"]) == (7, None)


def test_nic_list_with_links_queries_do_not_grow(sakuraone, make_user, django_assert_num_queries):
    user = make_user(Role.OPERATOR)
    user.role  # noqa: B018
    for size in (12, 240):
        with django_assert_num_queries(3):
            page = list(nic_list(user=user, with_links=True).order_by("id")[:size])
            ends = [(n.node.hostname, n.node.pod.name, nic_link(n)) for n in page]
            described = [
                (link.port.switch.hostname, link.port.name)
                for *_, link in ends
                if link and link.port
            ]
        assert len(page) == size and described


def test_port_and_cable_lists_in_constant_queries(sakuraone, make_user, django_assert_num_queries):
    user = make_user(Role.OPERATOR)
    user.role  # noqa: B018
    leaf = Switch.objects.get(hostname="leaf-p1-r2")
    with django_assert_num_queries(3):
        ports = list(port_list(user=user, switch=leaf))
        far = [p.active_cables_as_b[0].a_nic.node.hostname for p in ports if p.active_cables_as_b]
    assert len(ports) == 114 and len(far) == 50 + 0  # uplinks have the leaf on side A
    with django_assert_num_queries(1):
        cables = list(cable_list(user=user, filters={"switch": "spine-4"}))
        names = {(c.a_port.switch.hostname, c.b_port.name) for c in cables}
    assert len(cables) == 64 and len(names) == 64

"""Role-restricted lists and details in constant queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Allocation, Node, Switch
from inventory.selectors import (
    allocation_list,
    cable_list,
    nic_link,
    nic_list,
    node_get,
    node_list,
    nodes_from_hostlist,
    port_list,
    switch_list,
)
from portal.errors import InvalidInput, NotFound
from portal.models import Role

pytestmark = pytest.mark.django_db

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


@pytest.mark.parametrize("hostname", ["leaf-p1-r0", "spine-1", "storage-1"])
def test_a_switchs_cables_by_far_end_in_one_query(sakuraone, hostname, django_assert_num_queries):
    """One query gives what two `active_cable_ids_at` calls gave: the impact of a switch needs
    its cables to NICs and to other switches, and a fleet's spine has 8,000 ports."""
    from inventory.models import Cable, CableStatus, SwitchPort
    from inventory.selectors import active_cable_ids_at, active_cable_ids_by_far_end

    ports = SwitchPort.objects.filter(switch__hostname=hostname).values("pk")
    Cable.objects.filter(pk__in=active_cable_ids_at(ports)[:2]).update(
        status=CableStatus.DECOMMISSIONED)
    with django_assert_num_queries(1):
        by_far_end = active_cable_ids_by_far_end(ports)
    assert sorted(by_far_end["nic"]) == sorted(active_cable_ids_at(ports, far_end="nic"))
    assert sorted(by_far_end["port"]) == sorted(active_cable_ids_at(ports, far_end="port"))
    assert by_far_end["nic"] or by_far_end["port"]

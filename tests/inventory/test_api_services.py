"""The services and selectors the API added: the rail rules of NICs and of cabling, cable updates,
and lists that carry each NIC's or port's far end."""

from __future__ import annotations

import pytest

from inventory.models import NIC, Cable, CableStatus
from inventory.selectors import nic_link, nic_list_with_links, port_list_with_links
from inventory.services import (
    cable_create_on_rail,
    cable_rail_errors,
    cable_update,
    nic_rail_errors,
)
from portal.errors import InvalidInput
from portal.models import AuditEntry
from tests.inventory.api_helpers import nic, port

pytestmark = pytest.mark.django_db


def test_nic_rail_rule_names_the_nic_holding_the_rail(sakuraone):
    rail3 = nic("gpu001", "mlx5_4")
    node = rail3.node
    assert nic_rail_errors(node=node, role=NIC.Role.RAIL, rail=3, nic=rail3) == {}
    assert nic_rail_errors(node=node, role=NIC.Role.RAIL, rail=3) == {
        "rail": ["gpu001 mlx5_4 already serves rail 3"]
    }
    assert nic_rail_errors(node=node, role=NIC.Role.RAIL, rail=None) == {
        "rail": ["a rail NIC needs its rail index (0-7)"]
    }
    assert nic_rail_errors(node=node, role=NIC.Role.STORAGE, rail=2) == {
        "rail": ["only rail NICs have a rail index; this one is storage"]
    }
    assert nic_rail_errors(node=node, role=NIC.Role.MANAGEMENT, rail=None) == {}


def test_rail_rule_errors_name_the_nic_side(sakuraone):
    rail3 = nic("gpu001", "mlx5_4")
    assert cable_rail_errors(rail3, port("leaf-p1-r3", "Ethernet200")) == {}
    assert cable_rail_errors(port("leaf-p1-r5", "Ethernet200"), rail3) == {
        "b": ["gpu001 mlx5_4 is on rail 3; leaf-p1-r5 serves rail 5"]
    }
    (message,) = cable_rail_errors(rail3, port("leaf-p2-r3", "Ethernet200"))["a"]
    assert message == "gpu001 mlx5_4 is in pod p1; leaf-p2-r3 is a leaf of pod p2"
    (message,) = cable_rail_errors(nic("gpu001", "eno1"), port("leaf-p1-r0", "Ethernet200"))["a"]
    assert "management NIC" in message
    # Not a NIC-to-leaf cable: the rail rule has nothing to say.
    assert cable_rail_errors(nic("gpu001", "mlx5_8"), port("storage-1", "Ethernet200")) == {}
    assert cable_rail_errors(port("leaf-p1-r0", "Ethernet504"), port("spine-1", "Ethernet8")) == {}


def test_cable_create_on_rail_refuses_before_writing(sakuraone):
    rail3 = nic("gpu001", "mlx5_4")
    Cable.objects.filter(a_nic=rail3).update(status=CableStatus.DECOMMISSIONED)
    before = Cable.objects.count()
    with pytest.raises(InvalidInput) as caught:
        cable_create_on_rail(a=rail3, b=port("leaf-p1-r4", "Ethernet200"), type="400GBASE-DR4")
    assert "rail 3" in caught.value.detail["a"][0]
    assert Cable.objects.count() == before
    cable = cable_create_on_rail(
        a=rail3, b=port("leaf-p1-r3", "Ethernet200"), type="400GBASE-DR4", label="new"
    )
    assert (cable.a_nic, cable.label) == (rail3, "new")


def test_cable_update_changes_status_and_fields_and_audits(sakuraone, make_user):
    operator = make_user("operator")
    cable = Cable.objects.get(a_nic=nic("gpu001", "mlx5_0"))
    cable_update(
        cable=cable, changes={"status": "faulty", "label": "R0-001"}, actor=operator, via="api"
    )
    cable.refresh_from_db()
    assert (cable.status, cable.label) == ("faulty", "R0-001")
    audited = AuditEntry.objects.filter(object_type="inventory.cable", object_id=str(cable.pk))
    assert audited.count() == 2  # the status change, then the label
    with pytest.raises(InvalidInput) as caught:
        cable_update(cable=cable, changes={"b_port": port("leaf-p1-r0", "Ethernet200")})
    assert list(caught.value.detail) == ["b_port"]
    unchanged = cable_update(cable=cable, changes={"label": "R0-001"})
    assert unchanged.pk == cable.pk
    assert audited.count() == 2  # nothing changed, nothing recorded


def test_lists_with_links_carry_the_far_end_in_constant_queries(
    sakuraone, make_user, django_assert_num_queries
):
    viewer = make_user("viewer")
    viewer.role  # noqa: B018 - read the role before counting queries
    with django_assert_num_queries(3):  # NICs, their cables on side A, on side B
        nics = list(nic_list_with_links(user=viewer).filter(node__hostname="gpu001"))
        links = {each.device: nic_link(each) for each in nics}
        far_ports = {
            device: (link.port.switch.hostname, link.port.name)
            for device, link in links.items()
            if link
        }
    assert far_ports["mlx5_0"] == ("leaf-p1-r0", "Ethernet0")
    assert links["eno1"] is None
    with django_assert_num_queries(3):
        ports = list(port_list_with_links(user=viewer).filter(switch__hostname="leaf-p1-r0"))
        behind = {each.name: nic_link(each) for each in ports}
        host = behind["Ethernet0"].nic
        assert (host.node.hostname, host.device) == ("gpu001", "mlx5_0")
    tenant_admin = make_user("tenant_admin")
    assert not port_list_with_links(user=tenant_admin).exists()
    assert not nic_list_with_links(user=tenant_admin).exists()  # no allocation yet

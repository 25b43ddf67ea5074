"""Parts swapped in a slot (issue 25 item 2): the slot's row stays, its serial changes in place,
and a history row records what left and what arrived; a returning serial is recognised."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import GPU, Cable, ComponentSwap, Node, SwitchPort
from inventory.selectors import part_history, swap_list
from inventory.swaps import component_replace, installed_elsewhere, slot_for
from portal.errors import InvalidInput
from portal.models import AuditEntry, Role
from tests.faults.conftest import build_fleet
from tests.inventory.conftest import delete_inventory


@pytest.fixture
def fleet(db):
    # The small fleet the fault tests use, not this package's SAKURAONE import (which holds the
    # same host names when another test here committed it): emptied inside this test's
    # transaction, so the import is whole again for the next test.
    delete_inventory()
    return build_fleet()


@pytest.fixture
def cabled(fleet):
    """gpu001 mlx5_0 cabled to the leaf, with transceiver serials at both ends."""
    node = fleet.nodes[0]
    nic = node.nics.get(device="mlx5_0")
    nic.affinity_gpu = node.gpus.get(index=0)
    nic.mac = "b8:3f:d2:00:00:01"
    nic.serial = "MT2301X00001"
    nic.save()
    port = SwitchPort.objects.get(switch=fleet.leaf, name="Ethernet0")
    cable = Cable.objects.create(
        a_nic=nic, b_port=port, type=Cable.Type.BREAKOUT_2DR4_800G, status="connected",
        a_transceiver_serial="TX-A-1", b_transceiver_serial="TX-B-1",
    )
    return node, nic, cable


def test_a_gpu_swap_keeps_the_slot_and_records_both_serials(cabled, make_user):
    node, nic, _cable = cabled
    operator = make_user(Role.OPERATOR)
    gpu = node.gpus.get(index=0)
    old_serial, old_uuid = gpu.serial, gpu.uuid

    swap = component_replace(
        slot=slot_for(kind="gpu", node=node, gpu_index=0), serial_in="1654399999999",
        uuid_in="GPU-ffff0000-0000-0000-0000-000000000000", firmware_version_in="96.00.89.00.01",
        reference="RC-7", actor=operator,
    )

    gpu.refresh_from_db()
    assert (gpu.pk, gpu.node_id, gpu.index) == (swap.gpu_id, node.pk, 0)
    assert gpu.serial == "1654399999999"
    assert gpu.uuid == "GPU-ffff0000-0000-0000-0000-000000000000"
    nic.refresh_from_db()
    assert nic.affinity_gpu_id == gpu.pk  # what hangs off the slot stays
    assert (swap.serial_out, swap.serial_in) == (old_serial, "1654399999999")
    assert (swap.uuid_out, swap.uuid_in) == (old_uuid, gpu.uuid)
    assert swap.slot == "gpu001 GPU0" and swap.reference == "RC-7"
    assert swap.firmware_version_in == "96.00.89.00.01"
    assert swap.swapped_by == operator and swap.returned_from is None
    audited = AuditEntry.objects.filter(object_type="inventory.gpu", object_id=str(gpu.pk)).get()
    assert audited.before["serial"] == old_serial and audited.after["serial"] == "1654399999999"
    assert AuditEntry.objects.filter(object_type="inventory.componentswap").count() == 1


def test_a_gpu_without_a_new_uuid_loses_the_old_one(fleet):
    node = fleet.nodes[0]
    component_replace(slot=slot_for(kind="gpu", node=node, gpu_index=3), serial_in="NEW-3")
    assert node.gpus.get(index=3).uuid == ""  # the UUID named the GPU that left


def test_a_nic_swap_keeps_its_cable_rail_and_role(cabled):
    node, nic, cable = cabled
    swap = component_replace(
        slot=slot_for(kind="nic", node=node, nic_device="mlx5_0"), serial_in="MT2301X00777",
        mac_in="B8-3F-D2-00-07-77",
    )
    nic.refresh_from_db()
    cable.refresh_from_db()
    assert (nic.serial, nic.mac, nic.rail, nic.role) == (
        "MT2301X00777", "b8:3f:d2:00:07:77", 0, "rail")
    assert cable.a_nic_id == nic.pk and cable.status == "connected"
    assert (swap.serial_out, swap.mac_out, swap.mac_in) == (
        "MT2301X00001", "b8:3f:d2:00:00:01", "b8:3f:d2:00:07:77")


def test_a_transceiver_swap_changes_the_nic_end_of_its_cable(cabled):
    node, _nic, cable = cabled
    swap = component_replace(
        slot=slot_for(kind="transceiver", node=node, nic_device="mlx5_0"), serial_in="TX-A-2"
    )
    cable.refresh_from_db()
    assert (cable.a_transceiver_serial, cable.b_transceiver_serial) == ("TX-A-2", "TX-B-1")
    assert (swap.serial_out, swap.cable_id, swap.cable_side) == ("TX-A-1", cable.pk, "a")


def test_a_positional_part_takes_its_serial_out_from_its_last_swap(fleet):
    node = fleet.nodes[0]
    slot = slot_for(kind="psu", node=node, position="PSU1")
    first = component_replace(slot=slot, serial_in="PSU-B", serial_out="PSU-A")
    second = component_replace(slot=slot, serial_in="PSU-C", serial_out="ignored")
    assert (first.serial_out, second.serial_out) == ("PSU-A", "PSU-B")
    assert installed_elsewhere("psu", "PSU-C") == "gpu001 PSU PSU1"
    assert installed_elsewhere("psu", "PSU-B") is None  # it left


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"kind": "gpu_fan", "gpu_index": 0}, "kind"),
        ({"kind": "gpu"}, "gpu_index"),
        ({"kind": "gpu", "gpu_index": 7, "node": None}, "node"),
        ({"kind": "nic", "nic_device": "mlx5_9"}, "nic"),
        ({"kind": "transceiver", "nic_device": "mlx5_1"}, "nic"),  # no cable, no transceiver
    ],
)
def test_a_slot_that_does_not_exist_is_refused_naming_the_field(fleet, arguments, field):
    arguments = {"node": fleet.nodes[0], **arguments}
    with pytest.raises(InvalidInput) as refused:
        slot_for(**arguments)
    assert field in refused.value.detail


def test_a_serial_installed_elsewhere_is_refused_and_nothing_is_written(fleet):
    node, other = fleet.nodes
    elsewhere = other.gpus.get(index=2).serial
    before = list(GPU.objects.order_by("pk").values_list("serial", "uuid"))
    for serial in (elsewhere, node.gpus.get(index=1).serial):
        with pytest.raises(InvalidInput) as refused:
            component_replace(slot=slot_for(kind="gpu", node=node, gpu_index=1), serial_in=serial)
        assert list(refused.value.detail) == ["serial_in"]
    with pytest.raises(InvalidInput) as refused:
        component_replace(slot=slot_for(kind="gpu", node=node, gpu_index=1), serial_in="X",
                          swapped_at=timezone.now() + timedelta(days=1))
    assert list(refused.value.detail) == ["swapped_at"]
    with pytest.raises(InvalidInput) as refused:
        component_replace(slot=slot_for(kind="psu", node=node, position="PSU2"), serial_in="P",
                          uuid_in="GPU-1")
    assert list(refused.value.detail) == ["uuid_in"]
    assert list(GPU.objects.order_by("pk").values_list("serial", "uuid")) == before
    assert not ComponentSwap.objects.exists()


def test_the_message_says_where_the_serial_is(fleet):
    node, other = fleet.nodes
    with pytest.raises(InvalidInput) as refused:
        component_replace(slot=slot_for(kind="gpu", node=node, gpu_index=1),
                          serial_in=other.gpus.get(index=2).serial)
    assert "gpu002 GPU2" in refused.value.detail["serial_in"][0]


def test_a_refurbished_part_coming_back_is_recognised_and_its_life_is_told(fleet, make_user):
    node, other = fleet.nodes
    operator = make_user(Role.OPERATOR)
    failed = node.gpus.get(index=3).serial
    out = component_replace(slot=slot_for(kind="gpu", node=node, gpu_index=3),
                            serial_in="SPARE-1", reference="RC-1")
    back = component_replace(slot=slot_for(kind="gpu", node=other, gpu_index=5),
                             serial_in=failed, reference="RC-2")
    assert back.returned_from == out
    life = part_history(user=operator, serial=failed)
    assert [(event.event, event.slot, event.reference, event.returning) for event in life] == [
        ("removed", "gpu001 GPU3", "RC-1", False),
        ("installed", "gpu002 GPU5", "RC-2", True),
    ]
    assert life[0].other_serial == "SPARE-1"
    assert [swap.pk for swap in swap_list(user=operator, filters={"node": "gpu001"})] == [out.pk]


def test_a_tenant_admin_sees_only_the_swaps_of_their_nodes(fleet, make_user):
    node = fleet.nodes[0]
    component_replace(slot=slot_for(kind="node", node=node), serial_in="S-NODE-1")
    assert not swap_list(user=make_user(Role.TENANT_ADMIN)).exists()
    assert Node.objects.get(pk=node.pk).serial == "S-NODE-1"

"""Each database constraint of the inventory, violated: the database itself says no.

Names are the test lab's own, so these tests run beside the imported SAKURAONE fleet.
"""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from inventory.models import (
    GPU,
    NIC,
    Allocation,
    Cable,
    CableStatus,
    Node,
    Pod,
    Switch,
    SwitchPort,
)

pytestmark = pytest.mark.django_db


def rejected(create):
    """True when the database refuses `create()` with an IntegrityError."""
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False


@pytest.fixture
def pod():
    return Pod.objects.create(name="lab")


@pytest.fixture
def node(pod):
    return Node.objects.create(hostname="lab001", pod=pod)


@pytest.fixture
def leaf(pod):
    return Switch.objects.create(hostname="lab-leaf-r0", role=Switch.Role.LEAF, pod=pod, rail=0)


@pytest.fixture
def spine():
    return Switch.objects.create(hostname="lab-spine-1", role=Switch.Role.SPINE)


def rail_nic(node, device="mlx5_0", rail=0):
    return NIC.objects.create(node=node, device=device, role=NIC.Role.RAIL, rail=rail)


def test_hostnames_are_unique(node, leaf):
    assert rejected(lambda: Node.objects.create(hostname="lab001"))
    assert rejected(lambda: Switch.objects.create(hostname="lab-leaf-r0", role="spine"))


def test_node_serials_are_unique_when_known(pod):
    Node.objects.create(hostname="lab-a", serial="LAB-S1")
    Node.objects.create(hostname="lab-b")
    Node.objects.create(hostname="lab-c")  # blank serials do not clash
    assert rejected(lambda: Node.objects.create(hostname="lab-d", serial="LAB-S1"))


def test_gpu_index_is_unique_per_node_and_0_to_7(node):
    GPU.objects.create(node=node, index=0)
    GPU.objects.create(node=node, index=7)
    other = Node.objects.create(hostname="lab002")
    GPU.objects.create(node=other, index=0)
    assert rejected(lambda: GPU.objects.create(node=node, index=0))
    assert rejected(lambda: GPU.objects.create(node=node, index=8))


def test_gpu_uuid_and_bus_id_are_unique(node):
    GPU.objects.create(node=node, index=0, uuid="GPU-LAB-1", pci_bus_id="0000:18:00.0")
    assert rejected(lambda: GPU.objects.create(node=node, index=1, uuid="GPU-LAB-1"))
    assert rejected(lambda: GPU.objects.create(node=node, index=1, pci_bus_id="0000:18:00.0"))
    GPU.objects.create(node=node, index=2)  # blank uuid and bus id do not clash


def test_rail_index_0_to_7_present_exactly_for_rail_nics(node):
    rail_nic(node, "mlx5_0", 0)
    rail_nic(node, "mlx5_11", 7)
    assert rejected(lambda: rail_nic(node, "mlx5_1", 8))
    assert rejected(lambda: NIC.objects.create(node=node, device="mlx5_2", role=NIC.Role.RAIL))
    assert rejected(
        lambda: NIC.objects.create(node=node, device="mlx5_8", role=NIC.Role.STORAGE, rail=1)
    )
    NIC.objects.create(node=node, device="mlx5_3", role=NIC.Role.RESERVED)


def test_nic_device_unique_per_node_and_one_nic_per_rail(node):
    rail_nic(node, "mlx5_0", 0)
    assert rejected(lambda: NIC.objects.create(node=node, device="mlx5_0", role="reserved"))
    assert rejected(lambda: rail_nic(node, "mlx5_1", 0))
    rail_nic(Node.objects.create(hostname="lab002"), "mlx5_0", 0)


def test_nic_mac_unique_and_affinity_kind_valid(node):
    NIC.objects.create(node=node, device="eno1", role="management", mac="02:00:00:00:00:01")
    assert rejected(
        lambda: NIC.objects.create(
            node=node, device="eno2", role="management", mac="02:00:00:00:00:01"
        )
    )
    assert rejected(
        lambda: NIC.objects.create(node=node, device="mlx5_3", role="reserved", affinity_kind="PHB")
    )


def test_port_names_unique_per_switch(leaf, spine):
    SwitchPort.objects.create(switch=leaf, name="Ethernet0")
    SwitchPort.objects.create(switch=spine, name="Ethernet0")
    assert rejected(lambda: SwitchPort.objects.create(switch=leaf, name="Ethernet0"))


def test_port_is_not_its_own_breakout_parent(leaf):
    port = SwitchPort.objects.create(switch=leaf, name="Port1")
    port.breakout_parent_id = port.pk
    assert rejected(lambda: port.save())


def test_leafs_have_a_pod_and_only_leafs_have_a_rail(pod):
    assert rejected(lambda: Switch.objects.create(hostname="lab-leaf-x", role=Switch.Role.LEAF))
    assert rejected(lambda: Switch.objects.create(hostname="lab-spine-x", role="spine", rail=0))
    assert rejected(
        lambda: Switch.objects.create(hostname="lab-leaf-y", role="leaf", pod=pod, rail=8)
    )


def test_one_leaf_per_rail_per_pod(leaf, pod):
    assert rejected(
        lambda: Switch.objects.create(hostname="lab-leaf-z", role="leaf", pod=pod, rail=0)
    )


def test_each_cable_end_is_exactly_one_nic_or_port(node, leaf):
    nic = rail_nic(node)
    port = SwitchPort.objects.create(switch=leaf, name="Ethernet0")
    other = SwitchPort.objects.create(switch=leaf, name="Ethernet4")
    assert rejected(lambda: Cable.objects.create(a_nic=nic, a_port=other, b_port=port))
    assert rejected(lambda: Cable.objects.create(b_port=port))
    assert rejected(lambda: Cable.objects.create(a_nic=nic))
    Cable.objects.create(a_nic=nic, b_port=port, type=Cable.Type.BREAKOUT_2DR4_800G)


def test_a_cable_does_not_join_an_end_to_itself(node, leaf):
    nic = rail_nic(node)
    port = SwitchPort.objects.create(switch=leaf, name="Ethernet0")
    assert rejected(lambda: Cable.objects.create(a_port=port, b_port=port))
    assert rejected(lambda: Cable.objects.create(a_nic=nic, b_nic=nic))


def test_a_nic_or_port_is_in_at_most_one_active_cable(node, leaf):
    nic = rail_nic(node)
    ports = [SwitchPort.objects.create(switch=leaf, name=f"Ethernet{i * 4}") for i in range(4)]
    first = Cable.objects.create(a_nic=nic, b_port=ports[0], status=CableStatus.CONNECTED)
    # The same NIC again, whatever the status, while the first cable is active:
    for status in (CableStatus.PLANNED, CableStatus.CONNECTED, CableStatus.FAULTY):
        assert rejected(
            lambda status=status: Cable.objects.create(a_nic=nic, b_port=ports[1], status=status)
        )
    # The same port again:
    assert rejected(lambda: Cable.objects.create(a_port=ports[2], b_port=ports[0]))
    # Once decommissioned, the ends are free; history keeps the old cable.
    first.status = CableStatus.DECOMMISSIONED
    first.save()
    Cable.objects.create(a_nic=nic, b_port=ports[1], status=CableStatus.CONNECTED)
    Cable.objects.create(a_port=ports[2], b_port=ports[0])
    assert Cable.objects.filter(a_nic=nic).count() == 2


def test_cable_length_is_positive(leaf):
    a = SwitchPort.objects.create(switch=leaf, name="Ethernet0")
    b = SwitchPort.objects.create(switch=leaf, name="Ethernet8")
    assert rejected(lambda: Cable.objects.create(a_port=a, b_port=b, length_m=0))


def test_cabled_hardware_cannot_be_deleted_under_its_cable(node, leaf):
    nic = rail_nic(node)
    port = SwitchPort.objects.create(switch=leaf, name="Ethernet0")
    Cable.objects.create(a_nic=nic, b_port=port)
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        node.delete()


def test_allocation_ends_after_it_starts(tenant_a, node):
    now = timezone.now()
    assert rejected(lambda: Allocation.objects.create(tenant=tenant_a, start=now, end=now))
    assert rejected(
        lambda: Allocation.objects.create(tenant=tenant_a, start=now, end=now - timedelta(hours=1))
    )
    open_ended = Allocation.objects.create(tenant=tenant_a, start=now)
    open_ended.nodes.add(node)
    assert list(Allocation.objects.current()) == [open_ended]
    assert list(node.allocations.all()) == [open_ended]

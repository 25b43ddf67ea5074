"""Cabling through the service: every end checked on both sides, audited."""

import pytest

from inventory.models import NIC, Cable, CableStatus, SwitchPort
from inventory.services import cable_create, cable_set_status
from inventory.validation import validate_topology
from portal.errors import InvalidInput
from portal.models import AuditEntry

pytestmark = pytest.mark.django_db


def nic(hostname: str, device: str) -> NIC:
    return NIC.objects.get(node__hostname=hostname, device=device)


def port(switch: str, name: str) -> SwitchPort:
    return SwitchPort.objects.get(switch__hostname=switch, name=name)


def test_cable_create_checks_both_sides_of_every_cable(sakuraone, make_user):
    # leaf-p1-r0 Ethernet0 is side B of gpu001's cable; as side A of a new one, the database's
    # per-column constraints would allow it. The service does not.
    with pytest.raises(InvalidInput) as caught:
        cable_create(
            a=port("leaf-p1-r0", "Ethernet0"),
            b=port("leaf-p1-r1", "Ethernet200"),
            type="800GBASE-SR8",
        )
    (message,) = caught.value.detail["a"]
    assert message.startswith("leaf-p1-r0 Ethernet0 is already in cable #")
    assert message.endswith("(connected)")


@pytest.mark.parametrize(
    ("a", "b", "side", "words"),
    [
        (("nic", "gpu001", "eno1"), ("nic", "gpu002", "eno1"), "b", "not NIC to NIC"),
        (
            ("port", "leaf-p1-r0", "Ethernet200"),
            ("port", "leaf-p1-r0", "Ethernet200"),
            "b",
            "two different ends",
        ),
        (
            ("nic", "gpu001", "eno1"),
            ("port", "leaf-p1-r0", "Port1"),
            "b",
            "a cage broken out 2x400G",
        ),
        (
            ("nic", "gpu001", "mlx5_0"),
            ("port", "leaf-p1-r0", "Ethernet200"),
            "a",
            "gpu001 mlx5_0 is already in cable",
        ),
    ],
)
def test_cable_create_refuses_bad_ends(sakuraone, a, b, side, words):
    def end(kind, owner, name):
        return nic(owner, name) if kind == "nic" else port(owner, name)

    before = Cable.objects.count()
    with pytest.raises(InvalidInput) as caught:
        cable_create(a=end(*a), b=end(*b), type="800GBASE-SR8")
    assert any(words in message for message in caught.value.detail[side])
    assert Cable.objects.count() == before


def test_cable_create_and_status_changes_are_audited(sakuraone, make_user):
    operator = make_user("operator")
    cable = cable_create(
        a=nic("gpu001", "eno1"),
        b=port("leaf-p1-r0", "Ethernet200"),
        type="1000BASE-T",
        length_m=3,
        actor=operator,
    )
    assert (cable.a_nic.device, cable.b_port.name, cable.status) == (
        "eno1",
        "Ethernet200",
        "planned",
    )
    cable_set_status(cable=cable, status=CableStatus.DECOMMISSIONED, actor=operator)
    entries = AuditEntry.objects.filter(object_type="inventory.cable", object_id=str(cable.pk))
    assert sorted(entries.values_list("operation", flat=True)) == ["create", "update"]
    # The port is free again; bringing the old cable back checks it is still free.
    replacement = cable_create(
        a=nic("gpu002", "eno1"), b=port("leaf-p1-r0", "Ethernet200"), type="1000BASE-T"
    )
    with pytest.raises(InvalidInput, match=f"already in cable #{replacement.pk}"):
        cable_set_status(cable=cable, status=CableStatus.CONNECTED)
    cable_set_status(cable=replacement, status=CableStatus.DECOMMISSIONED)
    assert cable_set_status(cable=cable, status=CableStatus.CONNECTED).status == "connected"


def test_recabling_a_rail_nic_keeps_the_fabric_sound(sakuraone):
    rail_nic = nic("gpu001", "mlx5_0")
    old = Cable.objects.get(a_nic=rail_nic, status=CableStatus.CONNECTED)
    cable_set_status(cable=old, status=CableStatus.FAULTY)
    with pytest.raises(InvalidInput):
        cable_create(a=rail_nic, b=port("leaf-p1-r0", "Ethernet0"), type="800GBASE-2DR4")
    cable_set_status(cable=old, status=CableStatus.DECOMMISSIONED)
    cable_create(
        a=rail_nic, b=port("leaf-p1-r0", "Ethernet0"), type="800GBASE-2DR4", status="connected"
    )
    assert validate_topology() == []


def test_unknown_type_or_status(sakuraone):
    ends = {"a": nic("gpu001", "eno1"), "b": port("leaf-p1-r0", "Ethernet200")}
    with pytest.raises(InvalidInput, match="'QSFP' is not one of"):
        cable_create(**ends, type="QSFP")
    with pytest.raises(InvalidInput, match="'cut' is not a cable status"):
        cable_create(**ends, type="1000BASE-T", status="cut")

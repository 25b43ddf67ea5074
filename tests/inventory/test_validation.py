"""Each validation rule, triggered by breaking the imported SAKURAONE fleet in one way."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from inventory.models import (
    GPU,
    NIC,
    Cable,
    CableStatus,
    LifecycleStatus,
    Node,
    Switch,
    SwitchPort,
)
from inventory.validation import RULES, _check_double_cabled, validate_topology

pytestmark = pytest.mark.django_db


def nic(hostname: str, device: str) -> NIC:
    return NIC.objects.get(node__hostname=hostname, device=device)


def port(switch: str, name: str) -> SwitchPort:
    return SwitchPort.objects.get(switch__hostname=switch, name=name)


def cable_of(end: NIC | SwitchPort) -> Cable:
    """The active cable a NIC or port is in, on either side."""
    field = "nic" if isinstance(end, NIC) else "port"
    return Cable.objects.exclude(status=CableStatus.DECOMMISSIONED).get(
        Q(**{f"a_{field}": end}) | Q(**{f"b_{field}": end})
    )


def swap_nic_ends(first: NIC, second: NIC) -> None:
    """Exchange which cable each NIC is in (through a spare NIC: one active cable per NIC)."""
    cable_one, cable_two = cable_of(first), cable_of(second)
    spare = nic(first.node.hostname, "mlx5_3")
    Cable.objects.filter(pk=cable_one.pk).update(a_nic=spare)
    Cable.objects.filter(pk=cable_two.pk).update(a_nic=first)
    Cable.objects.filter(pk=cable_one.pk).update(a_nic=second)


def only(rule: str) -> list:
    return [violation for violation in validate_topology() if violation.rule == rule]


def test_the_shipped_fleet_is_sound_in_five_queries(sakuraone):
    with CaptureQueriesContext(connection) as queries:
        assert validate_topology() == []
    assert len(queries) == 5


def test_rail_rule_wrong_rail(sakuraone):
    swap_nic_ends(nic("gpu001", "mlx5_0"), nic("gpu001", "mlx5_1"))
    violations = validate_topology()
    assert {v.rule for v in violations} == {"rail"}
    by_nic = {v.objects["nic"]: v for v in violations}
    assert set(by_nic) == {"mlx5_0", "mlx5_1"}
    wrong = by_nic["mlx5_0"]
    assert wrong.severity == "error"
    assert wrong.objects == {
        "node": "gpu001",
        "nic": "mlx5_0",
        "switch": "leaf-p1-r1",
        "port": "Ethernet0",
        "cable": wrong.objects["cable"],
    }
    assert wrong.message == (
        "gpu001 mlx5_0 (rail 0) lands on leaf-p1-r1 Ethernet0, the leaf of rail 1, not rail 0"
    )


def test_rail_rule_wrong_pod(sakuraone):
    swap_nic_ends(nic("gpu001", "mlx5_0"), nic("gpu051", "mlx5_0"))
    first, second = sorted(only("rail"), key=lambda v: v.objects["node"])
    assert first.objects["node"] == "gpu001"
    assert (
        "lands on leaf-p2-r0 Ethernet0, a leaf of pod p2, but gpu001 is in pod p1" in first.message
    )
    assert second.objects["node"] == "gpu051"


def test_rail_and_storage_plane_rules(sakuraone):
    swap_nic_ends(nic("gpu001", "mlx5_0"), nic("gpu001", "mlx5_8"))
    violations = validate_topology()
    assert {(v.rule, v.objects["nic"], v.objects["switch"]) for v in violations} == {
        ("rail", "mlx5_0", "storage-1"),
        ("storage_plane", "mlx5_8", "leaf-p1-r0"),
    }
    rail = next(v for v in violations if v.rule == "rail")
    assert "a storage switch, not a leaf" in rail.message


def test_bisection_rule(sakuraone):
    uplinks = Cable.objects.filter(
        a_port__switch__hostname="leaf-p1-r0", b_port__switch__role="spine"
    )
    assert uplinks.count() == 32
    # Lose one of the four links to each spine, and one more: 23 x 800G < 50 x 400G.
    doomed = [
        uplinks.filter(b_port__switch__hostname=f"spine-{n}").order_by("id").first().pk
        for n in range(1, 9)
    ]
    doomed.append(uplinks.exclude(pk__in=doomed).order_by("id").first().pk)
    Cable.objects.filter(pk__in=doomed).update(status=CableStatus.DECOMMISSIONED)
    violations = validate_topology()
    (bisection,) = [v for v in violations if v.rule == "bisection"]
    assert bisection.objects == {"switch": "leaf-p1-r0"}
    assert bisection.message == (
        "leaf-p1-r0 has 18,400 Gb/s up to the spines for 20,000 Gb/s down to nodes "
        "(1,600 Gb/s short of full bisection)"
    )
    # Losing one uplink of the eight spines' four unbalances ECMP: warned, not an error.
    (uneven,) = [v for v in violations if v.rule == "leaf_spine_mesh"]
    assert uneven.severity == "warning"
    assert uneven.message.startswith("leaf-p1-r0 has 3 links to most spines but 2 to spine-1")


def test_dangling_rule(sakuraone):
    for end in (nic("gpu001", "mlx5_0"), nic("gpu002", "mlx5_bond_0")):
        Cable.objects.filter(pk=cable_of(end).pk).update(status=CableStatus.DECOMMISSIONED)
    violations = validate_topology()
    assert [(v.rule, v.severity, v.message, v.objects) for v in violations] == [
        (
            "dangling",
            "error",
            "gpu001 mlx5_0 (rail 0) is not cabled",
            {"node": "gpu001", "nic": "mlx5_0"},
        ),
        (
            "dangling",
            "error",
            "gpu002 mlx5_bond_0 (storage_bond) is not cabled",
            {"node": "gpu002", "nic": "mlx5_bond_0"},
        ),
    ]
    # Management and reserved NICs need no cable; neither do decommissioned nodes' NICs.
    assert not any(v.objects.get("nic") in {"eno1", "mlx5_3"} for v in violations)
    Node.objects.filter(hostname="gpu001").update(status=LifecycleStatus.DECOMMISSIONED)
    violations = only("dangling")
    assert not any(v.severity == "error" and v.objects["node"] == "gpu001" for v in violations)
    still_cabled = [v for v in violations if v.severity == "warning"]
    assert len(still_cabled) == 9  # its other seven rails and two storage NICs
    assert all("gpu001 is decommissioned" in v.message for v in still_cabled)


def test_double_cabled_end_across_columns(sakuraone):
    # The database keeps a port to one active cable per column; side A of one cable and side B
    # of another is the validator's to catch, e.g. a planned cable over a connected one.
    host_port = port("leaf-p1-r0", "Ethernet0")
    connected = cable_of(host_port)
    planned = Cable.objects.create(
        a_port=host_port,
        b_port=port("leaf-p1-r1", "Ethernet200"),
        type=Cable.Type.SR8_800G,
        status=CableStatus.PLANNED,
    )
    (double,) = only("double_cabled")
    assert double.message == (
        f"leaf-p1-r0 Ethernet0 is in 2 active cables: #{connected.pk} (connected), "
        f"#{planned.pk} (planned)"
    )
    assert double.objects == {
        "switch": "leaf-p1-r0",
        "port": "Ethernet0",
        "cables": f"{connected.pk},{planned.pk}",
    }


def test_double_cabled_detects_duplicates_the_database_never_sees():
    """The rule itself, on a fleet snapshot no constraint guarded (e.g. read from a dump)."""
    cables = [SimpleNamespace(id=1, status="planned"), SimpleNamespace(id=2, status="connected")]
    fleet = SimpleNamespace(
        cables_at={("nic", 1): cables},
        cables=[],
        describe=lambda end: ("gpu001 mlx5_0", {"node": "gpu001", "nic": "mlx5_0"}),
    )
    (violation,) = _check_double_cabled(fleet)
    assert violation.message == "gpu001 mlx5_0 is in 2 active cables: #1 (planned), #2 (connected)"
    assert violation.objects == {"node": "gpu001", "nic": "mlx5_0", "cables": "1,2"}


def test_double_cabled_odd_cables(sakuraone):
    nic_to_nic = Cable.objects.create(
        a_nic=nic("gpu001", "eno1"), b_nic=nic("gpu002", "eno1"), type=Cable.Type.BASE_T_1G
    )
    loop = Cable.objects.create(
        a_port=port("leaf-p1-r0", "Ethernet200"),
        b_port=port("leaf-p1-r0", "Ethernet208"),
        type=Cable.Type.SR8_800G,
    )
    on_cage = Cable.objects.create(
        a_port=port("leaf-p1-r1", "Port1"),
        b_port=port("leaf-p1-r2", "Ethernet216"),
        type=Cable.Type.SR8_800G,
    )
    messages = {v.objects["cable"]: v.message for v in only("double_cabled")}
    assert messages == {
        str(nic_to_nic.pk): f"cable #{nic_to_nic.pk} gpu001 eno1 <-> gpu002 eno1 joins two NICs; "
        "a cable runs from a NIC to a switch port",
        str(loop.pk): f"cable #{loop.pk} leaf-p1-r0 Ethernet200 <-> leaf-p1-r0 Ethernet208 loops a "
        "switch back to itself",
        str(
            on_cage.pk
        ): f"cable #{on_cage.pk} leaf-p1-r1 Port1 <-> leaf-p1-r2 Ethernet216 lands on "
        "Port1, a cage broken out 2x400G; cable its halves",
    }


def test_speed_mismatch_rule(sakuraone):
    slow = nic("gpu001", "mlx5_0")
    slow.speed_gbps = 200
    slow.save()
    (mismatch,) = only("speed_mismatch")
    cable = cable_of(slow)
    assert mismatch.message == (
        f"cable #{cable.pk} joins gpu001 mlx5_0 at 200G to leaf-p1-r0 Ethernet0 at 400G"
    )
    assert mismatch.objects == {
        "cable": str(cable.pk),
        "node": "gpu001",
        "nic": "mlx5_0",
        "switch": "leaf-p1-r0",
        "port": "Ethernet0",
    }


def test_a_breakout_half_counts_at_its_share_of_the_cage(sakuraone):
    # A half recorded at the cage's 800G (as some inventories do) still carries 400G: no mismatch.
    SwitchPort.objects.filter(switch__hostname="leaf-p1-r0", name="Ethernet0").update(
        speed_gbps=800
    )
    assert validate_topology() == []
    # A whole 800G port to a 400G NIC is a mismatch.
    cable = cable_of(nic("gpu001", "mlx5_0"))
    Cable.objects.filter(pk=cable.pk).update(b_port=port("leaf-p1-r0", "Ethernet200"))
    assert [v.message for v in only("speed_mismatch")] == [
        f"cable #{cable.pk} joins gpu001 mlx5_0 at 400G to leaf-p1-r0 Ethernet200 at 800G"
    ]


def test_leaf_spine_mesh_rule(sakuraone):
    Cable.objects.filter(
        a_port__switch__hostname="leaf-p2-r6", b_port__switch__hostname="spine-3"
    ).update(status=CableStatus.DECOMMISSIONED)
    errors = [v for v in only("leaf_spine_mesh") if v.severity == "error"]
    assert [(v.message, v.objects) for v in errors] == [
        ("leaf-p2-r6 has no link to spine-3", {"switch": "leaf-p2-r6", "spine": "spine-3"})
    ]


def test_gpu_affinity_rule(sakuraone):
    stray = nic("gpu001", "mlx5_0")
    stray.affinity_gpu = GPU.objects.get(node__hostname="gpu002", index=0)
    stray.save()
    assert [(v.rule, v.objects) for v in validate_topology()] == [
        ("gpu_affinity", {"node": "gpu001", "nic": "mlx5_0"})
    ]


def test_rules_filter_and_known_rules(sakuraone):
    swap_nic_ends(nic("gpu001", "mlx5_0"), nic("gpu001", "mlx5_8"))
    assert {v.rule for v in validate_topology(rules={"storage_plane"})} == {"storage_plane"}
    assert set(RULES) == {
        "rail",
        "storage_plane",
        "bisection",
        "dangling",
        "double_cabled",
        "speed_mismatch",
        "leaf_spine_mesh",
        "gpu_affinity",
    }


def test_command_passes_on_a_sound_fleet(sakuraone):
    out = io.StringIO()
    call_command("validate_topology", stdout=out)
    assert "No violations" in out.getvalue()


def test_command_fails_listing_violations(sakuraone):
    Switch.objects.filter(hostname="spine-8").update(status=LifecycleStatus.DECOMMISSIONED)
    Cable.objects.filter(pk=cable_of(nic("gpu003", "mlx5_2")).pk).update(
        status=CableStatus.DECOMMISSIONED
    )
    out = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("validate_topology", "--json", stdout=out)
    assert caught.value.returncode == 1
    report = json.loads(out.getvalue())
    assert report["count"] == len(report["violations"]) == 1 + 64
    assert report["violations"][0] == {
        "rule": "dangling",
        "severity": "error",
        "message": "gpu003 mlx5_2 (rail 2) is not cabled",
        "objects": {"node": "gpu003", "nic": "mlx5_2"},
    }
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("validate_topology", "--rule", "dangling", stdout=out)
    assert "65 violation(s): 1 error(s), 64 warning(s)" in out.getvalue()

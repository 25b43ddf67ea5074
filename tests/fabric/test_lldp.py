"""LLDP reconciliation against the cable inventory: crossed, missing, unexpected and mismatched
links, the finding listeners, and resolution when the fault is gone."""

from __future__ import annotations

import pytest

from fabric.emulator import NeighborSpec
from fabric.hooks import register_fabric_finding_listener, unregister_fabric_finding_listener
from fabric.lldp import collect_and_reconcile
from fabric.models import LldpFinding, LldpObservation
from inventory.models import Cable, CableStatus, SwitchPort

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: fleets and the emulated fabric
pytestmark = pytest.mark.django_db


@pytest.fixture
def heard():
    findings = []
    register_fabric_finding_listener(findings.append)
    yield findings
    unregister_fabric_finding_listener(findings.append)


def open_findings(kind: str | None = None) -> list[LldpFinding]:
    rows = LldpFinding.objects.filter(resolved_at=None)
    return list(rows.filter(kind=kind) if kind else rows)


def test_a_faithfully_cabled_fabric_has_no_findings(small_fleet, emulated, heard):
    run = collect_and_reconcile()
    assert run.failed == {} and len(run.checked) == 26
    assert run.findings == [] and heard == []
    assert LldpObservation.objects.filter(port__switch__hostname="leaf-p1-r0").count() > 4


def test_two_rails_crossed_on_one_node_is_one_swapped_finding(small_fleet, emulated, heard):
    # gpu002's rail-2 and rail-3 NICs land on Ethernet4 of leaf-p1-r2 and leaf-p1-r3.
    emulated.cross_cables(("leaf-p1-r2", "Ethernet4"), ("leaf-p1-r3", "Ethernet4"))
    collect_and_reconcile()
    swapped = open_findings("swapped")
    assert len(swapped) == 1 and open_findings("mismatched") == []
    finding = swapped[0]
    assert finding.ports == ["leaf-p1-r2:Ethernet4", "leaf-p1-r3:Ethernet4"]
    assert finding.switches == ["leaf-p1-r2", "leaf-p1-r3"] and finding.nodes == ["gpu002"]
    assert "gpu002 mlx5_2 (rail 2)" in finding.summary
    assert "gpu002 mlx5_4 (rail 3)" in finding.summary
    assert [(f.kind, f.ports) for f in heard] == [
        ("swapped", ("leaf-p1-r2:Ethernet4", "leaf-p1-r3:Ethernet4"))
    ]
    # Seen again: still one open finding, the listeners are not told twice.
    collect_and_reconcile()
    assert len(open_findings("swapped")) == 1 and len(heard) == 1
    # Uncrossed: the finding resolves.
    emulated.cross_cables(("leaf-p1-r2", "Ethernet4"), ("leaf-p1-r3", "Ethernet4"))
    run = collect_and_reconcile()
    assert run.resolved == 1 and open_findings() == []


def test_a_cut_cable_is_missing_but_a_shut_port_is_not(small_fleet, emulated, heard):
    emulated.switches["leaf-p2-r5"].set_link_up("Ethernet8", False)
    SwitchPort.objects.filter(switch__hostname="leaf-p1-r1", name="Ethernet0").update(
        admin_status="down"
    )
    emulated.switches["leaf-p1-r1"].set_link_up("Ethernet0", False)
    collect_and_reconcile()
    missing = open_findings("missing")
    assert [f.ports for f in missing] == [["leaf-p2-r5:Ethernet8"]]
    assert missing[0].nodes == ["gpu053"] and "gpu053 mlx5_6 (rail 5)" in missing[0].summary
    assert [f.kind for f in heard] == ["missing"]


def test_a_neighbor_without_a_cable_is_unexpected(small_fleet, emulated, heard):
    Cable.objects.filter(
        b_port__switch__hostname="leaf-p1-r0", b_port__name="Ethernet12"
    ).update(status=CableStatus.DECOMMISSIONED)
    Cable.objects.filter(
        a_port__switch__hostname="leaf-p1-r0", a_port__name="Ethernet12"
    ).update(status=CableStatus.DECOMMISSIONED)
    collect_and_reconcile()
    unexpected = open_findings("unexpected")
    assert [f.ports for f in unexpected] == [["leaf-p1-r0:Ethernet12"]]
    assert "gpu004" in unexpected[0].summary
    assert heard == []  # only swaps, mismatches and missing links open tickets


def test_an_unknown_device_is_mismatched(small_fleet, emulated, heard):
    emulated.switches["leaf-p1-r6"].set_neighbor(
        "Ethernet0", NeighborSpec("Ethernet0", "lab-laptop", "aa:bb:cc:dd:ee:ff")
    )
    collect_and_reconcile()
    mismatched = open_findings("mismatched")
    assert [f.ports for f in mismatched] == [["leaf-p1-r6:Ethernet0"]]
    assert "lab-laptop" in mismatched[0].summary and "gpu001 mlx5_7" in mismatched[0].summary
    assert [f.kind for f in heard] == ["mismatched"]


def test_an_unreachable_switch_neither_opens_nor_resolves(small_fleet, emulated, heard):
    emulated.switches["leaf-p2-r5"].set_link_up("Ethernet8", False)
    collect_and_reconcile()
    assert len(open_findings("missing")) == 1
    emulated.switches["leaf-p2-r5"].set_link_up("Ethernet8", True)
    emulated.set_unreachable("leaf-p2-r5")
    run = collect_and_reconcile()
    assert "leaf-p2-r5" in run.failed and run.resolved == 0
    assert len(open_findings("missing")) == 1


def test_a_failing_listener_does_not_break_reconciliation(small_fleet, emulated, heard):
    def broken(finding):
        raise RuntimeError("faults app is down")

    register_fabric_finding_listener(broken)
    try:
        emulated.cross_cables(("leaf-p1-r2", "Ethernet4"), ("leaf-p1-r3", "Ethernet4"))
        collect_and_reconcile()
    finally:
        unregister_fabric_finding_listener(broken)
    assert len(open_findings("swapped")) == 1 and len(heard) == 1

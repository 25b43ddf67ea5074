"""Importing the SAKURAONE spec: exact counts, idempotence, atomicity, scale, the command."""

from __future__ import annotations

import io
from collections import Counter

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
    Pod,
    Rack,
    Switch,
    SwitchPort,
    TopologyImportRun,
)
from inventory.topology.importer import build_plan, import_topology
from inventory.validation import validate_topology
from portal.errors import InvalidInput
from portal.models import AuditEntry
from tests.inventory.conftest import SAKURAONE_SPEC_PATH

pytestmark = pytest.mark.django_db

EXPECTED = {
    "pods": 2,
    "racks": 26,
    "nodes": 100,
    "gpus": 800,
    "nics": 1200,
    "switches": 26,
    "ports": 2664,
    "cables": 1512,
}


def table_counts() -> dict[str, int]:
    return {
        "pods": Pod.objects.count(),
        "racks": Rack.objects.count(),
        "nodes": Node.objects.count(),
        "gpus": GPU.objects.count(),
        "nics": NIC.objects.count(),
        "switches": Switch.objects.count(),
        "ports": SwitchPort.objects.count(),
        "cables": Cable.objects.count(),
        "runs": TopologyImportRun.objects.count(),
    }


def end_filter(side: str, end: tuple[str, str]) -> Q:
    """Cables whose `side` end is `end`: (hostname, NIC device) or (switch, port name)."""
    owner, name = end
    return Q(**{f"{side}_nic__node__hostname": owner, f"{side}_nic__device": name}) | Q(
        **{f"{side}_port__switch__hostname": owner, f"{side}_port__name": name}
    )


def cable_between(end_a: tuple[str, str], end_b: tuple[str, str]) -> Cable:
    """The one cable joining two ends, either way round."""
    return Cable.objects.get(
        (end_filter("a", end_a) & end_filter("b", end_b))
        | (end_filter("a", end_b) & end_filter("b", end_a))
    )


def test_sakuraone_imports_the_papers_cluster(sakuraone):
    assert {label: c.created for label, c in sakuraone.counts.items()} == EXPECTED
    assert all(c.updated == 0 and c.unchanged == 0 for c in sakuraone.counts.values())
    counts = table_counts()
    assert {label: counts[label] for label in EXPECTED} == EXPECTED

    assert Counter(Node.objects.values_list("pod__name", flat=True)) == {"p1": 50, "p2": 50}
    assert Counter(NIC.objects.values_list("role", flat=True)) == {
        "rail": 800,
        "reserved": 100,
        "storage": 100,
        "storage_bond": 100,
        "management": 100,
    }
    assert set(Counter(NIC.objects.values_list("node_id", flat=True)).values()) == {12}
    assert set(Counter(GPU.objects.values_list("node_id", flat=True)).values()) == {8}
    assert Counter(Switch.objects.values_list("role", flat=True)) == {
        "leaf": 16,
        "spine": 8,
        "storage": 2,
    }
    assert Counter(Cable.objects.values_list("type", flat=True)) == {
        "800GBASE-2DR4": 1000,  # 800 rail + 200 storage, 400G breakout halves
        "800GBASE-SR8": 512,  # 16 leafs x 8 spines x 4
    }
    assert set(Cable.objects.values_list("status", flat=True)) == {CableStatus.CONNECTED}
    assert validate_topology() == []


def test_node_hardware_follows_tables_1_and_2(sakuraone):
    node = Node.objects.select_related("pod", "rack").get(hostname="gpu001")
    assert (node.model, node.cpu_model, node.cpu_count, node.memory_gb) == (
        "Supermicro SYS-821GE-TNHR",
        "Intel Xeon Platinum 8580+",
        2,
        1536,
    )
    assert node.disks == [
        {"role": "system", "count": 2, "size_gb": 372, "interface": "SAS", "raid": "mirror"},
        {"role": "scratch", "count": 4, "size_gb": 7680, "interface": "NVMe"},
    ]
    assert (node.pod.name, node.rack.name, node.status) == ("p1", "p1-rack01", "active")
    assert Node.objects.get(hostname="gpu100").rack.name == "p2-rack13"
    gpus = list(node.gpus.order_by("index"))
    assert [g.index for g in gpus] == list(range(8))
    assert gpus[0].model == "NVIDIA H100 SXM 80GB"
    assert gpus[0].pci_bus_id == "0000:18:00.0"
    assert gpus[0].uuid.startswith("GPU-")
    nics = {nic.device: nic for nic in node.nics.select_related("affinity_gpu")}
    rails = {
        nic.device: (nic.rail, nic.affinity_gpu.index, nic.affinity_kind)
        for nic in nics.values()
        if nic.role == "rail"
    }
    assert rails == {
        "mlx5_0": (0, 0, "PIX"),
        "mlx5_1": (1, 1, "PIX"),
        "mlx5_2": (2, 2, "PIX"),
        "mlx5_4": (3, 3, "PIX"),
        "mlx5_5": (4, 4, "PIX"),
        "mlx5_6": (5, 5, "PIX"),
        "mlx5_7": (6, 6, "PIX"),
        "mlx5_11": (7, 7, "PIX"),
    }
    assert (
        nics["mlx5_3"].role,
        nics["mlx5_3"].affinity_gpu.index,
        nics["mlx5_3"].affinity_kind,
    ) == (
        "reserved",
        3,
        "NODE",
    )
    assert (nics["mlx5_8"].role, nics["mlx5_8"].affinity_gpu.index) == ("storage", 7)
    assert nics["mlx5_bond_0"].role == "storage_bond"
    assert nics["mlx5_bond_0"].bond_members == ["mlx5_9", "mlx5_10"]
    assert (nics["eno1"].role, nics["eno1"].speed_gbps) == ("management", 1)


def test_switches_and_the_port_plan(sakuraone):
    leaf = Switch.objects.select_related("pod").get(hostname="leaf-p2-r5")
    assert (leaf.role, leaf.pod.name, leaf.rail) == ("leaf", "p2", 5)
    assert (leaf.model, leaf.asic, leaf.nos, leaf.nos_version) == (
        "Edgecore AIS800-64O",
        "Broadcom Tomahawk 5",
        "SONiC",
        "202311",
    )
    assert leaf.credentials_ref == "sonic/leaf"
    assert Switch.objects.get(hostname="leaf-p1-r0").management_address == "10.254.1.1"
    ports = {port.name: port for port in leaf.ports.select_related("breakout_parent")}
    assert len(ports) == 25 + 50 + 39
    assert (ports["Port1"].breakout_mode, ports["Port1"].speed_gbps) == ("2x400G", 800)
    assert (ports["Ethernet0"].speed_gbps, ports["Ethernet0"].breakout_parent.name) == (
        400,
        "Port1",
    )
    assert ports["Ethernet4"].alias == "Eth1/2(Port1)"
    assert ports["Ethernet196"].breakout_parent.name == "Port25"
    assert (ports["Ethernet200"].speed_gbps, ports["Ethernet200"].breakout_parent) == (800, None)
    assert ports["Ethernet504"].alias == "Eth64(Port64)"
    assert Switch.objects.get(hostname="spine-1").ports.count() == 64


def test_wiring_follows_the_rail_and_spine_rules(sakuraone):
    # Node k of a pod on Ethernet{8*(k//2) + 4*(k%2)} of its rail leaf.
    cable_between(("gpu001", "mlx5_0"), ("leaf-p1-r0", "Ethernet0"))
    cable_between(("gpu002", "mlx5_0"), ("leaf-p1-r0", "Ethernet4"))
    cable_between(("gpu050", "mlx5_11"), ("leaf-p1-r7", "Ethernet196"))
    cable_between(("gpu051", "mlx5_4"), ("leaf-p2-r3", "Ethernet0"))
    cable_between(("gpu001", "mlx5_8"), ("storage-1", "Ethernet0"))
    cable_between(("gpu100", "mlx5_bond_0"), ("storage-2", "Ethernet396"))
    # Leaf cages 32+4s..35+4s to spine s; spine cages 4l..4l+3 to leaf l.
    uplink = cable_between(("leaf-p1-r0", "Ethernet256"), ("spine-1", "Ethernet0"))
    assert (uplink.type, uplink.length_m) == ("800GBASE-SR8", 30)
    cable_between(("leaf-p2-r7", "Ethernet504"), ("spine-8", "Ethernet504"))
    assert not Cable.objects.filter(a_nic__role__in=["management", "reserved"]).exists()


def test_reimport_creates_and_updates_nothing(sakuraone, sakuraone_spec):
    before = table_counts()
    report = import_topology(sakuraone_spec)
    assert not report.changed
    assert {label: c.unchanged for label, c in report.counts.items()} == EXPECTED
    assert table_counts() == {**before, "runs": before["runs"] + 1}


def test_reimport_keeps_operational_state(sakuraone, sakuraone_spec):
    Node.objects.filter(hostname="gpu001").update(
        status=LifecycleStatus.MAINTENANCE, slurm_state="drain", slurm_reason="XID 79"
    )
    cable = cable_between(("gpu002", "mlx5_0"), ("leaf-p1-r0", "Ethernet4"))
    Cable.objects.filter(pk=cable.pk).update(status=CableStatus.FAULTY, a_transceiver_serial="T1")
    Switch.objects.filter(hostname="spine-1").update(status=LifecycleStatus.MAINTENANCE)
    report = import_topology(sakuraone_spec)
    assert not report.changed
    node = Node.objects.get(hostname="gpu001")
    assert (node.status, node.slurm_state, node.slurm_reason) == ("maintenance", "drain", "XID 79")
    cable.refresh_from_db()
    assert (cable.status, cable.a_transceiver_serial) == ("faulty", "T1")


def test_reimport_restores_hardware_facts_the_spec_owns(sakuraone, sakuraone_spec):
    Node.objects.filter(hostname="gpu007").update(memory_gb=1024)
    SwitchPort.objects.filter(switch__hostname="spine-2", name="Ethernet8").update(speed_gbps=400)
    NIC.objects.filter(node__hostname="gpu003", device="mlx5_5").update(affinity_gpu=None)
    report = import_topology(sakuraone_spec)
    changed = {label: c.updated for label, c in report.counts.items() if c.updated}
    assert changed == {"nodes": 1, "ports": 1, "nics": 1}
    assert sum(c.created for c in report.counts.values()) == 0
    assert Node.objects.get(hostname="gpu007").memory_gb == 1536
    assert validate_topology() == []


def test_three_errors_all_reported_with_locations_and_nothing_written(sakuraone, sakuraone_spec):
    spec = sakuraone_spec
    spec["pods"][1]["nodes"][0]["range"] = "gpu[051-100"
    spec["node_templates"]["sys-821ge-tnhr"]["nics"][3]["rail"] = 9
    spec["switch_groups"][1]["template"] = "ais9000"
    spec["pods"][0]["name"] = "p-new"  # would rename a pod, if anything were written
    before = table_counts()
    with pytest.raises(InvalidInput) as caught:
        import_topology(spec)
    errors = caught.value.detail
    assert len(errors) == 3
    assert errors[0].startswith("node_templates.sys-821ge-tnhr.nics[3].rail: 9 is out of range")
    assert any(e.startswith("pods[1].nodes[0].range: ") and "never closed" in e for e in errors)
    assert any(
        e.startswith("switch_groups[1].template: unknown switch template 'ais9000'") for e in errors
    )
    assert {error["location"] for error in caught.value.extra["errors"]} == {
        "pods[1].nodes[0].range",
        "node_templates.sys-821ge-tnhr.nics[3].rail",
        "switch_groups[1].template",
    }
    assert table_counts() == before
    assert not Pod.objects.filter(name="p-new").exists()


def test_a_spec_that_clashes_with_the_database_changes_nothing(sakuraone, sakuraone_spec):
    # Someone recabled gpu001's rail-0 NIC to a spare port; the spec still says Ethernet0.
    cable = cable_between(("gpu001", "mlx5_0"), ("leaf-p1-r0", "Ethernet0"))
    spare = SwitchPort.objects.get(switch__hostname="leaf-p1-r0", name="Ethernet200")
    Cable.objects.filter(pk=cable.pk).update(b_port=spare)
    # A fact the import would restore before it reaches the cables: it must stay as it is.
    Node.objects.filter(hostname="gpu009").update(memory_gb=1024)
    before = table_counts()
    with pytest.raises(InvalidInput) as caught:
        import_topology(sakuraone_spec)
    (error,) = caught.value.detail
    assert error.startswith("wiring.node_links[0]: gpu001 mlx5_0 -> leaf-p1-r0 Ethernet0:")
    assert f"gpu001 mlx5_0 is already in cable #{cable.pk}" in error
    assert table_counts() == before
    assert Node.objects.get(hostname="gpu009").memory_gb == 1024  # the update was rolled back


def test_dry_run_reports_without_writing(sakuraone, sakuraone_spec):
    before = table_counts()
    report = import_topology(sakuraone_spec, scale=2, dry_run=True)
    assert report.dry_run
    assert report.counts["nodes"].created == 100
    assert report.counts["nodes"].unchanged == 100
    assert table_counts() == before


def test_scale_2_doubles_pods_and_keeps_the_fabric_sound(sakuraone, sakuraone_spec):
    report = import_topology(sakuraone_spec, scale=2)
    assert report.counts["nodes"].created == 100
    assert Node.objects.count() == 200
    assert GPU.objects.count() == 1600
    assert NIC.objects.count() == 2400
    assert sorted(Pod.objects.values_list("name", flat=True)) == ["p1", "p2", "p3", "p4"]
    assert Node.objects.filter(pod__name="p3").order_by("hostname").first().hostname == "gpu101"
    assert Node.objects.filter(pod__name="p4").order_by("hostname").last().hostname == "gpu200"
    assert Counter(Switch.objects.values_list("role", flat=True)) == {
        "leaf": 32,
        "spine": 8,
        "storage": 2,
    }
    assert SwitchPort.objects.filter(switch__hostname="spine-1").count() == 128
    cable_between(("gpu101", "mlx5_0"), ("leaf-p3-r0", "Ethernet0"))
    cable_between(("leaf-p4-r7", "Ethernet504"), ("spine-8", "Ethernet1016"))
    assert Cable.objects.count() == 2 * 1000 + 32 * 8 * 4
    with CaptureQueriesContext(connection) as queries:
        assert validate_topology() == []
    assert len(queries) == 5  # as many as for one pod: validation reads the fleet in bulk


def test_each_run_leaves_one_audit_entry(sakuraone, sakuraone_spec, make_user):
    operator = make_user("operator")
    before = AuditEntry.objects.count()
    report = import_topology(sakuraone_spec, actor=operator, via="api")
    entries = list(AuditEntry.objects.all()[: AuditEntry.objects.count() - before])
    assert len(entries) == 1
    (entry,) = entries
    assert (entry.object_type, entry.object_id) == (
        "inventory.topologyimportrun",
        str(report.run_id),
    )
    assert (entry.actor, entry.operation, entry.via) == (operator, "create", "api")
    assert entry.after["counts"]["nodes"] == {"created": 0, "updated": 0, "unchanged": 100}
    assert "sakuraone" in entry.note


def test_progress_reaches_every_total(sakuraone, sakuraone_spec):
    calls = []
    import_topology(
        sakuraone_spec, progress=lambda step, done, total: calls.append((step, done, total))
    )
    last = {step: (done, total) for step, done, total in calls}
    assert list(last) == list(EXPECTED)
    assert all(done == total == EXPECTED[step] for step, (done, total) in last.items())


def test_plan_counts_grow_linearly_with_scale(sakuraone_spec):
    plan = build_plan(sakuraone_spec, scale=5)
    leafs, nodes = 16 * 5, 100 * 5
    spine_ports, storage_cages = 64 * 5, 64 * 5
    storage_ports = 2 * (storage_cages + nodes)  # a row per cage, plus a half per node
    assert plan.counts() == {
        "pods": 10,
        "racks": 130,
        "nodes": nodes,
        "gpus": 8 * nodes,
        "nics": 12 * nodes,
        "switches": leafs + 8 + 2,
        "ports": 114 * leafs + 8 * spine_ports + storage_ports,
        "cables": 10 * nodes + leafs * 8 * 4,
    }
    assert (plan.nodes[-1].hostname, plan.nodes[-1].pod) == ("gpu500", "p10")
    assert plan.switches[leafs - 1].hostname == "leaf-p10-r7"


# -- the command ---------------------------------------------------------------------------


def test_command_prints_the_report(sakuraone):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_topology", str(SAKURAONE_SPEC_PATH), "--dry-run", stdout=out, stderr=err)
    assert "Would import sakuraone x1" in out.getvalue()
    assert "0 created, 0 updated, 6330 unchanged" in out.getvalue()
    assert "cables       1512/1512    100%" in err.getvalue()


def test_command_lists_every_error_and_fails(sakuraone, tmp_path):
    text = SAKURAONE_SPEC_PATH.read_text()
    text = text.replace('range: "gpu[001-050]"', 'range: "gpu[050-001]"')
    text = text.replace(
        'count: 8\n    hostname: "spine-{n}"', 'count: 0\n    hostname: "spine-{n}"'
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_topology", str(bad), stdout=io.StringIO(), stderr=err)
    assert "2 error(s)" in str(caught.value)
    assert "pods[0].nodes[0].range: " in err.getvalue()
    assert "switch_groups[1].count: 0 is out of range" in err.getvalue()


def test_command_reports_yaml_syntax_errors_with_the_line(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("version: 1\nname: x\npods: [\n")
    with pytest.raises(CommandError, match=r"broken.yaml: yaml line \d+"):
        call_command("import_topology", str(bad))
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_topology", str(tmp_path / "missing.yaml"))

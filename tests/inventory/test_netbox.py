"""NetBox interop against a replay of recorded NetBox 4.x responses (tests/inventory/
netbox_replay.py): pynetbox and requests run unmodified over real HTTP.

The fleet: two GPU nodes, two rail leafs of pod p1, a spine and two storage switches, with ten
cables (rails 0 and 1, leaf-spine uplinks, both storage planes; the storage bond's cable on its
LAG member mlx5_9).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.core.management import CommandError, call_command

from inventory.models import (
    NIC,
    Cable,
    CableStatus,
    LifecycleStatus,
    Node,
    Pod,
    Rack,
    Switch,
    SwitchPort,
)
from inventory.netbox import mapping
from inventory.netbox.client import PAGE_SIZE, NetboxError
from inventory.netbox.exporter import netbox_export
from inventory.netbox.importer import NetboxImportError, netbox_import
from portal.models import AuditEntry
from tests.inventory.conftest import delete_inventory
from tests.inventory.netbox_replay import FIXTURES, TOKEN, NetboxReplay

pytestmark = pytest.mark.django_db

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture
def empty_inventory(db):
    """Other inventory tests keep the SAKURAONE fleet committed for the package; these tests
    need an empty inventory (removed inside this test's transaction, so it comes back)."""
    delete_inventory()


@pytest.fixture
def replay():
    """The small fabric, paginated in pages of 10 so every list takes several requests."""
    server = NetboxReplay("small_fabric", max_page_size=10).start()
    yield server
    server.stop()


@pytest.fixture
def broken_replay():
    server = NetboxReplay("small_fabric", "broken_additions", max_page_size=10).start()
    yield server
    server.stop()


def run_command(name: str, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=err)
    except CommandError as exc:
        raise CommandError(f"{exc}\n{err.getvalue()}") from exc
    return out.getvalue(), err.getvalue()


def inventory_counts() -> dict[str, int]:
    return {
        "pods": Pod.objects.count(),
        "racks": Rack.objects.count(),
        "nodes": Node.objects.count(),
        "nics": NIC.objects.count(),
        "switches": Switch.objects.count(),
        "ports": SwitchPort.objects.count(),
        "cables": Cable.objects.count(),
    }


SMALL_FABRIC = {
    "pods": 1,
    "racks": 2,
    "nodes": 2,
    "nics": 24,
    "switches": 5,
    "ports": 12,
    "cables": 10,
}


def netbox_device_id(replay: NetboxReplay, name: str) -> int:
    return replay.find("dcim/devices", name=name)["id"]


def netbox_interface(replay: NetboxReplay, device: str, name: str) -> dict:
    return replay.find("dcim/interfaces", device_id=netbox_device_id(replay, device), name=name)


def netbox_cable_at(replay: NetboxReplay, device: str, interface: str) -> dict:
    """The recorded cable with an end on that interface (ids are NetBox's, not ours to fix)."""
    for cable in replay.objects["dcim/cables"]:
        for end in cable["a_terminations"] + cable["b_terminations"]:
            if (end["object"]["device"]["name"], end["object"]["name"]) == (device, interface):
                return cable
    raise KeyError((device, interface))


def cable_at(hostname: str, device: str) -> Cable:
    nic = NIC.objects.get(node__hostname=hostname, device=device)
    return Cable.objects.get(a_nic=nic)


# --- import ---


def test_import_creates_nodes_nics_switches_ports_and_cables(empty_inventory, replay):
    result = netbox_import(url=replay.url, token=TOKEN)

    assert result.netbox_version == replay.status["netbox-version"]
    assert inventory_counts() == SMALL_FABRIC
    gpu001 = Node.objects.select_related("pod", "rack").get(hostname="gpu001")
    assert (gpu001.serial, gpu001.model, gpu001.pod.name, gpu001.rack.name, gpu001.status) == (
        "S821GE00001",
        "Supermicro SYS-821GE-TNHR",
        "p1",
        "p1-rack01",
        LifecycleStatus.ACTIVE,
    )
    nics = {nic.device: nic for nic in gpu001.nics.all()}
    assert set(nics) == {f"mlx5_{n}" for n in (0, 1, 2, 3, 4, 5, 6, 7, 8, 11)} | {
        "mlx5_bond_0",
        "eno1",
    }
    # Table 2's irregular rail layout, from the names alone.
    rails = {nic.device: nic.rail for nic in nics.values() if nic.role == NIC.Role.RAIL}
    assert rails == {
        "mlx5_0": 0, "mlx5_1": 1, "mlx5_2": 2, "mlx5_4": 3,
        "mlx5_5": 4, "mlx5_6": 5, "mlx5_7": 6, "mlx5_11": 7,
    }  # fmt: skip
    assert nics["mlx5_3"].role == NIC.Role.RESERVED
    assert nics["mlx5_8"].role == NIC.Role.STORAGE
    bond = nics["mlx5_bond_0"]
    assert (bond.role, bond.netdev, bond.bond_members) == (
        NIC.Role.STORAGE_BOND,
        "bond0",
        ["mlx5_9", "mlx5_10"],
    )
    assert (nics["eno1"].role, nics["eno1"].speed_gbps) == (NIC.Role.MANAGEMENT, 1)
    assert nics["mlx5_0"].mac == "94:6d:ae:00:00:10"
    assert nics["mlx5_0"].speed_gbps == 400

    leaf = Switch.objects.get(hostname="leaf-p1-r1")
    assert (leaf.role, leaf.pod.name, leaf.rail, leaf.nos, leaf.nos_version) == (
        Switch.Role.LEAF, "p1", 1, "SONiC", "202311",
    )  # fmt: skip
    assert leaf.management_address == "10.254.1.2"
    assert Switch.objects.get(hostname="storage-2").role == Switch.Role.STORAGE
    # Management-only eth0 is not a fabric port.
    assert sorted(leaf.ports.values_list("name", flat=True)) == [
        "Ethernet0",
        "Ethernet256",
        "Ethernet4",
    ]
    uplink = leaf.ports.get(name="Ethernet256")
    assert (uplink.speed_gbps, uplink.lanes, uplink.index, uplink.alias) == (
        800, 8, 256, "Eth1/33(Port33)",
    )  # fmt: skip

    rail_cable = cable_at("gpu002", "mlx5_1")
    assert (rail_cable.b_port.switch.hostname, rail_cable.b_port.name) == (
        "leaf-p1-r1",
        "Ethernet4",
    )
    assert (rail_cable.type, rail_cable.length_m, rail_cable.status) == (
        Cable.Type.BREAKOUT_2DR4_800G, Decimal("5.00"), CableStatus.CONNECTED,
    )  # fmt: skip
    # NetBox cables the bond's member; here the bond holds the cable.
    storage_b = cable_at("gpu001", "mlx5_bond_0")
    assert (storage_b.b_port.switch.hostname, storage_b.b_port.name) == ("storage-2", "Ethernet0")
    uplink_cable = Cable.objects.get(a_port=uplink)
    assert (uplink_cable.b_port.switch.hostname, uplink_cable.type, uplink_cable.label) == (
        "spine-1", Cable.Type.SR8_800G, "L1-S1-1",
    )  # fmt: skip

    audited = AuditEntry.objects.filter(via="netbox", operation="create")
    assert audited.count() == sum(SMALL_FABRIC.values())
    # Lists really were paginated: 45 interfaces in pages of 10.
    interface_pages = [path for _, path in replay.requests if "/dcim/interfaces/" in path]
    assert len(replay.objects["dcim/interfaces"]) == 45
    assert len(interface_pages) == 5


def test_every_list_request_names_a_page_size(empty_inventory, replay):
    """pynetbox otherwise asks for everything after the first page in one request, which a real
    NetBox with a full fleet could not answer within the timeout (inventory/netbox/client.py)."""
    netbox_import(url=replay.url, token=TOKEN)

    limits = [
        dict(parse_qsl(urlsplit(path).query)).get("limit")
        for _, path in replay.requests
        if path.startswith("/api/dcim/")
    ]
    assert limits and all(limit and 0 < int(limit) <= PAGE_SIZE for limit in limits), limits


def test_second_import_changes_nothing(empty_inventory, replay):
    netbox_import(url=replay.url, token=TOKEN)
    audit_entries = AuditEntry.objects.count()

    result = netbox_import(url=replay.url, token=TOKEN)

    assert not result.plan.changed
    assert result.plan.changes == []
    assert inventory_counts() == SMALL_FABRIC
    assert AuditEntry.objects.count() == audit_entries
    out, _ = run_command("netbox_import", "--url", replay.url, "--token", TOKEN)
    assert "Nothing to change: the inventory matches NetBox." in out


def test_import_updates_what_differs_and_keeps_operational_state(empty_inventory, replay):
    netbox_import(url=replay.url, token=TOKEN)
    node = Node.objects.get(hostname="gpu001")
    node.status = LifecycleStatus.MAINTENANCE  # ours, not NetBox's
    node.save()
    replay.find("dcim/devices", name="gpu001")["serial"] = "S821GE09999"
    netbox_interface(replay, "gpu001", "mlx5_0")["primary_mac_address"]["mac_address"] = (
        "94:6D:AE:FF:00:10"
    )

    result = netbox_import(url=replay.url, token=TOKEN)

    updates = [change for change in result.plan.changes if change.action == "update"]
    assert [(c.model, c.name, c.fields) for c in updates] == [
        ("node", "gpu001", {"serial": ("S821GE00001", "S821GE09999")}),
        ("nic", "gpu001 mlx5_0", {"mac": ("94:6d:ae:00:00:10", "94:6d:ae:ff:00:10")}),
    ]
    node.refresh_from_db()
    assert (node.serial, node.status) == ("S821GE09999", LifecycleStatus.MAINTENANCE)
    entry = AuditEntry.objects.get(via="netbox", operation="update", object_type="inventory.node")
    assert (entry.before["serial"], entry.after["serial"]) == ("S821GE00001", "S821GE09999")


def test_import_matches_a_renamed_node_by_serial(empty_inventory, replay):
    netbox_import(url=replay.url, token=TOKEN)
    node_id = Node.objects.get(hostname="gpu002").pk
    gpu002 = netbox_device_id(replay, "gpu002")
    replay.find("dcim/devices", name="gpu002")["name"] = "gpu002-renamed"
    for interface in replay.objects["dcim/interfaces"]:
        if interface["device"]["id"] == gpu002:
            interface["device"]["name"] = "gpu002-renamed"

    netbox_import(url=replay.url, token=TOKEN)

    assert Node.objects.get(pk=node_id).hostname == "gpu002-renamed"
    assert inventory_counts() == SMALL_FABRIC


def test_dry_run_prints_the_diff_and_writes_nothing(empty_inventory, replay):
    out, _ = run_command("netbox_import", "--url", replay.url, "--token", TOKEN, "--dry-run")

    assert inventory_counts() == dict.fromkeys(SMALL_FABRIC, 0)
    assert not AuditEntry.objects.filter(via="netbox").exists()
    gpu001 = netbox_device_id(replay, "gpu001")
    storage_cable = netbox_cable_at(replay, "gpu001", "mlx5_9")["id"]
    assert f"+ create node gpu001 (NetBox device #{gpu001} 'gpu001')" in out
    assert "+ create nic gpu002 mlx5_bond_0" in out
    assert (
        f"+ create cable gpu001 mlx5_bond_0 <> storage-2 Ethernet0 (NetBox cable #{storage_cable})"
        in out
    )
    assert f"Would import from NetBox {replay.status['netbox-version']}" in out
    assert "  cable        10       0                 0" in out

    # Against an imported inventory: updates show before -> after, extra rows are candidates.
    netbox_import(url=replay.url, token=TOKEN)
    uplink = netbox_cable_at(replay, "leaf-p1-r0", "Ethernet256")
    uplink["length"] = 35.0
    gone = netbox_cable_at(replay, "gpu002", "mlx5_9")["id"]
    replay.remove("dcim/cables", lambda cable: cable["id"] == gone)
    before = {cable.pk: (cable.length_m, cable.status) for cable in Cable.objects.all()}

    out, _ = run_command("netbox_import", "--url", replay.url, "--token", TOKEN, "--dry-run")

    assert (
        f"~ update cable leaf-p1-r0 Ethernet256 <> spine-1 Ethernet0 (NetBox cable #{uplink['id']} "
        "'L0-S1-1'): "
        "length_m Decimal('30.00') -> Decimal('35.00')" in out
    )
    removed = cable_at("gpu002", "mlx5_bond_0")
    assert (
        f"- delete-candidate cable gpu002 mlx5_bond_0 <> storage-2 Ethernet4 "
        f"(our cable #{removed.pk}, not in NetBox)" in out
    )
    assert {cable.pk: (cable.length_m, cable.status) for cable in Cable.objects.all()} == before


def test_broken_netbox_data_fails_atomically_naming_every_object(empty_inventory, broken_replay):
    with pytest.raises(NetboxImportError) as caught:
        netbox_import(url=broken_replay.url, token=TOKEN)

    problems = caught.value.problems
    ib0 = netbox_interface(broken_replay, "gpu002", "ib0")["id"]
    patch_cable = netbox_cable_at(broken_replay, "pp-p1-13", "Ethernet0")["id"]
    patch_port = netbox_interface(broken_replay, "pp-p1-13", "Ethernet0")["id"]
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"NetBox interface #{ib0} gpu002 'ib0': interface name 'ib0'")
    assert problems[1].startswith(
        f"NetBox cable #{patch_cable}: side B ends on interface #{patch_port} (pp-p1-13 "
        "Ethernet0), which this import does not know"
    )
    assert inventory_counts() == dict.fromkeys(SMALL_FABRIC, 0)
    assert not AuditEntry.objects.filter(via="netbox").exists()

    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command(
            "netbox_import", "--url", broken_replay.url, "--token", TOKEN, stdout=out, stderr=err
        )
    assert f"NetBox interface #{ib0} gpu002 'ib0'" in err.getvalue()
    assert f"NetBox cable #{patch_cable}" in err.getvalue()


def test_a_constraint_tripping_at_write_time_rolls_back_everything(empty_inventory, replay):
    # Two NICs with one MAC pass the mapping but not the database: nothing at all is written.
    duplicate = netbox_interface(replay, "gpu001", "mlx5_0")["primary_mac_address"]["mac_address"]
    netbox_interface(replay, "gpu002", "mlx5_1")["primary_mac_address"]["mac_address"] = duplicate

    with pytest.raises(NetboxImportError) as caught:
        netbox_import(url=replay.url, token=TOKEN)

    assert "nic_mac_unique" in caught.value.problems[0]
    assert inventory_counts() == dict.fromkeys(SMALL_FABRIC, 0)


def test_site_filter_and_role_map_are_sent_to_netbox(empty_inventory, replay):
    run_command(
        "netbox_import", "--url", replay.url, "--token", TOKEN, "--site", "sakuraone",
        "--role", "gpu-node=node", "--role", "leaf=leaf", "--role", "spine=spine",
        "--role", "storage-switch=storage",
    )  # fmt: skip

    device_queries = [
        path
        for _, path in replay.requests
        if path.startswith("/api/dcim/devices/") and "role=" in path
    ]
    assert "site=sakuraone" in device_queries[0]
    assert "role=gpu-node" in device_queries[0] and "role=storage-switch" in device_queries[0]
    assert inventory_counts() == SMALL_FABRIC
    with pytest.raises(CommandError, match="not SLUG=KIND"):
        run_command("netbox_import", "--url", replay.url, "--token", TOKEN, "--role", "x=router")


# --- export ---


def netbox_without_gpu002(replay: NetboxReplay) -> None:
    """NetBox lacks gpu002 (device, interfaces, cables) and has stale values elsewhere."""
    gpu002 = netbox_device_id(replay, "gpu002")
    replay.remove("dcim/devices", lambda device: device["id"] == gpu002)
    replay.remove("dcim/interfaces", lambda interface: interface["device"]["id"] == gpu002)
    replay.remove(
        "dcim/cables",
        lambda cable: any(
            end["object"]["device"]["id"] == gpu002
            for end in cable["a_terminations"] + cable["b_terminations"]
        ),
    )
    replay.find("dcim/devices", name="gpu001")["serial"] = "STALE"
    netbox_interface(replay, "leaf-p1-r0", "Ethernet256")["label"] = "old label"
    netbox_cable_at(replay, "leaf-p1-r0", "Ethernet256")["length"] = 25.0


def test_export_creates_what_is_missing_and_updates_what_differs(empty_inventory, replay):
    netbox_import(url=replay.url, token=TOKEN)
    netbox_without_gpu002(replay)
    replay.writes.clear()

    out, _ = run_command(
        "netbox_export", "--url", replay.url, "--token", TOKEN, "--site", "sakuraone"
    )

    (device,) = replay.posts("dcim/devices")
    assert device == {
        "name": "gpu002",
        "role": replay.find("dcim/device-roles", slug="gpu-node")["id"],
        "device_type": replay.find("dcim/device-types", model="SYS-821GE-TNHR")["id"],
        "site": replay.find("dcim/sites", slug="sakuraone")["id"],
        "serial": "S821GE00002",
        "status": "active",
        "location": replay.find("dcim/locations", name="p1")["id"],  # pod p1
        "rack": replay.find("dcim/racks", name="p1-rack01")["id"],
    }
    new_device_id = replay.find("dcim/devices", name="gpu002")["id"]
    interfaces = {body["name"]: body for body in replay.posts("dcim/interfaces")}
    assert len(interfaces) == 14  # 12 NICs and the bond's two members
    assert interfaces["mlx5_0"] == {
        "name": "mlx5_0",
        "type": "400gbase-x-qsfpdd",
        "speed": 400_000_000,
        "mgmt_only": False,
        "device": new_device_id,
    }
    assert interfaces["mlx5_bond_0"]["type"] == "lag"
    assert interfaces["eno1"]["mgmt_only"] is True
    bond_id = replay.find("dcim/interfaces", device_id=new_device_id, name="mlx5_bond_0")["id"]
    assert interfaces["mlx5_9"]["lag"] == bond_id == interfaces["mlx5_10"]["lag"]

    cables = replay.posts("dcim/cables")
    assert len(cables) == 4
    ends = set()
    for body in cables:
        a, b = body["a_terminations"][0], body["b_terminations"][0]
        assert a["object_type"] == b["object_type"] == "dcim.interface"
        a_interface = replay.find("dcim/interfaces", id=a["object_id"])
        b_interface = replay.find("dcim/interfaces", id=b["object_id"])
        ends.add((a_interface["name"], b_interface["device"]["name"], b_interface["name"]))
    assert ends == {
        ("mlx5_0", "leaf-p1-r0", "Ethernet4"),
        ("mlx5_1", "leaf-p1-r1", "Ethernet4"),
        ("mlx5_8", "storage-1", "Ethernet4"),
        ("mlx5_9", "storage-2", "Ethernet4"),  # the bond's cable, on its first member
    }
    storage_cable = next(body for body in cables if body["length"] == 20.0)
    assert (storage_cable["type"], storage_cable["status"], storage_cable["length_unit"]) == (
        "smf-os2", "connected", "m",
    )  # fmt: skip

    uplink_port = netbox_interface(replay, "leaf-p1-r0", "Ethernet256")["id"]
    uplink = netbox_cable_at(replay, "leaf-p1-r0", "Ethernet256")["id"]
    assert replay.patches("dcim/devices") == [
        (netbox_device_id(replay, "gpu001"), {"serial": "S821GE00001"})
    ]
    assert replay.patches("dcim/interfaces") == [(uplink_port, {"label": "Eth1/33(Port33)"})]
    assert replay.patches("dcim/cables") == [(uplink, {"length": 30.0})]
    assert "+ create device gpu002 (our node)" in out
    assert "~ update device gpu001: serial 'STALE' -> 'S821GE00001'" in out

    # A second export finds everything in place and sends nothing.
    replay.writes.clear()
    result = netbox_export(url=replay.url, token=TOKEN, site="sakuraone")
    assert result.writes == []
    assert replay.writes == []


def test_export_to_an_empty_netbox_then_import_back_changes_nothing(empty_inventory, replay):
    netbox_import(url=replay.url, token=TOKEN)
    empty = NetboxReplay("small_fabric", max_page_size=10)
    for endpoint in ("dcim/devices", "dcim/interfaces", "dcim/cables"):
        empty.objects[endpoint] = []  # sites, roles, device types, locations and racks stay
    empty.start()
    try:
        result = netbox_export(url=empty.url, token=TOKEN, site="sakuraone")
        assert {(c.model, c.action) for c in result.changes} == {
            ("device", "create"),
            ("interface", "create"),
            ("cable", "create"),
        }
        assert len(empty.objects["dcim/devices"]) == 7
        assert len(empty.objects["dcim/cables"]) == 10
        audit_entries = AuditEntry.objects.count()

        back = netbox_import(url=empty.url, token=TOKEN)
    finally:
        empty.stop()

    assert back.plan.changes == []
    assert AuditEntry.objects.count() == audit_entries


def test_export_dry_run_and_missing_references_send_nothing(empty_inventory, replay):
    netbox_import(url=replay.url, token=TOKEN)
    netbox_without_gpu002(replay)
    replay.writes.clear()

    out, _ = run_command(
        "netbox_export", "--url", replay.url, "--token", TOKEN, "--dry-run", "--site", "sakuraone"
    )

    assert replay.writes == []
    assert "+ create device gpu002 (our node)" in out
    assert (
        f"Would send to NetBox {replay.status['netbox-version']}: device: 1 create, 1 update" in out
    )

    # No site to create gpu002 in: reported before the first write. gpu001's model has no
    # device type in NetBox, which only matters for a device the export would create.
    Node.objects.filter(hostname="gpu001").update(model="Supermicro SYS-999")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command(
            "netbox_export", "--url", replay.url, "--token", TOKEN, stderr=err, stdout=io.StringIO()
        )
    assert "no --site was given" in err.getvalue()
    assert "gpu001" not in err.getvalue()  # an existing device keeps its NetBox type
    Node.objects.filter(hostname="gpu002").update(model="Supermicro SYS-999")
    with pytest.raises(CommandError, match="problem"):
        call_command(
            "netbox_export",
            "--url",
            replay.url,
            "--token",
            TOKEN,
            "--site",
            "sakuraone",
            stderr=err,
            stdout=io.StringIO(),
        )
    assert "gpu002: NetBox has no device type for model 'Supermicro SYS-999'" in err.getvalue()
    assert replay.writes == []


def test_a_write_netbox_rejects_stops_the_export_and_a_rerun_sends_the_rest(
    empty_inventory, replay
):
    netbox_import(url=replay.url, token=TOKEN)
    netbox_without_gpu002(replay)
    replay.writes.clear()
    # What NetBox 4.6 answered when a cable was POSTed onto an occupied interface (recorded).
    refusal = json.loads((FIXTURES / "cable_on_occupied_interface.json").read_text())
    replay.reject_posts["dcim/cables"] = refusal["body"]

    with pytest.raises(NetboxError) as caught:
        netbox_export(url=replay.url, token=TOKEN, site="sakuraone")

    message = str(caught.value)
    assert "NetBox answered HTTP 400 to POST" in message
    assert "Duplicate termination found for dcim.interface" in message
    assert "re-run the export to send the rest" in message
    assert replay.posts("dcim/cables") == []
    assert len(replay.posts("dcim/interfaces")) == 14

    replay.reject_posts.clear()
    replay.writes.clear()
    result = netbox_export(url=replay.url, token=TOKEN, site="sakuraone")

    # Devices and interfaces are in place; only cables are left (the uplink's length PATCH
    # came after the rejected POST, so it is still due).
    assert {change.model for change in result.changes} == {"cable"}
    assert len(replay.posts("dcim/cables")) == 4
    uplink = netbox_cable_at(replay, "leaf-p1-r0", "Ethernet256")["id"]
    assert replay.patches("dcim/cables") == [(uplink, {"length": 30.0})]
    assert len(replay.writes) == 5


# --- errors from NetBox ---


def test_token_refused_is_a_clear_error(empty_inventory, replay):
    with pytest.raises(
        NetboxError, match=r"NetBox refused the API token \(HTTP 403: Invalid v1 token"
    ):
        netbox_import(url=replay.url, token="wrong")
    with pytest.raises(CommandError, match="refused the API token"):
        run_command("netbox_export", "--url", replay.url, "--token", "wrong", "--site", "x")
    assert replay.writes == []


def test_auth_failure_exits_non_zero_from_the_shell(replay):
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    completed = subprocess.run(
        [sys.executable, "manage.py", "netbox_import", "--url", replay.url, "--token", "wrong"],
        cwd=REPOSITORY,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1
    assert "NetBox refused the API token (HTTP 403: Invalid v1 token)" in completed.stderr


def test_unreachable_netbox_is_a_clear_error():
    with pytest.raises(NetboxError, match="cannot reach NetBox"):
        netbox_import(url="http://127.0.0.1:9", token=TOKEN)


# --- mapping, pure ---


def test_mapping_of_names_speeds_and_media():
    assert mapping.interface_speed_gbps({"speed": 400_000_000}) == 400
    assert (
        mapping.interface_speed_gbps({"speed": None, "type": {"value": "800gbase-x-osfp"}}) == 800
    )
    assert mapping.interface_speed_gbps({"type": {"value": "1000base-t"}}) == 1
    assert mapping.interface_speed_gbps({"type": {"value": "lag"}}) is None
    rail = mapping.nic_fields({"name": "mlx5_7", "custom_fields": {}}, [])
    assert (rail["role"], rail["rail"]) == (NIC.Role.RAIL, 6)
    custom = mapping.nic_fields(
        {"name": "ens1f0", "custom_fields": {"nic_role": "rail", "rail": 3}}, []
    )
    assert (custom["role"], custom["rail"]) == (NIC.Role.RAIL, 3)
    with pytest.raises(mapping.MappingError, match="rail 9 is out of range"):
        mapping.nic_fields({"name": "mlx5_0", "custom_fields": {"rail": 9}}, [])
    with pytest.raises(mapping.MappingError, match="not a SONiC port name"):
        mapping.port_fields({"name": "Ethernet1/1"})
    assert mapping.cable_length_m({"length": 150, "length_unit": {"value": "cm"}}) == Decimal(
        "1.50"
    )
    with pytest.raises(mapping.MappingError, match="'power'"):
        mapping.cable_type({"type": "power"}, to_nic=False)
    leaf = {"name": "leaf-p2-r5", "role": {"slug": "leaf"}, "custom_fields": {"pod": "p2"}}
    fields = mapping.switch_fields(leaf, Switch.Role.LEAF)
    assert (fields["pod"], fields["rail"]) == ("p2", 5)
    with pytest.raises(mapping.MappingError, match="a leaf needs a pod"):
        mapping.switch_fields({"name": "leaf-r1"}, Switch.Role.LEAF)


def test_a_servers_oob_ip_is_its_bmc_address(empty_inventory, replay):
    """Issue 24: NetBox's `oob_ip` of a node is its BMC's Redfish address."""
    replay.find("dcim/devices", name="gpu001")["oob_ip"] = {"id": 91, "address": "10.10.0.1/16"}

    result = netbox_import(url=replay.url, token=TOKEN)

    create = next(c for c in result.plan.changes if c.model == "node" and c.name == "gpu001")
    assert create.action == "create"
    assert Node.objects.get(hostname="gpu001").bmc_address == "10.10.0.1"
    assert Node.objects.get(hostname="gpu002").bmc_address is None
    replay.find("dcim/devices", name="gpu001")["oob_ip"] = {"id": 92, "address": "10.10.0.9/16"}
    again = netbox_import(url=replay.url, token=TOKEN)
    assert [(c.name, c.fields) for c in again.plan.changes if c.action == "update"] == [
        ("gpu001", {"bmc_address": ("10.10.0.1", "10.10.0.9")})
    ]


def test_export_after_swaps_sends_the_new_serials_to_the_device_and_the_gpu_item(
    empty_inventory, replay
):
    """Issue 25 item 2: a swapped node's serial reaches its NetBox device, and a swapped GPU's
    serial (and UUID) its inventory item `GPU<index>`, which stays the slot's item."""
    from inventory.models import GPU
    from inventory.swaps import component_replace, slot_for

    netbox_import(url=replay.url, token=TOKEN)
    gpu001 = Node.objects.get(hostname="gpu001")
    for index in range(8):
        GPU.objects.create(node=gpu001, index=index, serial=f"1654322001{index:02d}",
                           uuid=f"GPU-0001{index:04d}-0000-0000-0000-000000000000", model="H100")
    replay.writes.clear()

    netbox_export(url=replay.url, token=TOKEN, site="sakuraone")

    device_id = netbox_device_id(replay, "gpu001")
    items = replay.posts("dcim/inventory-items")
    assert [item["name"] for item in items] == [f"GPU{index}" for index in range(8)]
    assert items[3] == {
        "name": "GPU3", "serial": "165432200103", "part_id": "H100",
        "description": "GPU-00010003-0000-0000-0000-000000000000", "device": device_id,
    }
    assert replay.patches("dcim/devices") == []

    component_replace(slot=slot_for(kind="gpu", node=gpu001, gpu_index=3),
                      serial_in="1654322009999",
                      uuid_in="GPU-99999999-0000-0000-0000-000000000000", reference="RC-1")
    component_replace(slot=slot_for(kind="node", node=Node.objects.get(hostname="gpu002")),
                      serial_in="S821GE77777", reference="RC-2")
    replay.writes.clear()

    result = netbox_export(url=replay.url, token=TOKEN, site="sakuraone")

    gpu3_item = replay.find("dcim/inventory-items", device_id=device_id, name="GPU3")
    assert replay.patches("dcim/inventory-items") == [(gpu3_item["id"], {
        "serial": "1654322009999", "description": "GPU-99999999-0000-0000-0000-000000000000"})]
    assert replay.patches("dcim/devices") == [
        (netbox_device_id(replay, "gpu002"), {"serial": "S821GE77777"})]
    assert replay.posts("dcim/inventory-items") == []
    assert "~ update inventory item gpu001 GPU3: serial '165432200103' -> '1654322009999'" in [
        change.line().split(", description")[0] for change in result.changes]

    # The swapped serials are now NetBox's: a third export sends nothing.
    replay.writes.clear()
    assert netbox_export(url=replay.url, token=TOKEN, site="sakuraone").writes == []

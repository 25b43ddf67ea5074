"""A switch served from a real-looking dump (issue 28, real-data findings): field-less entries,
no version.json, BGP state only where STATE_DB has it, a CONFIG_DB port APPL_DB lacks.

The fixture, fabric/emulator/dumps/leaf-mlnx, is a small Mellanox SN4700 leaf.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fabric.drivers.base import SwitchTarget
from fabric.drivers.sonic_ports import port_statuses
from fabric.drivers.ssh import SonicSshDriver
from fabric.emulator import CommandInterpreter, Switch
from fabric.emulator.dump import load_dump, read_dump_file

MELLANOX_DUMP = Path(__file__).resolve().parents[2] / "fabric" / "emulator" / "dumps" / "leaf-mlnx"


def _shell(directory: Path = MELLANOX_DUMP) -> CommandInterpreter:
    dump = load_dump(directory)
    return CommandInterpreter(Switch(dump.spec(), dump=dump))


def test_a_field_less_entry_is_kept_as_sonic_keeps_it():
    """ConfigDBConnector writes an entry without fields as NULL/NULL (swss-common
    common/configdb.h typed_to_raw); the loader once refused it with "HSET needs a field"."""
    config = read_dump_file(MELLANOX_DUMP / "config_db.json")
    assert config["PORT_QOS_MAP|Ethernet0"] == {"NULL": "NULL"}
    shell = _shell()
    hgetall = shell.execute('sonic-db-cli CONFIG_DB HGETALL "PORT_QOS_MAP|Ethernet0"')
    assert (hgetall.exit_status, hgetall.stdout) == (0, "{'NULL': 'NULL'}\n")
    dumped = shell.execute("sonic-db-dump -n CONFIG_DB -y -k 'PORT_QOS_MAP|Ethernet0'")
    assert json.loads(dumped.stdout) == {
        "PORT_QOS_MAP|Ethernet0": {"type": "hash", "value": {"NULL": "NULL"}}}
    # A command that re-reads CONFIG_DB takes the placeholder for no PFC, not for a priority.
    assert shell.execute("sudo config interface shutdown Ethernet8").exit_status == 0
    assert shell.switch._qos["Ethernet0"].pfc_priorities == frozenset()
    assert shell.switch._qos["Ethernet8"].pfc_priorities == frozenset({3, 4})


def test_show_version_says_what_the_dump_does_not_hold_is_unknown():
    """No version.json: no invented build or Broadcom ASIC; the ASIC named by the platform
    (every x86_64-mlnx_* platform is a Mellanox Spectrum), the rest N/A as show version
    prints an absent value."""
    text = _shell().execute("show version").stdout
    assert "SONiC Software Version: SONiC.N/A\n" in text
    assert "Platform: x86_64-mlnx_msn4700-r0\nHwSKU: ACS-MSN4700\nASIC: mellanox\n" in text
    assert "Serial Number: N/A\nModel Number: N/A\nHardware Revision: N/A\n" in text
    assert "202311" not in text and "broadcom" not in text.lower()
    assert "docker-syncd-brcm" not in text


def test_show_version_of_a_platform_that_names_no_asic_says_na(tmp_path):
    directory = tmp_path / "leaf"
    shutil.copytree(MELLANOX_DUMP, directory)
    path = directory / "config_db.json"
    content = json.loads(path.read_text(encoding="utf-8"))
    content["DEVICE_METADATA|localhost"]["value"]["platform"] = "x86_64-accton_as9817_64o-r0"
    path.write_text(json.dumps(content), encoding="utf-8")
    assert "\nASIC: N/A\n" in _shell(directory).execute("show version").stdout


def test_the_ssh_driver_reads_show_versions_na_as_unknown(monkeypatch):
    """The portal's read of `show version` (fabric/drivers/ssh.py): N/A is "" (unknown), not
    a version called "SONiC.N/A" nor a serial number "N/A"."""
    text = _shell().execute("show version").stdout
    driver = SonicSshDriver(SwitchTarget(hostname="leaf-mlnx", address="127.0.0.1"))
    monkeypatch.setattr(driver, "run_checked", lambda command: text)
    version = driver.version()
    assert (version.sonic_version, version.platform, version.asic, version.serial) == (
        "", "x86_64-mlnx_msn4700-r0", "mellanox", "")


def test_bgp_peers_are_in_the_state_state_db_recorded():
    """bgpmon writes FRR's state to STATE_DB NEIGH_STATE_TABLE|<peer> (sonic-bgpcfgd
    bgpmon/bgpmon.py); a peer without an entry is not shown as Established."""
    summary = json.loads(_shell().execute('vtysh -c "show bgp ipv4 summary json"').stdout)
    peers = summary["ipv4Unicast"]["peers"]
    assert {address: peer["state"] for address, peer in peers.items()} == {
        "10.0.0.57": "Established", "10.0.0.59": "Active", "10.0.0.61": "Unknown"}
    assert peers["10.0.0.61"]["peerUptime"] == "never"
    assert summary["ipv4Unicast"]["failedPeers"] == 2


def test_a_port_appl_db_lacks_has_no_row_in_intfutil_and_is_not_invented():
    """intfutil lists the APPL_DB PORT_TABLE keys that are CONFIG_DB ports (sonic-utilities
    scripts/intfutil, generate_intf_status): Ethernet24 has no row, and the emulator does not
    make one up for it."""
    shell = _shell()
    rows = json.loads(shell.execute("intfutil -c status -j").stdout)
    assert set(rows) == {"Ethernet0", "Ethernet8", "Ethernet16"}
    assert shell.switch.db.hgetall("APPL_DB", "PORT_TABLE:Ethernet24") == {}


def test_a_port_appl_db_lacks_reads_as_unknown_not_as_down_differing_from_config():
    """The portal's read (fabric.drivers.sonic_ports, used by the SSH and emulated drivers):
    with no APPL_DB entry the running state is unknown (intfutil: no row, N/A for an absent
    field), so it is not admin down and does not differ from CONFIG_DB's admin up."""

    def table(db_file: str, prefix: str) -> dict:
        entries = read_dump_file(MELLANOX_DUMP / db_file)
        return {key[len(prefix):]: value for key, value in entries.items()
                if key.startswith(prefix)}

    ports = {port.name: port for port in port_statuses(
        table("config_db.json", "PORT|"), table("appl_db.json", "PORT_TABLE:"),
        table("state_db.json", "PORT_TABLE|"))}
    missing = ports["Ethernet24"]
    assert missing.intent_differences() == {}
    assert (missing.admin_state_known, missing.oper_state_known) == (False, False)
    assert missing.speed_mbps is None
    running = ports["Ethernet16"]
    assert (running.admin_state_known, running.admin_up, running.oper_up) == (True, True, False)


# -- polled into the portal: stored, counted, published, shown and served as unknown ---------


@pytest.fixture
def polled_mellanox_leaf(settings, monkeypatch):
    """The dumped leaf in the inventory (its four CONFIG_DB ports), served by the emulated
    driver (the SSH driver's readers over the same tables) and polled once; the "fabric" event
    and the link signals the poll sends, captured."""
    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric
    from fabric.polling import poll_fabric
    from inventory.models import Pod, SwitchPort
    from inventory.models import Switch as InventorySwitch

    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    leaf = InventorySwitch.objects.create(hostname="leaf-mlnx", role=InventorySwitch.Role.LEAF,
                                          pod=Pod.objects.create(name="p1"), rail=0)
    for index, name in enumerate(("Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24")):
        SwitchPort.objects.create(switch=leaf, name=name, index=index)
    build_emulated_fabric(specs=[], clock=lambda: 1_767_225_600.0,
                          dumps=[load_dump(MELLANOX_DUMP)])
    sent: dict[str, dict] = {}
    signals: list = []
    monkeypatch.setattr("fabric.polling.publish",
                        lambda group, event, payload: sent.setdefault(event, payload))
    monkeypatch.setattr("fabric.polling.notify_fabric_signals", signals.extend)
    try:
        poll_fabric(switches=[leaf])
        yield leaf, sent, signals
    finally:
        reset_emulated_fabric()


@pytest.mark.django_db
def test_a_port_appl_db_lacks_is_stored_shown_and_served_as_unknown(polled_mellanox_leaf,
                                                                    make_user, api_as):
    """Issue 28: Ethernet24 (CONFIG_DB, no APPL_DB entry) was stored admin down / oper down,
    so the switch page said "shut / down", the event sent "X" and the API false/false."""
    from django.test import Client

    from fabric.models import PortCounterLatest, SwitchPollState
    from inventory.models import SwitchPort
    from portal.models import Role

    leaf, sent, signals = polled_mellanox_leaf
    stored = PortCounterLatest.objects.get(port__switch=leaf, port__name="Ethernet24")
    assert (stored.admin_up, stored.oper_up) == (None, None)
    assert stored.intent_differences == {}
    assert SwitchPort.objects.filter(switch=leaf, name="Ethernet24").values_list(
        "admin_status", "oper_status").get() == ("", "")  # the inventory's unknown
    running = PortCounterLatest.objects.get(port__switch=leaf, port__name="Ethernet16")
    assert (running.admin_up, running.oper_up) == (True, False)
    state = SwitchPollState.objects.get(switch=leaf)
    assert (state.ports_up, state.ports_down) == (2, 1)  # Ethernet16 down; 24 is neither
    assert sent["fabric.poll"]["switches"]["leaf-mlnx"]["ports"]["Ethernet24"].startswith("N")
    assert signals == []  # a first reading, and an unknown one, is no link change

    browser = Client()
    browser.force_login(make_user(Role.VIEWER))
    page = browser.get("/fabric/switches/leaf-mlnx/").content.decode()
    row = page[page.index('<tr data-port="Ethernet24"'):]
    row = row[:row.index("</tr>")]
    assert 'data-condition="unknown"' in row and "n/a / n/a" in row
    assert "shut" not in row and "down" not in row

    ports = api_as(Role.VIEWER).get("/api/fabric/switches/leaf-mlnx/ports/").json()["results"]
    counters = {port["name"]: port["counters"] for port in ports}
    assert (counters["Ethernet24"]["admin_up"], counters["Ethernet24"]["oper_up"]) == (
        None, None)
    assert (counters["Ethernet16"]["admin_up"], counters["Ethernet16"]["oper_up"]) == (
        True, False)


def test_the_api_schema_says_a_port_state_may_be_unknown():
    from drf_spectacular.generators import SchemaGenerator

    schemas = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    for name in ("admin_up", "oper_up"):
        assert schemas["PortCounters"]["properties"][name].get("nullable") is True
    assert schemas["History"]["properties"]["oper_up"].get("nullable") is True

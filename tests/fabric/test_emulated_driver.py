"""EmulatedDriver: the FabricDriver interface over in-process emulated switches built from the
inventory, producing the same dataclasses as the SSH driver."""

from __future__ import annotations

import pytest

from fabric.drivers.base import (
    SAKURAONE_ROCE_PROFILE,
    CounterSnapshot,
    PortStatus,
    SwitchCommandFailed,
    SwitchTarget,
    SwitchUnreachable,
    get_fabric_driver,
)
from fabric.drivers.emulated import EmulatedDriver
from inventory.models import NIC

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: fleets and the emulated fabric
pytestmark = pytest.mark.django_db


def driver(hostname: str) -> EmulatedDriver:
    found = get_fabric_driver(SwitchTarget(hostname=hostname, address="10.0.0.1"))
    assert isinstance(found, EmulatedDriver)
    return found


def test_ports_follow_the_inventory_breakouts_and_cabling(small_fleet, emulated):
    ports = {port.name: port for port in driver("leaf-p1-r0").ports()}
    assert all(isinstance(port, PortStatus) for port in ports.values())
    # Cage 1 is broken out 2x400G for the nodes; cage 33 (Ethernet256) is an 800G uplink.
    assert ports["Ethernet0"].speed_mbps == 400_000 and ports["Ethernet4"].speed_mbps == 400_000
    assert ports["Ethernet0"].alias == "Eth1/1(Port1)"
    assert ports["Ethernet256"].speed_mbps == 800_000
    # Four nodes per pod in this fleet: Ethernet0, 4, 8, 12 are cabled and up.
    assert [name for name, port in ports.items() if port.oper_up and port.speed_mbps == 400_000] \
        == ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]
    assert not ports["Ethernet16"].admin_up and not ports["Ethernet16"].oper_up
    assert ports["Ethernet256"].oper_up  # uplink to a spine, both ends emulated


def test_counters_advance_with_the_clock(small_fleet, emulated):
    leaf = driver("leaf-p1-r0")
    first = leaf.counters()
    emulated.fake_clock.advance(10)
    second = leaf.counters()
    assert isinstance(second, CounterSnapshot)
    assert (second.taken_at - first.taken_at).total_seconds() == 10
    before = {port.name: port for port in first.ports}
    after = {port.name: port for port in second.ports}
    moved = after["Ethernet0"].in_octets - before["Ethernet0"].in_octets
    # Leafs run at 30 % of 400G (50 GB/s) with a few percent of jitter.
    assert 0.27 * 50e9 * 10 < moved < 0.33 * 50e9 * 10
    assert after["Ethernet16"].in_octets == 0  # nothing cabled
    assert set(after["Ethernet0"].pfc_rx) == set(range(8))
    assert set(after["Ethernet0"].ecn_marked) == set(range(8))


def test_congestion_shows_as_pfc_and_ecn(small_fleet, emulated):
    emulated.switches["leaf-p1-r0"].set_utilization("Ethernet0", 0.97)
    leaf = driver("leaf-p1-r0")
    emulated.fake_clock.advance(10)
    port = next(port for port in leaf.counters().ports if port.name == "Ethernet0")
    assert port.pfc_rx[3] > 0 and port.pfc_tx[3] > 0 and port.pfc_rx[0] == 0
    assert port.ecn_marked[3] > 0


def test_lldp_reports_hosts_by_mac_and_switches_by_alias(small_fleet, emulated):
    neighbors = {n.local_port: n for n in driver("leaf-p1-r2").lldp_neighbors()}
    nic = NIC.objects.get(node__hostname="gpu001", rail=2)
    host = neighbors["Ethernet0"]
    assert (host.remote_system_name, host.remote_port_id) == ("gpu001", nic.mac)
    assert host.remote_port_description == "mlx5_2"
    uplink = neighbors["Ethernet256"]
    assert uplink.remote_system_name.startswith("spine-")
    assert uplink.remote_port_id.startswith("Eth") and uplink.remote_port_description


def test_port_shutdown_takes_the_link_and_lldp_down(small_fleet, emulated):
    leaf = driver("leaf-p1-r0")
    leaf.set_port_admin(["Ethernet0"], up=False)
    port = next(port for port in leaf.ports() if port.name == "Ethernet0")
    assert not port.admin_up and not port.oper_up
    assert "Ethernet0" not in {n.local_port for n in leaf.lldp_neighbors()}
    leaf.set_port_admin(["Ethernet0"], up=False)  # idempotent
    leaf.set_port_admin(["Ethernet0"], up=True)
    assert next(port for port in leaf.ports() if port.name == "Ethernet0").oper_up


def test_bad_port_is_a_clear_command_error(small_fleet, emulated):
    with pytest.raises(SwitchCommandFailed, match="Ethernet999"):
        driver("leaf-p1-r0").set_port_admin(["Ethernet999"], up=False)


def test_unreachable_switch_raises_switch_unreachable(small_fleet, emulated):
    emulated.set_unreachable("leaf-p1-r1")
    with pytest.raises(SwitchUnreachable):
        driver("leaf-p1-r1").counters()
    with pytest.raises(SwitchUnreachable):
        driver("no-such-switch").ports()


def test_version_qos_and_save(small_fleet, emulated):
    leaf = driver("leaf-p1-r0")
    version = leaf.version()
    assert version.hwsku == "Accton-AS9817-64O" and version.sonic_version.startswith("SONiC.")
    leaf.apply_qos_profile(SAKURAONE_ROCE_PROFILE, ports=["Ethernet0"])
    switch = emulated.switches["leaf-p1-r0"]
    assert switch.db.hget("CONFIG_DB", "WRED_PROFILE|AZURE_LOSSLESS", "green_min_threshold") \
        == str(2 * 1024 * 1024)
    leaf.save_config()
    assert switch.saved_configs["/etc/sonic/config_db.json"]["WRED_PROFILE|AZURE_LOSSLESS"][
        "green_max_threshold"] == str(10 * 1024 * 1024)
    assert isinstance(leaf.bgp_summary(), list)

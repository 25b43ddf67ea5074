"""The switch driver contract: what every FabricDriver must do, as a reusable test class.

Subclass `DriverContract` and provide the fixtures it names (at least `driver`, `switch_setup`):
`tests/fabric/test_ssh_driver.py` runs it against the SONiC emulator over real SSH and, when
`SONIC_TEST_SWITCH` is set, against a real lab switch. `EmulatorThread` serves emulated switches
from a background thread of the test process, so drivers, Celery workers and tests reach them
over TCP while tests can still look inside a switch's databases.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fabric.drivers.base import (
    SAKURAONE_ROCE_PROFILE,
    FabricDriver,
    SwitchCommandFailed,
)
from fabric.emulator import (
    DEFAULT_PASSWORD,
    BgpPeerSpec,
    FabricServer,
    NeighborSpec,
    SwitchSpec,
    serve_fabric,
)
from fabric.emulator.switch import DEFAULT_CONFIG_FILE

# A leaf with its first cage broken out 2x400G to two nodes' rail-0 NICs, an uplink to a spine
# on Ethernet8 (with a BGP session), and nothing on the other ports.
CONTRACT_LEAF = SwitchSpec(
    hostname="leaf01",
    breakout=["Ethernet0"],
    neighbors=[
        NeighborSpec("Ethernet0", "gpu001", "mlx5_0", port_desc="gpu001 rail 0"),
        NeighborSpec("Ethernet4", "gpu002", "mlx5_0", port_desc="gpu002 rail 0"),
        NeighborSpec("Ethernet8", "spine01", "Ethernet0"),
    ],
    bgp_peers=[BgpPeerSpec("10.0.0.1", 65200, "spine01", port="Ethernet8", prefixes_received=64)],
)
CONTRACT_SPINE = SwitchSpec(
    hostname="spine01",
    role="spine",
    bgp_asn=65200,
    router_id="10.2.0.1",
    neighbors=[NeighborSpec("Ethernet0", "leaf01", "Ethernet8")],
)


class EmulatorThread:
    """`serve_fabric` on an event loop in a daemon thread; `stop()` ends both."""

    def __init__(self, specs: list[SwitchSpec], key_dir: Path, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sonic-emulator",
                                       daemon=True)
        self.thread.start()
        self.server: FabricServer = self.call(serve_fabric(specs, host_key_dir=key_dir,
                                                           **options))

    def call(self, coroutine: Coroutine[Any, Any, Any], timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def sync(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run `function(*args)` on the emulator's loop (the switches are not thread-safe)."""

        async def run() -> Any:
            return function(*args)

        return self.call(run())

    @property
    def host(self) -> str:
        return self.server.host

    def port_of(self, hostname: str) -> int:
        return self.server.ports[hostname]

    def known_hosts(self) -> str:
        return self.server.known_hosts()

    def config_db(self, hostname: str, key: str) -> dict[str, str]:
        return self.sync(lambda: self.server.switches[hostname].db.hgetall("CONFIG_DB", key))

    def saved_config(self, hostname: str, key: str) -> dict[str, str]:
        """One CONFIG_DB hash as the switch's last `config save` wrote it to config_db.json."""
        return self.sync(
            lambda: dict(self.server.switches[hostname].saved_configs[DEFAULT_CONFIG_FILE]
                         .get(key, {}))
        )

    def appl_db(self, hostname: str, key: str) -> dict[str, str]:
        return self.sync(lambda: self.server.switches[hostname].db.hgetall("APPL_DB", key))

    def set_response_delay(self, hostname: str, seconds: float) -> None:
        self.sync(self.server.set_response_delay, hostname, seconds)

    def stop(self) -> None:
        try:
            self.call(self.server.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


def write_credentials(path: Path, entries: dict[str, dict[str, str]]) -> Path:
    import json

    path.write_text(json.dumps(entries), encoding="utf-8")
    path.chmod(0o600)
    return path


EMULATOR_LOGIN = {"username": "admin", "password": DEFAULT_PASSWORD}


@dataclass
class SwitchSetup:
    """What the contract needs to know about the switch under test.

    `toggle_port` is cabled and up, and safe to shut down for a moment; `traffic_port` carries
    traffic; `breakout_pair` are the two 400G halves of one cage; `lldp_expected` maps a local
    port to the remote system name its neighbor must report; `config_db` reads one CONFIG_DB
    hash (through the driver's raw access or straight from the emulator), `saved_config` the same
    hash as the last `config save` wrote it to /etc/sonic/config_db.json.
    """

    toggle_port: str
    traffic_port: str
    breakout_pair: tuple[str, str]
    lldp_expected: dict[str, str]
    config_db: Callable[[str], dict[str, str]]
    saved_config: Callable[[str], dict[str, str]]
    bgp_peer: str | None = None
    expected_platform: str = ""
    restore: list[Callable[[], None]] = field(default_factory=list)


class DriverContract:
    """Tests every FabricDriver implementation passes. Subclasses provide `driver` and
    `switch_setup` fixtures."""

    @pytest.fixture
    def driver(self) -> FabricDriver:  # pragma: no cover - overridden
        raise NotImplementedError

    @pytest.fixture
    def switch_setup(self) -> SwitchSetup:  # pragma: no cover - overridden
        raise NotImplementedError

    def test_version_names_sonic_and_the_platform(self, driver, switch_setup):
        version = driver.version()
        assert version.sonic_version.startswith("SONiC.")
        assert version.platform
        assert version.hwsku
        assert version.asic
        if switch_setup.expected_platform:
            assert version.platform == switch_setup.expected_platform

    def test_ports_use_sonic_names_including_the_400g_breakout_halves(self, driver, switch_setup):
        ports = {port.name: port for port in driver.ports()}
        first, second = switch_setup.breakout_pair
        assert ports[first].speed_mbps == ports[second].speed_mbps == 400_000
        assert ports[first].alias.endswith("(Port1)") and ports[second].alias.endswith("(Port1)")
        assert ports["Ethernet8"].speed_mbps == 800_000
        assert all(name.startswith("Ethernet") for name in ports)
        assert list(ports).index("Ethernet8") < list(ports).index("Ethernet16")  # port order
        toggled = ports[switch_setup.toggle_port]
        assert toggled.admin_up and toggled.oper_up
        assert toggled.mtu > 0 and toggled.lanes

    def test_shutdown_and_startup_show_in_admin_and_oper_state(self, driver, switch_setup):
        port = switch_setup.toggle_port
        driver.set_port_admin([port], up=False)
        try:
            state = {p.name: p for p in driver.ports()}[port]
            assert (state.admin_up, state.oper_up) == (False, False)
            assert switch_setup.config_db(f"PORT|{port}")["admin_status"] == "down"
            driver.set_port_admin([port], up=False)  # shutting a down port succeeds
        finally:
            driver.set_port_admin([port], up=True)
        state = {p.name: p for p in driver.ports()}[port]
        assert (state.admin_up, state.oper_up) == (True, True)
        driver.set_port_admin([port], up=True)  # and starting an up port too

    def test_a_bad_port_name_fails_with_the_switch_own_error(self, driver, switch_setup):
        with pytest.raises(SwitchCommandFailed) as failure:
            driver.set_port_admin([switch_setup.toggle_port, "Ethernet999"], up=False)
        assert failure.value.exit_status != 0
        assert "Interface name is invalid" in failure.value.output
        assert "Ethernet999" in failure.value.command
        # Nothing was shut: the bad name was refused before the list was sent.
        assert switch_setup.config_db(f"PORT|{switch_setup.toggle_port}")["admin_status"] == "up"

    def test_counters_advance_between_two_reads_with_traffic(self, driver, switch_setup):
        before = {p.name: p for p in driver.counters().ports}[switch_setup.traffic_port]
        time.sleep(1.0)
        snapshot = driver.counters()
        after = {p.name: p for p in snapshot.ports}[switch_setup.traffic_port]
        assert after.in_octets > before.in_octets
        assert after.out_octets > before.out_octets
        assert after.in_packets > before.in_packets
        assert set(after.pfc_rx) == set(after.pfc_tx) == set(range(8))
        assert 3 in after.ecn_marked
        assert snapshot.taken_at.tzinfo is not None

    def test_lldp_neighbors(self, driver, switch_setup):
        neighbors = {n.local_port: n for n in driver.lldp_neighbors()}
        for port, system in switch_setup.lldp_expected.items():
            assert neighbors[port].remote_system_name == system
            assert neighbors[port].remote_port_id

    def test_bgp_summary(self, driver, switch_setup):
        peers = {peer.address: peer for peer in driver.bgp_summary()}
        if switch_setup.bgp_peer:
            peer = peers[switch_setup.bgp_peer]
            assert peer.state == "Established"
            assert peer.remote_as > 0

    def test_qos_profile_is_in_config_db_afterwards(self, driver, switch_setup):
        profile = SAKURAONE_ROCE_PROFILE
        port = switch_setup.toggle_port
        driver.apply_qos_profile(profile)
        driver.apply_qos_profile(profile)  # again: nothing left to change, still succeeds
        wred_name = switch_setup.config_db(f"QUEUE|{port}|3")["wred_profile"]
        wred = switch_setup.config_db(f"WRED_PROFILE|{wred_name}")
        assert wred["green_min_threshold"] == str(2 * 1024 * 1024)
        assert wred["green_max_threshold"] == str(10 * 1024 * 1024)
        assert wred["green_drop_probability"] == "1"
        assert wred["ecn"] == "ecn_all"
        assert switch_setup.config_db(f"PORT_QOS_MAP|{port}")["pfc_enable"] == "3"
        # The profile the port's lossless PG uses, whatever it is called on this switch.
        bound = switch_setup.config_db(f"BUFFER_PG|{port}|3-4")["profile"]
        buffer = switch_setup.config_db(f"BUFFER_PROFILE|{bound}")
        assert buffer["xoff"] == "36570285"
        assert buffer["xon_offset"] == "18432"
        assert buffer["dynamic_th"] == "0"  # alpha 1
        pool = switch_setup.config_db("BUFFER_POOL|ingress_lossless_pool")
        assert pool["xoff"] == str(36 * 1024 * 1024)

    def test_qos_on_a_port_without_qos_map_is_refused_with_the_switch_text(self, driver):
        with pytest.raises(SwitchCommandFailed) as failure:
            driver.apply_qos_profile(SAKURAONE_ROCE_PROFILE, ports=["Ethernet999"])
        assert "Cannot find interface Ethernet999" in failure.value.output

    def test_save_config_writes_the_running_config(self, driver, switch_setup):
        port = switch_setup.toggle_port
        driver.set_port_admin([port], up=False)
        try:
            driver.save_config()
            assert switch_setup.saved_config(f"PORT|{port}")["admin_status"] == "down"
        finally:
            driver.set_port_admin([port], up=True)
        driver.save_config()
        driver.save_config()  # saving twice succeeds
        saved = switch_setup.saved_config(f"PORT|{port}")
        assert saved["admin_status"] == "up"
        assert saved == switch_setup.config_db(f"PORT|{port}")

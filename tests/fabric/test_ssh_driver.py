"""SonicSshDriver: the driver contract over real SSH against the emulator (and a real switch when
SONIC_TEST_SWITCH is set), plus host-key checking, timeouts and connection reuse."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import asyncssh
import pytest

from fabric.credentials import CredentialsUnavailable, load_credentials
from fabric.drivers.base import (
    SwitchCommandFailed,
    SwitchTarget,
    SwitchUnreachable,
    get_fabric_driver,
)
from fabric.drivers.ssh import (
    SonicSshDriver,
    SwitchAuthenticationFailed,
    SwitchHostKeyRejected,
    _load_known_hosts,
    _loop,
)
from fabric.polling import read_switch
from tests.fabric.driver_contract import (
    CONTRACT_LEAF,
    CONTRACT_SPINE,
    EMULATOR_LOGIN,
    DriverContract,
    EmulatorThread,
    SwitchSetup,
    write_credentials,
)


@pytest.fixture(scope="session")
def host_key_dir(tmp_path_factory) -> Path:
    """Host keys generated once for the session: every emulator start reuses them."""
    return tmp_path_factory.mktemp("emulator-keys")


@pytest.fixture
def emulator(host_key_dir):
    fabric = EmulatorThread([CONTRACT_LEAF, CONTRACT_SPINE], host_key_dir)
    yield fabric
    fabric.stop()


@pytest.fixture
def ssh_settings(settings, tmp_path):
    """A credentials store and an empty known_hosts file for the driver."""
    settings.FABRIC_CREDENTIALS_FILE = str(
        write_credentials(tmp_path / "credentials.json", {"sonic/leaf": EMULATOR_LOGIN})
    )
    settings.FABRIC_KNOWN_HOSTS_FILE = str(tmp_path / "known_hosts")
    settings.FABRIC_SSH_CONNECT_TIMEOUT = 3
    settings.FABRIC_SSH_COMMAND_TIMEOUT = 5
    settings.FABRIC_DRIVER = "fabric.drivers.ssh.SonicSshDriver"
    return settings


@pytest.fixture
def trusted_emulator(emulator, ssh_settings):
    Path(ssh_settings.FABRIC_KNOWN_HOSTS_FILE).write_text(emulator.known_hosts())
    return emulator


def leaf_target(emulator: EmulatorThread, **options) -> SwitchTarget:
    return SwitchTarget(
        hostname="leaf01",
        address=emulator.host,
        port=emulator.port_of("leaf01"),
        credentials_ref="sonic/leaf",
        **options,
    )


@pytest.mark.emulator
class TestEmulatorOverSsh(DriverContract):
    @pytest.fixture
    def driver(self, trusted_emulator):
        driver = get_fabric_driver(leaf_target(trusted_emulator))
        assert isinstance(driver, SonicSshDriver)
        yield driver
        driver.close()

    @pytest.fixture
    def switch_setup(self, trusted_emulator):
        return SwitchSetup(
            toggle_port="Ethernet8",
            traffic_port="Ethernet0",
            breakout_pair=("Ethernet0", "Ethernet4"),
            lldp_expected={"Ethernet0": "gpu001", "Ethernet4": "gpu002", "Ethernet8": "spine01"},
            config_db=lambda key: trusted_emulator.config_db("leaf01", key),
            saved_config=lambda key: trusted_emulator.saved_config("leaf01", key),
            bgp_peer="10.0.0.1",
            expected_platform="x86_64-accton_as9817_64o-r0",
        )


REAL_SWITCH = os.environ.get("SONIC_TEST_SWITCH", "")


def saved_config_db(driver: SonicSshDriver, key: str) -> dict[str, str]:
    """One CONFIG_DB hash ("TABLE|name") from the switch's config_db.json, which nests it as
    {"TABLE": {"name": {...}}}."""
    saved = json.loads(driver.run_checked("cat /etc/sonic/config_db.json"))
    table, _, name = key.partition("|")
    return saved.get(table, {}).get(name, {})


@pytest.mark.skipif(
    not REAL_SWITCH,
    reason="set SONIC_TEST_SWITCH=host:port (and "
    "SONIC_TEST_USERNAME, SONIC_TEST_PASSWORD or SONIC_TEST_KEY_FILE, "
    "SONIC_TEST_KNOWN_HOSTS) to run the contract against a real lab switch",
)
class TestRealSwitch(DriverContract):
    """The same contract against a real SONiC lab switch (it changes port state and QoS).

    Also set SONIC_TEST_TOGGLE_PORT (cabled, safe to flap), SONIC_TEST_TRAFFIC_PORT,
    SONIC_TEST_BREAKOUT (e.g. Ethernet0,Ethernet4), SONIC_TEST_LLDP (Ethernet0=gpu001,...),
    SONIC_TEST_BGP_PEER (optional).
    """

    @pytest.fixture
    def driver(self, settings, tmp_path):
        host, _, port = REAL_SWITCH.rpartition(":")
        login = {"username": os.environ.get("SONIC_TEST_USERNAME", "admin")}
        if os.environ.get("SONIC_TEST_KEY_FILE"):
            login["key_file"] = os.environ["SONIC_TEST_KEY_FILE"]
        else:
            login["password"] = os.environ.get("SONIC_TEST_PASSWORD", "")
        settings.FABRIC_CREDENTIALS_FILE = str(
            write_credentials(tmp_path / "credentials.json", {"lab": login})
        )
        settings.FABRIC_KNOWN_HOSTS_FILE = os.environ.get(
            "SONIC_TEST_KNOWN_HOSTS", str(Path.home() / ".ssh" / "known_hosts")
        )
        driver = SonicSshDriver(
            SwitchTarget(hostname=host, address=host, port=int(port or 22), credentials_ref="lab")
        )
        yield driver
        driver.close()

    @pytest.fixture
    def switch_setup(self, driver):
        lldp = dict(
            item.split("=", 1)
            for item in os.environ.get("SONIC_TEST_LLDP", "").split(",")
            if "=" in item
        )
        breakout = os.environ.get("SONIC_TEST_BREAKOUT", "Ethernet0,Ethernet4")
        first, _, second = breakout.partition(",")
        return SwitchSetup(
            toggle_port=os.environ.get("SONIC_TEST_TOGGLE_PORT", "Ethernet8"),
            traffic_port=os.environ.get("SONIC_TEST_TRAFFIC_PORT", "Ethernet0"),
            breakout_pair=(first, second),
            lldp_expected=lldp,
            config_db=lambda key: driver.db_hgetall("CONFIG_DB", key),
            saved_config=lambda key: saved_config_db(driver, key),
            bgp_peer=os.environ.get("SONIC_TEST_BGP_PEER") or None,
        )


# -- SSH-specific behaviour ----------------------------------------------------------------------


@pytest.mark.emulator
def test_an_unknown_host_key_is_refused(emulator, ssh_settings):
    driver = SonicSshDriver(leaf_target(emulator))
    with pytest.raises(SwitchHostKeyRejected, match="host key not trusted"):
        driver.version()
    assert not Path(ssh_settings.FABRIC_KNOWN_HOSTS_FILE).exists()


@pytest.mark.emulator
def test_a_changed_host_key_is_refused_even_with_trust_on_first_use(emulator, ssh_settings):
    other = emulator.known_hosts().splitlines()
    # Pretend leaf01's address was recorded with spine01's key.
    leaf_port, spine_port = emulator.port_of("leaf01"), emulator.port_of("spine01")
    spine_line = next(line for line in other if line.startswith(f"[{emulator.host}]:{spine_port}"))
    Path(ssh_settings.FABRIC_KNOWN_HOSTS_FILE).write_text(
        spine_line.replace(f":{spine_port} ", f":{leaf_port} ") + "\n"
    )
    driver = SonicSshDriver(leaf_target(emulator, trust_on_first_use=True))
    with pytest.raises(SwitchHostKeyRejected):
        driver.version()


@pytest.mark.emulator
def test_trust_on_first_use_records_the_key_and_checks_it_afterwards(emulator, ssh_settings):
    driver = SonicSshDriver(leaf_target(emulator, trust_on_first_use=True))
    assert driver.version().hwsku
    driver.close()
    recorded = Path(ssh_settings.FABRIC_KNOWN_HOSTS_FILE).read_text()
    expected = next(
        line
        for line in emulator.known_hosts().splitlines()
        if line.startswith(f"[{emulator.host}]:{emulator.port_of('leaf01')} ")
    )
    assert recorded.split() == expected.split()[:3]  # pattern, type, key (no comment)
    # The recorded key now lets a switch without the flag in, on a fresh connection.
    strict = SonicSshDriver(leaf_target(emulator))
    assert strict.version().hwsku
    strict.close()


@pytest.mark.emulator
def test_a_wrong_password_is_an_authentication_failure(trusted_emulator, ssh_settings, tmp_path):
    ssh_settings.FABRIC_CREDENTIALS_FILE = str(
        write_credentials(
            tmp_path / "wrong.json", {"sonic/leaf": {"username": "admin", "password": "nope"}}
        )
    )
    with pytest.raises(SwitchAuthenticationFailed) as failure:
        SonicSshDriver(leaf_target(trusted_emulator)).version()
    assert "nope" not in str(failure.value)  # the secret never ends up in an error


def test_a_listening_socket_that_never_answers_times_out_as_unreachable(ssh_settings):
    ssh_settings.FABRIC_SSH_CONNECT_TIMEOUT = 1
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # the kernel completes the handshake; nobody ever speaks SSH
        target = SwitchTarget(
            hostname="mute",
            address="127.0.0.1",
            port=silent.getsockname()[1],
            credentials_ref="sonic/leaf",
        )
        started = time.monotonic()
        with pytest.raises(SwitchUnreachable, match="timed out"):
            SonicSshDriver(target).version()
        assert time.monotonic() - started < 5


def test_a_refused_connection_is_unreachable(ssh_settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    target = SwitchTarget(
        hostname="gone", address="127.0.0.1", port=port, credentials_ref="sonic/leaf"
    )
    with pytest.raises(SwitchUnreachable):
        SonicSshDriver(target).ports()


@pytest.mark.emulator
def test_a_slow_command_times_out_as_unreachable_and_the_next_call_recovers(
    trusted_emulator, ssh_settings
):
    ssh_settings.FABRIC_SSH_COMMAND_TIMEOUT = 0.5
    driver = SonicSshDriver(leaf_target(trusted_emulator))
    trusted_emulator.set_response_delay("leaf01", 2)
    with pytest.raises(SwitchUnreachable, match="no answer"):
        driver.save_config()
    trusted_emulator.set_response_delay("leaf01", 0)
    driver.save_config()
    driver.close()


@pytest.mark.emulator
def test_one_connection_per_switch_is_reused_and_reopened_after_a_drop(trusted_emulator):
    first = SonicSshDriver(leaf_target(trusted_emulator))
    second = SonicSshDriver(leaf_target(trusted_emulator))
    first.version()
    second.ports()
    connections = _loop().connections
    assert len([key for key in connections if key[1] == trusted_emulator.port_of("leaf01")]) == 1
    opened = connections[first._cache_key]
    # The switch drops every session (e.g. sshd restarted): the next call reconnects.
    trusted_emulator.call(trusted_emulator.server.close())
    trusted_emulator.call(trusted_emulator.server.set_unreachable("leaf01", False))
    assert second.version().hwsku
    assert connections[first._cache_key] is not opened
    first.close()


def test_credentials_store_errors_name_the_reference_not_the_secret(settings, tmp_path):
    settings.FABRIC_CREDENTIALS_FILE = str(
        write_credentials(
            tmp_path / "store.json",
            {
                "sonic/leaf": {"username": "admin", "password": "s3cret"},
                "nopass": {"username": "admin"},
            },
        )
    )
    assert load_credentials("sonic/leaf").password == "s3cret"
    assert "s3cret" not in repr(load_credentials("sonic/leaf"))
    with pytest.raises(CredentialsUnavailable, match="'sonic/spine'"):
        load_credentials("sonic/spine")
    with pytest.raises(CredentialsUnavailable, match="password or a key_file"):
        load_credentials("nopass")
    yaml_store = tmp_path / "store.yaml"
    yaml_store.write_text("default:\n  username: admin\n  password: from-yaml\n")
    settings.FABRIC_CREDENTIALS_FILE = str(yaml_store)
    assert load_credentials("").password == "from-yaml"


@pytest.mark.emulator
def test_hostile_values_read_back_exactly_over_ssh(trusted_emulator):
    """Values sonic-db-cli prints unescaped: an apostrophe in a port description once failed
    the whole port read, a multi-line LLDP system description lost every neighbor."""
    from tests.fabric.test_sonic_db_dump import HOSTILE

    def plant(switch):
        switch.db.hset("CONFIG_DB", "PORT|Ethernet8", HOSTILE)
        switch.db.hset("APPL_DB", "PORT_TABLE:Ethernet8", HOSTILE)
        switch.db.hset("APPL_DB", "LLDP_ENTRY_TABLE:Ethernet8", {
            "lldp_rem_sys_desc": HOSTILE["multi_line"],
            "lldp_rem_port_desc": HOSTILE["both_quotes"],
            "lldp_rem_chassis_id": HOSTILE["empty"],
            "lldp_rem_sys_name": HOSTILE["non_ascii"],
        })

    trusted_emulator.sync(plant, trusted_emulator.server.switches["leaf01"])
    driver = SonicSshDriver(leaf_target(trusted_emulator))
    try:
        ports = {port.name: port for port in driver.ports()}
        assert set(ports) == set(trusted_emulator.server.switches["leaf01"].ports)
        assert ports["Ethernet8"].oper_up
        neighbors = {n.local_port: n for n in driver.lldp_neighbors()}
        assert set(neighbors) == {"Ethernet0", "Ethernet4", "Ethernet8"}
        assert neighbors["Ethernet8"].remote_port_description == HOSTILE["both_quotes"]
        assert neighbors["Ethernet8"].remote_system_name == HOSTILE["non_ascii"]
        assert neighbors["Ethernet8"].remote_chassis_id == ""
        hashes = driver.db_hgetall_many([("CONFIG_DB", "PORT|Ethernet8"),
                                         ("APPL_DB", "NO_SUCH_TABLE:x")])
        assert {name: hashes[0][name] for name in HOSTILE} == HOSTILE
        assert hashes[1] == {}
    finally:
        driver.close()


@pytest.mark.emulator
def test_a_refused_dump_fails_with_the_switch_text(trusted_emulator):
    driver = SonicSshDriver(leaf_target(trusted_emulator))
    try:
        with pytest.raises(SwitchCommandFailed) as failure:
            driver.db_hgetall("NO_DB", "x")
        assert failure.value.exit_status == 1
        assert "Failed to find NO_DB database" in failure.value.output
    finally:
        driver.close()


@pytest.mark.emulator
def test_port_state_and_counters_are_read_as_intfutil_and_portstat_read_them(trusted_emulator):
    """Admin/oper from APPL_DB, speed from STATE_DB while up: the driver once reported
    CONFIG_DB's speed for a port running slower. A missing counter is None, not 0."""
    leaf = trusted_emulator.server.switches["leaf01"]

    def plant(switch):
        switch.db.hset("STATE_DB", "PORT_TABLE|Ethernet8", {"speed": "25000"})
        switch.db.hset("CONFIG_DB", "PORT|Ethernet8", {"admin_status": "down"})  # not applied
        switch.db.hdel("COUNTERS_DB", f"COUNTERS:{switch.port_oids['Ethernet16']}",
                       "SAI_PORT_STAT_IF_OUT_ERRORS")
        switch.db.delete("COUNTERS_DB", f"COUNTERS:{switch.port_oids['Ethernet24']}")

    trusted_emulator.sync(plant, leaf)
    driver = SonicSshDriver(leaf_target(trusted_emulator))
    try:
        ports = {port.name: port for port in driver.ports()}
        running = ports["Ethernet8"]
        assert (running.speed_mbps, running.admin_up, running.oper_up) == (25_000, True, True)
        assert running.intent_differences() == {
            "admin_up": {"configured": False, "actual": True},
            "speed_mbps": {"configured": 800_000, "actual": 25_000},
        }
        assert ports["Ethernet16"].speed_mbps == 800_000  # down: APPL_DB's speed
        counters = {port.name: port for port in driver.counters().ports}
        assert counters["Ethernet16"].out_errors is None
        assert counters["Ethernet16"].in_errors == 0
        assert counters["Ethernet24"].in_octets is None
        assert counters["Ethernet24"].pfc_rx[3] is None
    finally:
        driver.close()


# -- the contract against a switch served from sonic-db-dump files -----------

HOSTILE_DUMP = Path(__file__).resolve().parents[2] / "fabric/emulator/dumps/leaf-hostile"


@pytest.fixture
def dumped_emulator(host_key_dir, ssh_settings):
    from fabric.emulator.dump import load_dump

    fabric = EmulatorThread([], host_key_dir, dumps=[load_dump(HOSTILE_DUMP)])
    Path(ssh_settings.FABRIC_KNOWN_HOSTS_FILE).write_text(fabric.known_hosts())
    yield fabric
    fabric.stop()


@pytest.mark.emulator
class TestDumpedSwitchOverSsh(DriverContract):
    @pytest.fixture
    def driver(self, dumped_emulator):
        driver = SonicSshDriver(SwitchTarget(
            hostname="leaf-hostile", address=dumped_emulator.host,
            port=dumped_emulator.port_of("leaf-hostile"), credentials_ref="sonic/leaf",
        ))
        yield driver
        driver.close()

    @pytest.fixture
    def switch_setup(self, dumped_emulator):
        return SwitchSetup(
            toggle_port="Ethernet8",
            traffic_port="Ethernet0",
            breakout_pair=("Ethernet0", "Ethernet4"),
            lldp_expected={"Ethernet0": "gpu001", "Ethernet8": "spine01",
                           "Ethernet16": "storage\\01"},
            config_db=lambda key: dumped_emulator.config_db("leaf-hostile", key),
            saved_config=lambda key: dumped_emulator.saved_config("leaf-hostile", key),
            bgp_peer="10.0.0.1",
            expected_platform="x86_64-dellemc_z9664f_d1508-r0",
        )

    def test_the_dumps_hostile_values_and_gaps_come_through(self, driver):
        from fabric.emulator.dump import read_dump_file

        appl = read_dump_file(HOSTILE_DUMP / "appl_db.json")
        neighbors = {n.local_port: n for n in driver.lldp_neighbors()}
        for port, neighbor in neighbors.items():
            entry = appl[f"LLDP_ENTRY_TABLE:{port}"]
            assert neighbor.remote_system_name == entry["lldp_rem_sys_name"]
            assert neighbor.remote_port_description == entry["lldp_rem_port_desc"]
        assert set(neighbors) == {"Ethernet0", "Ethernet4", "Ethernet8", "Ethernet16"}
        description = driver.db_hgetall("CONFIG_DB", "PORT|Ethernet0")["description"]
        assert description == "gpu001 rail 0 \u2013 rack A's \"east\" uplink"
        ports = {port.name: port for port in driver.ports()}
        assert ports["Ethernet16"].speed_mbps == 25_000
        assert ports["Ethernet16"].intent_differences()["speed_mbps"]["configured"] == 40_000
        counters = {port.name: port for port in driver.counters().ports}
        assert "Ethernet24" not in counters and "Ethernet24" in ports
        assert counters["Ethernet16"].out_errors is None


@pytest.mark.emulator
def test_a_poll_reads_ports_and_counters_in_one_round_trip(trusted_emulator, monkeypatch):
    driver = SonicSshDriver(leaf_target(trusted_emulator))
    commands = []
    run = driver._run
    monkeypatch.setattr(driver, "_run", lambda command: commands.append(command) or run(command))
    try:
        ports, snapshot = driver.ports_and_counters()
    finally:
        driver.close()
    # Ports (3 tables), counters (2 maps, the hashes) and ECN collection (2 entries): one trip.
    assert len(commands) == 1 and commands[0].count("sonic-db-dump -n") == 8
    assert [port.name for port in ports] == [port.name for port in driver.ports()]
    assert {counters.name for counters in snapshot.ports} == {port.name for port in ports}


@pytest.mark.emulator
def test_polls_keep_the_switch_connection_and_a_failed_read_drops_it(
    trusted_emulator, ssh_settings
):
    target = leaf_target(trusted_emulator)
    key = SonicSshDriver(target)._cache_key
    connections = _loop().connections
    assert not read_switch(target).error
    opened = connections[key]
    # The next poll (a minute later in production) needs no new SSH handshake.
    assert read_switch(target).snapshot is not None
    assert connections[key] is opened and not opened.is_closed()
    ssh_settings.FABRIC_SSH_COMMAND_TIMEOUT = 0.5
    trusted_emulator.set_response_delay("leaf01", 2)
    assert "no answer" in read_switch(target).error
    assert key not in connections  # the poll after a failure starts on a fresh connection
    trusted_emulator.set_response_delay("leaf01", 0)
    assert not read_switch(target).error
    assert connections[key] is not opened
    SonicSshDriver(target).close()


def test_known_hosts_are_parsed_again_only_when_the_file_changes(tmp_path):
    path = tmp_path / "known_hosts"

    def line(port: int) -> str:
        key = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
        return f"[127.0.0.1]:{port} {key.strip()}\n"

    path.write_text(line(2201))
    first = _load_known_hosts(path)
    assert _load_known_hosts(path) is first
    path.write_text(line(2201))  # same length, maybe the same mtime: a new key all the same

    def keys(known: asyncssh.SSHKnownHosts) -> set[bytes]:
        return {key.export_public_key() for key in known.match("127.0.0.1", "127.0.0.1", 2201)[0]}

    assert keys(_load_known_hosts(path)) == {path.read_text().split(" ", 1)[1].encode()}
    assert keys(first) != keys(_load_known_hosts(path))


@pytest.mark.emulator
@pytest.mark.django_db
def test_the_lldp_read_leaves_the_connection_to_the_next_poll(trusted_emulator, ssh_settings):
    from fabric.lldp import _read_lldp
    from fabric.targets import switch_target
    from inventory.models import Switch

    ssh_settings.FABRIC_SWITCH_ENDPOINTS = {
        "leaf01": f"{trusted_emulator.host}:{trusted_emulator.port_of('leaf01')}"}
    switch = Switch.objects.create(hostname="leaf01", role=Switch.Role.SPINE,
                                   credentials_ref="sonic/leaf")
    target = switch_target(switch)
    assert _read_lldp(switch)[2] == ""
    opened = _loop().connections[SonicSshDriver(target)._cache_key]
    assert not read_switch(target).error
    assert _loop().connections[SonicSshDriver(target)._cache_key] is opened
    SonicSshDriver(target).close()

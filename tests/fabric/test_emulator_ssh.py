"""The emulator as the portal's SONiC driver sees it: commands over real SSH, over TCP."""

from __future__ import annotations

import ast
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest
import pytest_asyncio

from fabric.emulator import (
    DEFAULT_PASSWORD,
    BgpPeerSpec,
    FabricServer,
    NeighborSpec,
    SwitchSpec,
    serve_fabric,
)

pytestmark = pytest.mark.emulator

LEAF = SwitchSpec(
    hostname="leaf01",
    breakout=["Ethernet0"],
    neighbors=[
        NeighborSpec("Ethernet0", "gpu001", "mlx5_0", port_desc="gpu001 rail 0"),
        NeighborSpec("Ethernet8", "spine01", "Ethernet0"),
    ],
    bgp_peers=[BgpPeerSpec("10.0.0.1", 65200, "spine01", port="Ethernet8", prefixes_received=64,
                           prefixes_sent=3)],
)
SPINE = SwitchSpec(
    hostname="spine01",
    role="spine",
    bgp_asn=65200,
    router_id="10.2.0.1",
    neighbors=[NeighborSpec("Ethernet0", "leaf01", "Ethernet8")],
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Fabric:
    server: FabricServer
    clock: FakeClock
    connection: asyncssh.SSHClientConnection

    async def run(self, command: str, **options: object) -> asyncssh.SSHCompletedProcess:
        return await self.connection.run(command, **options)


async def connect(server: FabricServer, hostname: str, **options: object
                  ) -> asyncssh.SSHClientConnection:
    options.setdefault("password", DEFAULT_PASSWORD)
    options.setdefault("client_keys", None)
    return await asyncssh.connect(
        server.host, server.ports[hostname], username="admin",
        known_hosts=asyncssh.import_known_hosts(server.known_hosts()), **options,
    )


@pytest_asyncio.fixture
async def fabric(tmp_path: Path) -> AsyncIterator[Fabric]:
    clock = FakeClock()
    server = await serve_fabric([LEAF, SPINE], host_key_dir=tmp_path / "keys", clock=clock)
    connection = await connect(server, "leaf01")
    try:
        yield Fabric(server, clock, connection)
    finally:
        connection.close()
        await server.close()


async def db_hash(fabric: Fabric, db: str, key: str) -> dict[str, str]:
    """What a driver does: sonic-db-cli HGETALL, parsed as the Python literal it prints."""
    result = await fabric.run(f'sonic-db-cli {db} HGETALL "{key}"')
    assert result.exit_status == 0, result.stderr
    return ast.literal_eval(result.stdout)


async def port_counters(fabric: Fabric, port: str) -> dict[str, int]:
    oid = (await fabric.run(f'sonic-db-cli COUNTERS_DB HGET COUNTERS_PORT_NAME_MAP {port}')).stdout
    counters = await db_hash(fabric, "COUNTERS_DB", f"COUNTERS:{oid.strip()}")
    return {name: int(value) for name, value in counters.items()}


@pytest.mark.asyncio
async def test_shutdown_and_startup_change_config_and_appl_db_and_fire_the_hook(fabric):
    events = []
    for switch in fabric.server.switches.values():
        switch.on_port_oper_change(lambda *event: events.append(event))

    result = await fabric.run("sudo config interface shutdown Ethernet8")
    assert (result.exit_status, result.stdout, result.stderr) == (0, "", "")
    assert (await db_hash(fabric, "CONFIG_DB", "PORT|Ethernet8"))["admin_status"] == "down"
    appl = await db_hash(fabric, "APPL_DB", "PORT_TABLE:Ethernet8")
    assert appl["admin_status"] == "down" and appl["oper_status"] == "down"
    # The cable's far end is an emulated spine: its port loses light too.
    assert sorted(events) == [("leaf01", "Ethernet8", False), ("spine01", "Ethernet0", False)]

    events.clear()
    result = await fabric.run("sudo config interface startup Ethernet0-8,Ethernet512")
    assert result.exit_status == 0
    appl = await db_hash(fabric, "APPL_DB", "PORT_TABLE:Ethernet8")
    assert appl["oper_status"] == "up"
    # Ethernet4 (the breakout's second half) and Ethernet512 are admin up but have no cable.
    assert (await db_hash(fabric, "APPL_DB", "PORT_TABLE:Ethernet4"))["oper_status"] == "down"
    assert (await db_hash(fabric, "CONFIG_DB", "PORT|Ethernet512"))["admin_status"] == "up"
    assert sorted(events) == [("leaf01", "Ethernet8", True), ("spine01", "Ethernet0", True)]


@pytest.mark.asyncio
async def test_an_unknown_port_is_rejected_with_sonic_utilities_usage_error(fabric):
    result = await fabric.run("sudo config interface shutdown Ethernet999")
    assert result.exit_status == 2
    assert result.stderr == (
        "Usage: config interface shutdown [OPTIONS] <interface_name>\n"
        'Try "config interface shutdown -h" for help.\n\n'
        "Error: Interface name is invalid. Please enter a valid interface name!!\n"
    )
    # In a list, names that are not ports are skipped like the real command skips them.
    result = await fabric.run("sudo config interface shutdown Ethernet999,Ethernet16")
    assert result.exit_status == 0


@pytest.mark.asyncio
async def test_config_without_sudo_needs_root(fabric):
    result = await fabric.run("config interface shutdown Ethernet8")
    assert (result.exit_status, result.stderr) == (
        1, "Root privileges are required for this operation\n"
    )
    assert (await db_hash(fabric, "CONFIG_DB", "PORT|Ethernet8"))["admin_status"] == "up"


@pytest.mark.asyncio
async def test_config_save_asks_first_and_reload_restores_the_saved_config(fabric):
    result = await fabric.run("sudo config save", stdin=asyncssh.DEVNULL)
    assert result.stdout == "Existing files will be overwritten, continue? [y/N]: "
    assert (result.exit_status, result.stderr) == (1, "Aborted!\n")

    await fabric.run("sudo config interface shutdown Ethernet8")
    result = await fabric.run("sudo config save -y")
    assert result.exit_status == 0
    assert result.stdout == (
        "Running command: /usr/local/bin/sonic-cfggen -d --print-data > "
        "/etc/sonic/config_db.json\n"
    )
    await fabric.run("sudo config interface startup Ethernet8")
    assert (await db_hash(fabric, "APPL_DB", "PORT_TABLE:Ethernet8"))["oper_status"] == "up"

    result = await fabric.run("sudo config reload", input="y\n")
    assert result.exit_status == 0
    assert result.stdout.startswith(
        "Clear current config and reload config in config_db format from the default config "
        "file(s) ? [y/N]: Disabling container monitoring ...\n"
    )
    assert (await db_hash(fabric, "CONFIG_DB", "PORT|Ethernet8"))["admin_status"] == "down"
    assert (await db_hash(fabric, "APPL_DB", "PORT_TABLE:Ethernet8"))["oper_status"] == "down"


@pytest.mark.asyncio
async def test_ecn_writes_the_wred_profile(fabric):
    result = await fabric.run(
        "sudo config ecn -profile AZURE_LOSSLESS -gmin 2097152 -gmax 10485760 -gdrop 1"
    )
    assert (result.exit_status, result.stdout, result.stderr) == (0, "", "")
    profile = await db_hash(fabric, "CONFIG_DB", "WRED_PROFILE|AZURE_LOSSLESS")
    assert profile["green_min_threshold"] == "2097152"
    assert profile["green_max_threshold"] == "10485760"
    assert profile["green_drop_probability"] == "1"
    assert profile["ecn"] == "ecn_all"

    result = await fabric.run("sudo config ecn -profile ROCE -gmin 1")
    assert result.exit_status == 1
    assert result.stderr == "Exception caught:  Input arguments error. Invalid WRED profile ROCE\n"
    result = await fabric.run("sudo config ecn -profile AZURE_LOSSLESS -ymin 9 -ymax 8")
    assert result.exit_status == 1
    assert result.stdout == "Invalid ymin (9) and ymax (8). ymin should be smaller than ymax\n"


@pytest.mark.asyncio
async def test_pfc_priority_edits_port_qos_map(fabric):
    assert (await fabric.run("sudo config interface pfc priority Ethernet8 4 off")).exit_status == 0
    assert (await db_hash(fabric, "CONFIG_DB", "PORT_QOS_MAP|Ethernet8"))["pfc_enable"] == "3"
    result = await fabric.run("sudo config interface pfc priority Ethernet8 4 off")
    assert result.stdout == "Priority 4 is not enabled on Ethernet8\n"
    await fabric.run("sudo config interface pfc priority Ethernet8 4 on")
    assert (await db_hash(fabric, "CONFIG_DB", "PORT_QOS_MAP|Ethernet8"))["pfc_enable"] == "3,4"
    result = await fabric.run("sudo config interface pfc priority Ethernet8 8 on")
    assert result.exit_status == 2 and "invalid choice: 8" in result.stderr


@pytest.mark.asyncio
async def test_queue_ecn_binding_and_buffer_alpha(fabric):
    result = await fabric.run("ecnconfig -q 3 off")
    assert result.exit_status == 1
    assert result.stderr == "Root privileges required for this operation\n"  # ecnconfig's own
    assert (await fabric.run("sudo ecnconfig -q 3 off")).exit_status == 0
    assert await db_hash(fabric, "CONFIG_DB", "QUEUE|Ethernet8|3") == {}
    assert (await fabric.run("ecnconfig -q 3")).stdout == "ECN status:\nqueue 3: off\n"
    await fabric.run("sudo ecnconfig -q 3 on")
    queue = await db_hash(fabric, "CONFIG_DB", "QUEUE|Ethernet8|3")
    assert queue == {"wred_profile": "AZURE_LOSSLESS"}

    result = await fabric.run("sudo config mmu -p pg_lossless_800000_5m_profile -a 0")
    assert result.exit_status == 0
    profile = await db_hash(fabric, "CONFIG_DB", "BUFFER_PROFILE|pg_lossless_800000_5m_profile")
    assert profile["dynamic_th"] == "0" and profile["xoff"] == "731136"


@pytest.mark.asyncio
async def test_intfutil_json_has_the_status_table_shape(fabric):
    result = await fabric.run("intfutil -c status -j")
    assert result.exit_status == 0
    status = json.loads(result.stdout)
    assert len(status) == 67  # 63 cages at 800G, one broken out into two, two 25G ports
    assert status["Ethernet8"] == {
        "Admin": "up", "Alias": "Eth2(Port2)", "Asym PFC": "N/A", "FEC": "rs",
        "Lanes": "9,10,11,12,13,14,15,16", "MTU": "9100", "Oper": "up", "Speed": "800G",
        "Type": "OSFP 8X Pluggable Transceiver", "Vlan": "routed",
    }
    assert status["Ethernet4"]["Alias"] == "Eth1/2(Port1)"
    assert status["Ethernet4"]["Speed"] == "400G"
    assert status["Ethernet512"]["Speed"] == "25G"

    one = json.loads((await fabric.run("intfutil -c status -i Ethernet0 -j")).stdout)
    assert list(one) == ["Ethernet0"]
    # The show command has no JSON option: click refuses it.
    result = await fabric.run("show interfaces status -j")
    assert result.exit_status == 2 and "Error: no such option: -j" in result.stderr


@pytest.mark.asyncio
async def test_counters_advance_with_traffic_only_while_the_port_is_up(fabric):
    before = await port_counters(fabric, "Ethernet8")
    fabric.clock.now += 10
    after = await port_counters(fabric, "Ethernet8")
    moved = after["SAI_PORT_STAT_IF_IN_OCTETS"] - before["SAI_PORT_STAT_IF_IN_OCTETS"]
    # 30 % of 800 Gb/s (100 GB/s) for ten seconds, give or take the 5 % jitter.
    assert 2.8e11 < moved < 3.2e11
    assert after["SAI_PORT_STAT_IF_OUT_UCAST_PKTS"] > before["SAI_PORT_STAT_IF_OUT_UCAST_PKTS"]

    counters = json.loads((await fabric.run("show interfaces counters -j")).stdout)
    assert counters["Ethernet8"]["STATE"] == "U"
    assert counters["Ethernet8"]["RX_BPS"].endswith(" MB/s")
    received = (after["SAI_PORT_STAT_IF_IN_UCAST_PKTS"]
                + after["SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS"])
    assert counters["Ethernet8"]["RX_OK"] == f"{received:,}"
    assert counters["Ethernet16"]["STATE"] == "X"

    await fabric.run("sudo config interface shutdown Ethernet8")
    down = await port_counters(fabric, "Ethernet8")
    fabric.clock.now += 10
    assert await port_counters(fabric, "Ethernet8") == down
    counters = json.loads((await fabric.run("show interfaces counters -i Ethernet8 -j")).stdout)
    assert counters["Ethernet8"]["STATE"] == "X"
    assert counters["Ethernet8"]["RX_BPS"] == "0.00 B/s"


@pytest.mark.asyncio
async def test_congestion_shows_as_pfc_pauses_and_ecn_marks_on_queue_3(fabric):
    fabric.server.switches["leaf01"].set_utilization("Ethernet8", 0.95)
    await fabric.run("true")  # let the switch notice the time that passed so far
    fabric.clock.now += 5
    counters = await port_counters(fabric, "Ethernet8")
    assert counters["SAI_PORT_STAT_PFC_3_RX_PKTS"] > 0
    assert counters["SAI_PORT_STAT_PFC_3_TX_PKTS"] > 0
    assert counters["SAI_PORT_STAT_PFC_0_RX_PKTS"] == 0
    queue = (await fabric.run(
        "sonic-db-cli COUNTERS_DB HGET COUNTERS_QUEUE_NAME_MAP Ethernet8:3")).stdout.strip()
    stats = await db_hash(fabric, "COUNTERS_DB", f"COUNTERS:{queue}")
    assert int(stats["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"]) > 0

    queues = json.loads((await fabric.run("show queue counters Ethernet8 -j")).stdout)
    assert int(queues["Ethernet8"]["UC3"]["totalpacket"]) == int(stats["SAI_QUEUE_STAT_PACKETS"])
    assert set(queues["Ethernet8"]) == {"time", *(f"UC{index}" for index in range(8))}


@pytest.mark.asyncio
async def test_lldp_neighbors_are_readable_with_sonic_db_cli(fabric):
    keys = (await fabric.run('sonic-db-cli APPL_DB KEYS "LLDP_ENTRY_TABLE:*"')).stdout.split()
    assert keys == ["LLDP_ENTRY_TABLE:Ethernet0", "LLDP_ENTRY_TABLE:Ethernet8"]
    host = await db_hash(fabric, "APPL_DB", "LLDP_ENTRY_TABLE:Ethernet0")
    assert host["lldp_rem_sys_name"] == "gpu001"
    assert host["lldp_rem_port_id"] == "mlx5_0"
    assert host["lldp_rem_port_desc"] == "gpu001 rail 0"
    spine = await db_hash(fabric, "APPL_DB", "LLDP_ENTRY_TABLE:Ethernet8")
    assert (spine["lldp_rem_sys_name"], spine["lldp_rem_port_id"]) == ("spine01", "Eth1(Port1)")
    assert spine["lldp_rem_chassis_id"] == fabric.server.switches["spine01"].base_mac

    fabric.server.switches["leaf01"].set_link_up("Ethernet0", False)  # cut the cable
    assert await db_hash(fabric, "APPL_DB", "LLDP_ENTRY_TABLE:Ethernet0") == {}
    assert (await db_hash(fabric, "APPL_DB", "PORT_TABLE:Ethernet0"))["oper_status"] == "down"


@pytest.mark.asyncio
async def test_bgp_summary_is_frr_json(fabric):
    fabric.clock.now += 3600
    result = await fabric.run('vtysh -c "show bgp ipv4 summary json"')
    summary = json.loads(result.stdout)["ipv4Unicast"]
    assert (summary["routerId"], summary["as"]) == ("10.1.0.1", 65100)
    peer = summary["peers"]["10.0.0.1"]
    assert peer["state"] == "Established" and peer["remoteAs"] == 65200
    assert peer["pfxRcd"] == 64 and peer["peerUptimeMsec"] == 3_600_000
    result = await fabric.run('vtysh -c "show bgp nothing"')
    assert (result.exit_status, result.stdout) == (1, "% Unknown command: show bgp nothing\n")


@pytest.mark.asyncio
async def test_unknown_commands_fail_like_bash(fabric):
    result = await fabric.run("reboot-everything now")
    assert result.exit_status == 127
    assert result.stderr == "bash: line 1: reboot-everything: command not found\n"
    result = await fabric.run("sudo reboot-everything")
    assert result.exit_status == 1
    assert result.stderr == "sudo: reboot-everything: command not found\n"


@pytest.mark.asyncio
async def test_show_version_names_the_platform(fabric):
    text = (await fabric.run("show version")).stdout
    assert "SONiC Software Version: SONiC.202311" in text
    assert "Platform: x86_64-accton_as9817_64o-r0" in text
    assert "ASIC: broadcom" in text


@pytest.mark.asyncio
async def test_interactive_shell_shows_the_prompt_and_runs_lines(fabric):
    process = await fabric.connection.create_process(term_type="vt100")
    prompt = "admin@leaf01:~$ "
    await process.stdout.readuntil(prompt)
    process.stdin.write("sudo config interface shutdown Ethernet8\n")
    await process.stdout.readuntil(prompt)
    process.stdin.write("sudo -s\n")
    await process.stdout.readuntil("root@leaf01:/home/admin# ")
    process.stdin.write("config interface startup Ethernet8\n")  # root needs no sudo
    await process.stdout.readuntil("# ")
    process.stdin.write("exit\n")
    await process.stdout.readuntil(prompt)
    process.stdin.write("sonic-db-cli APPL_DB HGET PORT_TABLE:Ethernet8 oper_status\n")
    echoed_and_answer = await process.stdout.readuntil(prompt)
    assert "up\r\n" in echoed_and_answer
    process.stdin.write("exit\n")
    await process.wait_closed()


@pytest.mark.asyncio
async def test_public_key_login_and_wrong_password(tmp_path):
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    authorized = tmp_path / "authorized_keys"
    client_key.write_public_key(authorized)
    server = await serve_fabric([LEAF], host_key_dir=tmp_path / "keys",
                                authorized_keys=authorized)
    try:
        async with await connect(server, "leaf01", password=None,
                                 client_keys=[client_key]) as connection:
            assert (await connection.run("whoami")).stdout == "admin\n"
        with pytest.raises(asyncssh.PermissionDenied):
            await connect(server, "leaf01", password="wrong")
    finally:
        await server.close()

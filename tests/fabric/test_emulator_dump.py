"""The emulator as a real switch: a switch served from sonic-db-dump files,
port state only for the ports CONFIG_DB has, and the real commands' exit statuses."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import asyncssh
import pytest

from fabric.emulator import CommandInterpreter, Switch, SwitchSpec
from fabric.emulator.dump import load_dump, read_dump_file

REPOSITORY = Path(__file__).resolve().parents[2]
HOSTILE_DUMP = REPOSITORY / "fabric" / "emulator" / "dumps" / "leaf-hostile"
MARKERS = {"PortConfigDone", "PortInitDone"}


def _ports(switch: Switch, db: str, prefix: str) -> set[str]:
    return {key[len(prefix):] for key in switch.db.keys(db, f"{prefix}*")} - MARKERS


def _dumped() -> Switch:
    dump = load_dump(HOSTILE_DUMP)
    return Switch(dump.spec(), dump=dump)


def test_a_port_shutdown_creates_no_state_for_ports_config_db_does_not_have():
    switch = Switch(SwitchSpec("leaf01"))
    shell = CommandInterpreter(switch)
    assert shell.execute('sonic-db-cli CONFIG_DB DEL "PORT|Ethernet16"').exit_status == 0
    assert shell.execute("sudo config interface shutdown Ethernet8").exit_status == 0
    config_ports = _ports(switch, "CONFIG_DB", "PORT|")
    assert "Ethernet16" not in config_ports
    assert _ports(switch, "APPL_DB", "PORT_TABLE:") == config_ports
    assert _ports(switch, "STATE_DB", "PORT_TABLE|") == config_ports


def test_config_mmu_without_a_profile_is_clicks_usage_error():
    result = CommandInterpreter(Switch(SwitchSpec("leaf01")), ).execute("sudo config mmu -a 0")
    assert result.exit_status == 2
    assert result.stderr.endswith('Error: Missing option "-p".\n')


def test_the_shipped_dump_is_in_sonic_db_dumps_own_layout():
    from fabric.emulator.tools.dbdump import dump_text

    path = HOSTILE_DUMP / "config_db.json"
    assert path.read_text(encoding="utf-8") == dump_text(read_dump_file(path), pretty=True)


def test_a_dumped_switch_is_the_switch_its_databases_describe():
    switch = _dumped()
    shell = CommandInterpreter(switch)
    assert switch.name == "leaf-hostile"
    assert set(switch.ports) == {"Ethernet0", "Ethernet4", "Ethernet8", "Ethernet16",
                                 "Ethernet24", "Ethernet512"}
    version = shell.execute("show version").stdout
    assert "Platform: x86_64-dellemc_z9664f_d1508-r0\nHwSKU: DellEMC-Z9664f-O64\n" in version
    assert "SONiC Software Version: SONiC.202311.4-dell\n" in version
    assert "Serial Number: CN0ABCDEF1234\n" in version
    # The dump's own state stays until a command changes CONFIG_DB: Ethernet16 runs 25G.
    assert switch.db.hget("STATE_DB", "PORT_TABLE|Ethernet16", "speed") == "25000"
    assert shell.execute("sudo config interface shutdown Ethernet8").exit_status == 0
    assert _ports(switch, "APPL_DB", "PORT_TABLE:") == set(switch.ports)
    assert switch.db.hget("STATE_DB", "PORT_TABLE|Ethernet16", "speed") == "25000"
    # Traffic adds to the dumped counters; a counter the dump lacks stays absent.
    before = int(switch.db.hget("COUNTERS_DB", f"COUNTERS:{switch.port_oids['Ethernet0']}",
                                "SAI_PORT_STAT_IF_IN_OCTETS"))
    switch.advance(1.0)
    after = int(switch.db.hget("COUNTERS_DB", f"COUNTERS:{switch.port_oids['Ethernet0']}",
                               "SAI_PORT_STAT_IF_IN_OCTETS"))
    assert after > before >= 10**12
    assert switch.db.hget("COUNTERS_DB", f"COUNTERS:{switch.port_oids['Ethernet16']}",
                          "SAI_PORT_STAT_IF_OUT_ERRORS") is None
    assert "Ethernet24" not in switch.db.hgetall("COUNTERS_DB", "COUNTERS_PORT_NAME_MAP")


@pytest.mark.emulator
def test_command_line_serves_a_switch_from_a_dump(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "fabric.emulator", "--from-dump", str(HOSTILE_DUMP),
         "--base-port", "0", "--keys", str(tmp_path / "keys")],
        cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        ports = json.loads(process.stdout.readline())
        assert set(ports) == {"leaf-hostile"}

        async def ask() -> str:
            async with asyncssh.connect("127.0.0.1", ports["leaf-hostile"], username="admin",
                                        password="YourPaSsWoRd", client_keys=None,
                                        known_hosts=None) as connection:
                result = await connection.run(
                    "sonic-db-dump -n APPL_DB -y -k 'LLDP_ENTRY_TABLE:Ethernet8'")
                return result.stdout

        entry = json.loads(asyncio.run(ask()))["LLDP_ENTRY_TABLE:Ethernet8"]["value"]
        assert entry["lldp_rem_sys_desc"].startswith("Cisco Nexus Operating System (NX-OS)")
        assert "\nTAC support" in entry["lldp_rem_sys_desc"]
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0

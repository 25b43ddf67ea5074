"""A switch served from a real-looking dump (issue 28, real-data findings): field-less entries,
no version.json, BGP state only where STATE_DB has it, a CONFIG_DB port APPL_DB lacks.

The fixture, fabric/emulator/dumps/leaf-mlnx, is a small Mellanox SN4700 leaf.
"""

from __future__ import annotations

import json
from pathlib import Path

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

"""The emulator's `sonic-db-dump`, `sonic-db-cli` reply format and shell `$?`, against what the
real tools print (sonic_py_common/sonic_db_dump_load.py with redisdl; swss-common's
RedisReply::formatDictReply)."""

from __future__ import annotations

import json

from fabric.emulator import CommandInterpreter, Switch, SwitchSpec

HOSTILE = {
    "apostrophe": "rack A's uplink",
    "both_quotes": "it's \"the\" spine",
    "multi_line": "Cisco Nexus Operating System (NX-OS) Software 9.3(8)\nTAC support: "
                  "http://www.cisco.com/tac\nCopyright (c) 2002-2021",
    "tab_and_backslash": "C:\\tmp\\new\tcolumn",
    "non_ascii": "Schrank Süd \u2013 Reihe 3 ラック",
    "empty": "",
    "large": "x" * 100_000,
}


def _switch() -> Switch:
    switch = Switch(SwitchSpec("leaf01"))
    switch.db.hset("CONFIG_DB", "PORT|Ethernet8", HOSTILE)
    return switch


def test_pretty_dump_is_sorted_indented_ascii_json_of_hashes_without_a_final_newline():
    switch = _switch()
    result = CommandInterpreter(switch).execute(
        "sonic-db-dump -n CONFIG_DB -y -k 'PORT|Ethernet8'")
    assert result.exit_status == 0
    assert not result.stdout.endswith("\n")
    assert result.stdout.isascii()  # json.JSONEncoder's ensure_ascii, as redisdl leaves it
    assert result.stdout.startswith('{\n  "PORT|Ethernet8": {\n    "type": "hash",')
    entry = json.loads(result.stdout)["PORT|Ethernet8"]
    assert entry["type"] == "hash"
    assert {name: entry["value"][name] for name in HOSTILE} == HOSTILE
    assert list(entry["value"]) == sorted(entry["value"])


def test_compact_dump_and_default_database_and_glob():
    switch = _switch()
    shell = CommandInterpreter(switch)
    compact = shell.execute("sonic-db-dump -n CONFIG_DB -k 'PORT|Ethernet1[26]'").stdout
    assert "\n" not in compact and '":{"type":"hash"' in compact
    assert set(json.loads(compact)) == {"PORT|Ethernet16"}
    # Without -n redisdl connects to database 0: APPL_DB.
    default = json.loads(shell.execute("sonic-db-dump -k 'PORT_TABLE:Ethernet0'").stdout)
    assert set(default) == {"PORT_TABLE:Ethernet0"}
    assert shell.execute("sonic-db-dump -n CONFIG_DB -k 'NOPE*'").stdout == "{}"


def test_bad_options_fail_like_optparse_and_swsscommon():
    shell = CommandInterpreter(_switch())
    unknown = shell.execute("sonic-db-dump --dbname CONFIG_DB -x")
    assert unknown.exit_status == 2
    assert unknown.stderr.startswith("Usage: sonic-db-dump [options]\n")
    assert unknown.stderr.endswith("\nsonic-db-dump: error: no such option: -x\n")
    missing = shell.execute("sonic-db-dump -n")
    assert (missing.exit_status, missing.stderr.splitlines()[-1]) == (
        2, "sonic-db-dump: error: -n option requires 1 argument")
    extra = shell.execute("sonic-db-dump -n CONFIG_DB PORT")
    assert extra.exit_status == 4 and "Options:" in extra.stdout
    bad_db = shell.execute("sonic-db-dump -n CONFIG")
    assert bad_db.exit_status == 1 and bad_db.stdout == ""
    assert bad_db.stderr.endswith("IndexError: Failed to find CONFIG database in  key\n")
    assert shell.execute("sonic-db-dump -h").exit_status == 0


def test_shell_expands_the_last_exit_status_outside_single_quotes():
    shell = CommandInterpreter(_switch())
    result = shell.execute("false; echo \"s=$?\"; true; echo $?; echo '$?'")
    assert result.stdout == "s=1\n0\n$?\n"


def test_sonic_db_cli_hgetall_prints_values_unescaped_like_swss_common():
    shell = CommandInterpreter(_switch())
    line = shell.execute('sonic-db-cli CONFIG_DB HGETALL "PORT|Ethernet8"').stdout
    assert "'apostrophe': \"rack A's uplink\"" in line  # double quotes around an apostrophe
    assert "'tab_and_backslash': 'C:\\tmp\\new\tcolumn'" in line  # nothing escaped

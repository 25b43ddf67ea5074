"""`sonic-db-dump`: one SONiC database (or the keys matching a glob) as JSON.

Modelled on the real tool: sonic-buildimage `src/sonic-py-common/sonic_py_common/
sonic_db_dump_load.py`, function `sonic_db_dump_load` (the 202311-era version without
`--netns`, as in edge-core/sonic-buildimage), which parses its options with optparse and hands
them to redis-dump-load's `redisdl.dump` (p/redis-dump-load `redisdl.py`, functions `dump`,
`dumps`, `_reader`, `HashReader`):

- `-n/--dbname` names the database; without it redisdl connects to database 0 (APPL_DB). An
  unknown name fails inside swsscommon's `SonicDBConfig::getDbId` (swss-common
  `common/dbconnector.cpp`, `getDbInfo`), whose std::out_of_range SWIG turns into a Python
  IndexError: a traceback on stderr, exit status 1.
- `-k/--keys` is a Redis KEYS glob; `-y/--pretty` encodes with `json.JSONEncoder(indent=2,
  sort_keys=True)`, otherwise with `separators=(',', ':')` in KEYS order. The encoder keeps
  its default `ensure_ascii=True`, so every value is one JSON string literal with newlines,
  tabs, quotes, backslashes and non-ASCII escaped: output that cannot be misread.
- Each key is `{"type": "hash", "value": {field: value}}`; the dump ends without a newline.
- optparse errors: usage on stderr, `sonic-db-dump: error: ...`, exit 2; a positional
  argument prints the help on stdout and exits 4.
"""

from __future__ import annotations

import json
import optparse
from typing import NoReturn

from ..database import DB_NAMES
from .common import CommandResult, Context, ok

PROG = "sonic-db-dump"
USAGE = (
    "Usage: %prog [options]"
    "\n\nDump data from specified or default redis."
    "\n\nIf no output file is specified, dump to standard output."
)
# redisdl's client() defaults to database 0, which SONiC's database_config.json gives APPL_DB.
DEFAULT_DATABASE = "APPL_DB"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/sonic-db-dump", line 8, in <module>\n'
    "    sys.exit(sonic_db_dump_load())\n"
    "             ^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/usr/local/lib/python3.11/dist-packages/sonic_py_common/sonic_db_dump_load.py", '
    "line 64, in sonic_db_dump_load\n"
)


class _Exit(Exception):
    def __init__(self, result: CommandResult) -> None:
        super().__init__(result.stderr)
        self.result = result


class _Parser(optparse.OptionParser):
    """optparse with its exits captured instead of ending the emulator."""

    def exit(self, status: int = 0, msg: str | None = None) -> NoReturn:
        raise _Exit(CommandResult(stderr=msg or "", exit_status=status))

    def error(self, msg: str) -> NoReturn:
        self.exit(2, f"{self.get_usage()}\n{self.get_prog_name()}: error: {msg}\n")

    def print_help(self, file: object = None) -> None:
        raise _Exit(ok(self.format_help()))


def _parser() -> _Parser:
    parser = _Parser(usage=USAGE, prog=PROG)
    parser.add_option("-w", "--password", help="connect with PASSWORD")
    parser.add_option("-n", "--dbname", help="dump DATABASE (APPL_DB/ASIC_DB...)")
    parser.add_option("-t", "--conntype",
                      help="indicate redis connection type (tcp[default] or unix_socket)",
                      default="tcp")
    parser.add_option("-k", "--keys", help="dump only keys matching specified glob-style pattern")
    parser.add_option("-o", "--output", help="write to OUTPUT instead of stdout")
    parser.add_option("-y", "--pretty", help="split output on multiple lines and indent it",
                      action="store_true")
    parser.add_option("-E", "--encoding",
                      help="set encoding to use while decoding data from redis", default="utf-8")
    return parser


def _traceback(error: str) -> CommandResult:
    return CommandResult(stderr=TRACEBACK + error + "\n", exit_status=1)


def dump_text(table: dict[str, dict[str, str]], pretty: bool) -> str:
    """What redisdl.dumps() returns for hashes: the encoder settings of `dumps`."""
    entries = {key: {"type": "hash", "value": value} for key, value in table.items()}
    if pretty:
        return json.JSONEncoder(indent=2, sort_keys=True).encode(entries)
    return json.JSONEncoder(separators=(",", ":")).encode(entries)


def sonic_db_dump(ctx: Context, argv: list[str]) -> CommandResult:
    parser = _parser()
    try:
        options, args = parser.parse_args(argv)
    except _Exit as done:  # -h (help, exit 0) or an option error (exit 2)
        return done.result
    if args:
        # sonic_db_dump_load: `parser.print_help(); exit(4)`.
        return CommandResult(stdout=parser.format_help(), exit_status=4)
    database = options.dbname or DEFAULT_DATABASE
    if options.dbname and database not in DB_NAMES:
        return _traceback(f"IndexError: Failed to find {database} database in  key")
    if options.conntype not in ("tcp", "unix_socket"):
        return _traceback("TypeError: redis connection type is tcp or unix_socket")
    store = ctx.switch.db
    table = {key: store.hgetall(database, key)
             for key in store.keys(database, options.keys or "*")}
    # A key deleted between KEYS and HGETALL is skipped, as redisdl's KeyDeletedError does.
    text = dump_text({key: value for key, value in table.items() if value}, options.pretty)
    if options.output:
        ctx.switch.files[options.output] = text
        return ok()
    return ok(text)

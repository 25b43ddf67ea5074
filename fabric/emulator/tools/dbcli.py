"""`sonic-db-cli`: raw Redis commands against one SONiC database.

Output follows sonic-swss-common's C++ sonic-db-cli, which mimics redis-py: HGETALL prints a
Python-dict-like `{'field': 'value', ...}` (swss-common `common/redisreply.cpp`,
`RedisReply::formatDictReply` and `formatStringWithQuot`: each string between single quotes, or
double quotes when it holds an apostrophe, never escaped, so values with quotes, newlines or
backslashes make the line ambiguous), KEYS one key per line, a missing HGET an empty
line, integer replies as numbers, HEXISTS as True/False; Redis errors go to stderr as the
system_error text (`<redis error>: Input/output error`) with exit status 1.
"""

from __future__ import annotations

from collections.abc import Callable

from ..database import CONFIG_DB, DB_NAMES
from .common import CommandResult, Context, fail, ok

USAGE = """\
usage: sonic-db-cli [-h] [-s] [-n NAMESPACE] db_or_op [cmd [cmd ...]]

SONiC DB CLI:

positional arguments:
  db_or_op              Database name Or Unary operation(only PING/SAVE/FLUSHALL supported)
  cmd                   Command to execute in database

optional arguments:
  -h, --help            show this help message and exit
  -s, --unixsocket      Override use of tcp_port and use unixsocket
  -n NAMESPACE, --namespace NAMESPACE
                        Namespace string to use asic0/asic1.../asicn

**sudo** needed for commands accesing a different namespace [-n], \
or using unixsocket connection [-s]

Example 1: sonic-db-cli -n asic0 CONFIG_DB keys \\*
Example 2: sonic-db-cli -n asic2 APPL_DB HGETALL VLAN_TABLE:Vlan10
Example 3: sonic-db-cli APPL_DB HGET VLAN_TABLE:Vlan10 mtu
Example 4: sonic-db-cli -n asic3 APPL_DB EVAL "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}" \
2 k1 k2 v1 v2
Example 5: sonic-db-cli PING | sonic-db-cli -s PING
Example 6: sonic-db-cli SAVE | sonic-db-cli -s SAVE
Example 7: sonic-db-cli FLUSHALL | sonic-db-cli -s FLUSHALL
"""

def _pairs(count: int) -> bool:
    return count >= 3 and count % 2 == 1


# The commands emulated, each with Redis's check of its argument count.
_ARGUMENT_COUNT_OK: dict[str, Callable[[int], bool]] = {
    "HGETALL": lambda count: count == 1,
    "HGET": lambda count: count == 2,
    "HEXISTS": lambda count: count == 2,
    "HSET": _pairs,
    "HMSET": _pairs,
    "HDEL": lambda count: count >= 2,
    "KEYS": lambda count: count == 1,
    "DEL": lambda count: count >= 1,
    "EXISTS": lambda count: count >= 1,
}
_WRITES = {"HSET", "HMSET", "HDEL", "DEL"}


class _RedisError(Exception):
    pass


def _quoted(text: str) -> str:
    """swss-common's RedisReply::formatStringWithQuot."""
    return f'"{text}"' if "'" in text else f"'{text}'"


def sonic_db_cli(ctx: Context, argv: list[str]) -> CommandResult:
    args = [arg for arg in argv if arg not in ("-s", "--unixsocket")]
    if not args or args[0] in ("-h", "--help"):
        return ok(USAGE)
    db, commands = args[0], args[1:]
    if not commands:
        if db == "PING":
            return ok("PONG\n")
        return ok(USAGE)
    if db not in DB_NAMES:
        return fail(f"Invalid database name input : '{db}'\nFailed to find {db} database in  key\n")
    name, params = commands[0].upper(), commands[1:]
    try:
        reply = _execute(ctx, db, name, params)
    except _RedisError as error:
        return fail(f"{error}: Input/output error\n")
    if db == CONFIG_DB and name in _WRITES:
        # The daemons subscribed to CONFIG_DB react to raw writes just as to `config` commands.
        ctx.switch.reconcile()
    return ok(f"{reply}\n")


def _execute(ctx: Context, db: str, name: str, params: list[str]) -> str:
    if name not in _ARGUMENT_COUNT_OK:
        quoted = "".join(f"'{param}' " for param in params)
        raise _RedisError(f"ERR unknown command '{name}', with args beginning with: {quoted}")
    if not _ARGUMENT_COUNT_OK[name](len(params)):
        raise _RedisError(f"ERR wrong number of arguments for '{name.lower()}' command")

    store = ctx.switch.db
    if name == "HGETALL":
        fields = store.hgetall(db, params[0])
        return "{" + ", ".join(f"{_quoted(field)}: {_quoted(value)}"
                               for field, value in fields.items()) + "}"
    if name == "HGET":
        return store.hget(db, params[0], params[1]) or ""
    if name == "HEXISTS":
        return str(store.hget(db, params[0], params[1]) is not None)
    if name in ("HSET", "HMSET"):
        pairs = dict(zip(params[1::2], params[2::2], strict=True))
        added = store.hset(db, params[0], pairs)
        return "True" if name == "HMSET" else str(added)
    if name == "HDEL":
        return str(store.hdel(db, params[0], *params[1:]))
    if name == "KEYS":
        return "\n".join(store.keys(db, params[0]))
    if name == "DEL":
        return str(store.delete(db, *params))
    return str(sum(1 for key in params if store.hgetall(db, key)))  # EXISTS

"""`python -m fabric.emulator`: serve emulated switches over SSH until killed.

Prints one JSON line `{"hostname": port, ...}` on stdout once every switch listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from pathlib import Path

from .database import DB_NAMES, RedisDatabase
from .dump import load_dump
from .server import DEFAULT_PASSWORD, DatabaseFactory, serve_fabric
from .spec import SwitchSpec, generic_specs, load_specs


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fabric.emulator",
                                     description="Serve emulated SONiC switches over SSH.")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--spec", type=Path, help="JSON file describing the switches")
    which.add_argument("--switches", type=int, metavar="N", help="N unwired switches sw01..swN")
    which.add_argument("--from-dump", type=Path, action="append", metavar="DIR",
                       help="serve a switch from sonic-db-dump -y files in DIR (config_db.json, "
                            "appl_db.json, state_db.json, counters_db.json); repeatable")
    parser.add_argument("--keys", type=Path, required=True,
                        help="directory holding each switch's SSH host key (created if needed)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--base-port", type=int, default=2200,
                        help="port of the first switch, the next ones follow (0: any free port)")
    parser.add_argument("--password", default=DEFAULT_PASSWORD, help="password of user admin")
    parser.add_argument("--authorized-keys", type=Path,
                        help="authorized_keys file for public-key login as admin")
    parser.add_argument("--redis", metavar="URL",
                        help="keep switch state in this Redis server instead of in memory")
    parser.add_argument("--redis-prefix", default="sonic-emulator:",
                        help="key prefix; each switch adds '<hostname>:'")
    parser.add_argument("--redis-db", type=int, metavar="NUMBER",
                        help="one Redis database for all four SONiC databases "
                             "(default: SONiC's numbering, APPL_DB 0 ... STATE_DB 6)")
    return parser


def _database_factory(args: argparse.Namespace) -> DatabaseFactory | None:
    if not args.redis:
        return None
    numbers = dict.fromkeys(DB_NAMES, args.redis_db) if args.redis_db is not None else None

    def make(spec: SwitchSpec) -> RedisDatabase:
        return RedisDatabase(f"{args.redis_prefix}{spec.hostname}:", args.redis, numbers)

    return make


async def _serve(args: argparse.Namespace) -> None:
    if args.from_dump:
        specs, dumps = [], [load_dump(directory) for directory in args.from_dump]
    else:
        specs = load_specs(args.spec) if args.spec else generic_specs(args.switches)
        dumps = []
    server = await serve_fabric(
        specs, host_key_dir=args.keys, host=args.host, base_port=args.base_port,
        authorized_keys=args.authorized_keys, password=args.password,
        database=_database_factory(args), dumps=dumps,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    print(json.dumps(server.ports), flush=True)
    await stop.wait()
    await server.close()


def main(argv: list[str] | None = None) -> None:
    asyncio.run(_serve(_parser().parse_args(argv)))


if __name__ == "__main__":
    main()

"""Benchmark of the inventory REST API against a warm server, at SAKURAONE scale 1, 20 and 125.

    .venv/bin/python bench/inventory_api.py [--scales 1,20,125] [--reads 100] [--writes 30]

For each scale: (re)creates the PostgreSQL database `portal_bench` (its own; never the test or
demo database), migrates it, imports inventory/fixtures/sakuraone.yaml at that scale (timed;
past the importer's 50 copies the spec's pods are repeated first, as bench/ui_scale.py does:
common.spec_at_scale), starts the portal's ASGI server (`manage.py rundemo`, daphne) on a free
loopback port, warms it, and times each request from this process over a keep-alive
connection. Prints one JSON document with p50/p95 in milliseconds. Loops are bounded; the
server is killed (its whole process group) and the database dropped when the run ends, however
it ends.

The server connects to PostgreSQL at the host of DATABASE_URL (default
postgresql://postgres@127.0.0.1:5432/); it runs without REDIS_URL, so nothing is sent to a broker.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from common import (
    MAX_SCALE,
    analyze_like_autovacuum,
    percentiles,
    spec_at_scale,
    stop_process_group,
)

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "inventory" / "fixtures" / "sakuraone.yaml"
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/"
TARGET_READ_P50_MS = 30.0
TARGET_SCALE_RATIO = 1.5
TARGET_IMPORT_SCALE_1_S = 10.0
READS = ("devices_list_100", "interfaces_of_one_node", "nics_page_1000", "trace_rail_nic")


def bench_database_url(name: str) -> str:
    base = urllib.parse.urlsplit(os.environ.get("DATABASE_URL") or DEFAULT_SERVER)
    return urllib.parse.urlunsplit((base.scheme, base.netloc, f"/{name}", "", ""))


def recreate_database(url: str) -> None:
    import psycopg

    parts = urllib.parse.urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    parts = urllib.parse.urlsplit(url)
    admin = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`manage.py rundemo` on a loopback port, in its own process group."""

    def __init__(self, database_url: str, pool_size: int = 4):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {key: value for key, value in os.environ.items() if key != "REDIS_URL"}
        env.update(
            {
                "DATABASE_URL": database_url,
                "DATABASE_POOL_SIZE": str(pool_size),
                "PYTHONUNBUFFERED": "1",
                "LOG_LEVEL": "WARNING",
            }
        )
        log_fd, log_name = tempfile.mkstemp(prefix="bench-server-", suffix=".log")
        self.log_path = Path(log_name)
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "rundemo", "--port", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        os.close(log_fd)  # the server has its own copy

    def wait_until_ready(self, session, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited:\n{self.log_path.read_text()}")
            try:
                session.get(f"{self.url}/healthz", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"server not ready after {timeout}s")

    def stop(self) -> None:
        stop_process_group(self.process, timeout=10)
        self.log_path.unlink(missing_ok=True)


def timed(session, method: str, url: str, times: int, body=None, expect: int = 200):
    """Time `times` requests (after they have been made once to warm caches)."""
    samples = []
    for attempt in range(times + 1):
        payload = body(attempt) if callable(body) else body
        started = time.perf_counter()
        response = session.request(method, url, json=payload, timeout=60)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != expect:
            raise RuntimeError(f"{method} {url}: {response.status_code} {response.text[:500]}")
        if attempt:
            samples.append(elapsed)
    return percentiles(samples)


def run_scale(scale: int, *, reads: int, writes: int, database_url: str) -> dict:
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    recreate_database(database_url)
    call_command("migrate", verbosity=0)

    from inventory.models import NIC, Node
    from inventory.topology.importer import import_topology
    from inventory.topology.spec import spec_from_yaml
    from portal.services.accounts import api_token_create, user_create

    spec, copies = spec_at_scale(spec_from_yaml(SPEC.read_text(encoding="utf-8")), scale)
    started = time.perf_counter()
    report = import_topology(spec, scale=copies)
    import_wall_s = time.perf_counter() - started

    user = user_create(username=f"bench-{scale}", role="operator", password=None)
    _, key = api_token_create(user=user, name="bench")
    hostnames = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
    middle = Node.objects.get(hostname=hostnames[len(hostnames) // 2])
    rail_nic = NIC.objects.get(node=middle, role="rail", rail=5)
    bulk_ids = list(Node.objects.order_by("hostname").values_list("pk", flat=True)[:100])
    counts = {label: count.total for label, count in report.counts.items()}
    analyze_like_autovacuum()
    connections.close_all()

    import requests

    server = Server(database_url)
    try:
        session = requests.Session()
        server.wait_until_ready(session)
        session.headers["Authorization"] = f"Token {key}"
        api = f"{server.url}/api/inventory"
        for _ in range(5):  # warm: imports, connection, plan caches
            for path in ("/nodes/?page_size=100", f"/nics/?node={middle.hostname}"):
                session.get(api + path, timeout=60)
        results = {
            "devices_list_100": timed(session, "GET", f"{api}/nodes/?page_size=100", reads),
            "interfaces_of_one_node": timed(
                session, "GET", f"{api}/nics/?node={middle.hostname}", reads
            ),
            "nics_page_1000": timed(session, "GET", f"{api}/nics/?page_size=1000", reads),
            "trace_rail_nic": timed(session, "GET", f"{api}/nics/{rail_nic.pk}/trace/", reads),
            "node_patch": timed(
                session,
                "PATCH",
                f"{api}/nodes/{middle.pk}/",
                writes,
                body=lambda n: {"status": "maintenance" if n % 2 else "active"},
            ),
            "bulk_patch_100_nodes": timed(
                session,
                "PATCH",
                f"{api}/nodes/bulk/",
                max(3, writes // 3),
                body=lambda n: [
                    {"id": pk, "status": "maintenance" if n % 2 else "active"} for pk in bulk_ids
                ],
            ),
        }
        session.close()
    finally:
        server.stop()
    return {
        "scale": scale,
        "rows": counts,
        "import_wall_s": round(import_wall_s, 2),
        "requests": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,20,125",
                        help=f"comma-separated, e.g. 1,20,125 (max {MAX_SCALE})")
    parser.add_argument("--reads", type=int, default=100, help="timed requests per read (<=1000)")
    parser.add_argument("--writes", type=int, default=30, help="timed single PATCHes (<=300)")
    parser.add_argument("--database", default="portal_bench", help="database to (re)create")
    parser.add_argument("--keep-database", action="store_true", help="do not drop it at the end")
    options = parser.parse_args()
    scales = [int(each) for each in options.scales.split(",") if each]
    if not scales or any(scale < 1 or scale > MAX_SCALE for scale in scales):
        parser.error(f"--scales takes numbers from 1 to {MAX_SCALE}")
    reads, writes = min(options.reads, 1000), min(options.writes, 300)
    if options.database in {"portal", "test_portal"} or not options.database.startswith("portal_"):
        parser.error("--database must be a bench database named portal_<something>")

    database_url = bench_database_url(options.database)
    os.environ["DATABASE_URL"] = database_url
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))

    runs = {}
    try:
        for scale in scales:
            runs[f"scale_{scale}"] = run_scale(
                scale, reads=reads, writes=writes, database_url=database_url
            )
    finally:
        from django.db import connections

        connections.close_all()
        if not options.keep_database:
            drop_database(database_url)
    print(json.dumps({"benchmark": "inventory_api", **runs, **verdict(runs)}, indent=2))


def verdict(runs: dict) -> dict:
    """The issue's targets, checked against what was measured."""
    checks = {}
    base = runs.get("scale_1")
    if base:
        for name in READS:
            checks[f"{name}_p50_under_{TARGET_READ_P50_MS:g}ms_at_scale_1"] = (
                base["requests"][name]["p50_ms"] < TARGET_READ_P50_MS
            )
        checks["import_scale_1_under_10s"] = base["import_wall_s"] < TARGET_IMPORT_SCALE_1_S
    for key, run in runs.items():
        if base is None or run is base:
            continue
        for name in READS:
            ratio = run["requests"][name]["p50_ms"] / base["requests"][name]["p50_ms"]
            checks[f"{name}_{key}_p50_ratio"] = round(ratio, 2)
            checks[f"{name}_{key}_within_{TARGET_SCALE_RATIO}x"] = ratio <= TARGET_SCALE_RATIO
    return {"targets": checks}


if __name__ == "__main__":
    main()

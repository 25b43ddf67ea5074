"""Benchmark of the pages an operator keeps open, at SAKURAONE scale 20 (2,000 nodes, 330
switches) and 125 (12,500 nodes, 100,000 GPUs, 2,010 switches); prints one JSON document.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/x REDIS_URL=redis://127.0.0.1:6379/N \\
        .venv/bin/python bench/ui_scale.py [--scales 20,125] [--reads 10] [--polls 2]

For each scale: (re)creates the PostgreSQL database `portal_uibench` (its own; never the test or
demo database), migrates it, imports inventory/fixtures/sakuraone.yaml at that scale (timed),
polls the whole fabric through the in-process emulated driver (`--polls`, timed; rates need two),
starts the portal's ASGI server (`manage.py rundemo`, daphne) on a free loopback port, logs in
through the login form like a browser and times each page over one keep-alive connection:
dashboard (`/`), node list (`/inventory/`), fabric overview (`/fabric/`), topology
(`/inventory/topology/`), validation (`/inventory/validation/`) and every other page an operator
opens (MORE_PAGES: node and spine pages, switch, cable, fault, job, Action and audit lists,
search), then each API list's first page with a token (API_LISTS): bytes, p50 and p95.

Then one more poll, with one port made hot and one cable cut in the emulator, while a websocket
client subscribed to "fabric.overview" waits for the poll's delta: its size on the wire, and how
many switch and group rows it carries (the page applies it in place; it never re-reads itself).
The JSON ends with "targets": each page and API list under 1 MB and 500 ms p50, the fabric
overview under 300 kB, and the delta under 50 kB, true or false.

REDIS_URL is required: the server and this process share the Redis channel layer (so the poll
here reaches the server's websockets), and with it the server runs no periodic tasks of its own
(they would poll the SSH driver and skew the timings). The server is killed (its whole process
group) and the database dropped when the run ends, however it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import sys
import threading
import time
from pathlib import Path

from common import MAX_SCALE, analyze_like_autovacuum, percentiles, spec_at_scale
from inventory_api import Server, bench_database_url, drop_database, recreate_database

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "inventory" / "fixtures" / "sakuraone.yaml"
PASSWORD = secrets.token_urlsafe(16)  # a throwaway user in a throwaway database
PAGES = {
    "dashboard": "/",
    "node_list": "/inventory/",
    "fabric_overview": "/fabric/",
    "topology": "/inventory/topology/",
    "validation": "/inventory/validation/",
}
# The other pages an operator opens (issue 28 item 8), each with the fleet's own names filled in
# by `fleet_pages`: a node in the middle of the fleet, and a spine (its port count grows with
# the fleet: the longest switch page). Lists of tickets, jobs, Actions and audit rows grow with
# time, not with the fleet; they are timed as the fleet-sized page frames they are here.
MORE_PAGES = {
    "node_detail": "/inventory/nodes/{node}/",
    "switch_list": "/inventory/switches/",
    "switch_detail_spine": "/inventory/switches/{spine}/",
    "fabric_switch_spine": "/fabric/switches/{spine}/",
    "fabric_switch_ports_spine": "/fabric/switches/{spine}/ports/",
    # The overview's drill-down to the spines' group: eight of the longest switches at once.
    "fabric_overview_spines": "/fabric/?pod=spines",
    "fabric_overview_pod": "/fabric/?pod=p1",
    "rail_health": "/fabric/rail-health/",
    "lldp": "/fabric/lldp/",
    "cable_list": "/inventory/cables/",
    "search_node": "/search/?q={node}",
    "faults_board": "/faults/",
    "ticket_list": "/faults/tickets/",
    "fault_statistics": "/faults/statistics/",
    "job_list": "/jobs/",
    "job_analytics": "/jobs/analytics/",
    "action_list": "/actions/",
    "audit_list": "/audit/",
}
# Each API list's first page as automation reads it (token, default page size).
API_LISTS = {
    "api_nodes": "/api/inventory/nodes/",
    "api_gpus": "/api/inventory/gpus/",
    "api_nics": "/api/inventory/nics/",
    "api_switches": "/api/inventory/switches/",
    "api_ports": "/api/inventory/ports/",
    "api_cables": "/api/inventory/cables/",
    "api_racks": "/api/inventory/racks/",
    "api_fabric_switches": "/api/fabric/switches/",
    "api_fabric_ports": "/api/fabric/ports/",
    "api_fabric_aggregates_switches": "/api/fabric/aggregates/switches/",
    "api_fabric_aggregates_rails": "/api/fabric/aggregates/rails/",
    "api_rail_health_node": "/api/fabric/rail-health/?nodes={node}",
    "api_jobs": "/api/jobs/jobs/",
    "api_tickets": "/api/faults/tickets/",
    "api_actions": "/api/actions/",
    "api_search_node": "/api/search/?q={node}",
}
TARGET_P50_MS = 500.0
TARGET_BYTES = 1_000_000
TARGET_FABRIC_BYTES = 300_000
# One poll's overview delta (issue 28 item 6): the rows it changed visibly, not every row whose
# traffic moved; main sent 211 kB at scale 125.
TARGET_DELTA_BYTES = 50_000


class RedisServer(Server):
    """inventory_api's server, but on the shared Redis (channel layer; no in-process beat)."""

    def __init__(self, database_url: str, pool_size: int = 4):
        import subprocess
        import tempfile

        from inventory_api import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        env.pop("FABRIC_DRIVER", None)  # the server polls nothing; only this process does
        env.update(DATABASE_URL=database_url, DATABASE_POOL_SIZE=str(pool_size),
                   PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING")
        log_fd, log_name = tempfile.mkstemp(prefix="bench-ui-server-", suffix=".log")
        self.log_path = Path(log_name)
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "rundemo", "--port", str(self.port)],
            cwd=ROOT, env=env, stdout=log_fd, stderr=subprocess.STDOUT, start_new_session=True,
        )
        os.close(log_fd)


def log_in(session, base: str, username: str) -> None:
    page = session.get(f"{base}/login/", timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    response = session.post(
        f"{base}/login/",
        data={"username": username, "password": PASSWORD,
              "csrfmiddlewaretoken": token.group(1) if token else ""},
        headers={"Referer": f"{base}/login/"},
        timeout=60,
        allow_redirects=False,
    )
    if response.status_code != 302:
        raise RuntimeError(f"login failed: {response.status_code} {response.text[:300]}")


def time_page(session, url: str, reads: int) -> dict:
    samples, size = [], 0
    for attempt in range(reads + 1):  # the first one warms caches and is not counted
        started = time.perf_counter()
        response = session.get(url, timeout=300)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:300]}")
        size = len(response.content)
        if attempt:
            samples.append(elapsed)
    return {"bytes": size, **percentiles(samples)}


def poll_once(fabric_changes=None) -> dict:
    """One poll of every switch in this process (the emulated driver), on its own thread so
    the websocket client's event loop stays free."""
    from django.db import connection

    from fabric.polling import poll_fabric

    result: dict = {}

    def run():
        try:
            if fabric_changes:
                fabric_changes()
            result["poll"] = poll_fabric().as_dict()
        except Exception as error:  # reported in the JSON, not lost in a thread
            result["error"] = f"{type(error).__name__}: {error}"
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in result:
        raise RuntimeError(result["error"])
    return result["poll"]


async def delta_of_one_poll(server_url: str, token: str, fabric_changes) -> dict:
    """Subscribe to "fabric.overview", poll once, and measure the delta that arrives."""
    import websockets

    url = server_url.replace("http://", "ws://") + "/ws/"
    async with websockets.connect(url, additional_headers={"Authorization": f"Token {token}"},
                                  origin=server_url, max_size=None) as socket:
        await socket.send(json.dumps({"type": "subscribe", "groups": ["fabric.overview"]}))
        while json.loads(await socket.recv()).get("type") != "subscribed":
            pass
        started = time.perf_counter()
        poll = asyncio.get_running_loop().run_in_executor(None, poll_once, fabric_changes)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(socket.recv(), timeout=deadline - time.monotonic())
            message = json.loads(raw)
            events = message.get("events") or [message]
            for event in events:
                if event.get("event") != "fabric.overview":
                    continue
                payload = event["payload"]
                payload = json.loads(payload) if isinstance(payload, str) else payload
                poll_result = await poll
                return {
                    "frame_bytes": len(raw.encode() if isinstance(raw, str) else raw),
                    "switch_rows": len(payload.get("switches", {})),
                    "group_rows": len(payload.get("groups", {})),
                    "counts_sent": "counts" in payload,
                    "seconds_from_poll_start": round(time.perf_counter() - started, 2),
                    "poll_seconds": poll_result["seconds"],
                }
        raise RuntimeError("no fabric.overview event within 600 s")


def run_scale(scale: int, *, reads: int, polls: int, database_url: str) -> dict:
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    recreate_database(database_url)
    call_command("migrate", verbosity=0)

    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric
    from inventory.models import Node, Switch, SwitchPort
    from inventory.topology.importer import import_topology
    from inventory.topology.spec import spec_from_yaml
    from portal.services.accounts import api_token_create, user_create

    spec, copies = spec_at_scale(spec_from_yaml(SPEC.read_text(encoding="utf-8")), scale)
    started = time.perf_counter()
    report = import_topology(spec, scale=copies)
    result: dict = {
        "scale": scale,
        "rows": {label: count.total for label, count in report.counts.items()},
        "import_wall_s": round(time.perf_counter() - started, 2),
        "interfaces": SwitchPort.objects.filter(breakout_mode="").count(),
    }
    user = user_create(username=f"bench-ui-{scale}", role="operator", password=PASSWORD)
    _, token = api_token_create(user=user, name="bench-ui")
    reset_emulated_fabric()
    started = time.perf_counter()
    fabric = build_emulated_fabric()
    result["emulator_boot_s"] = round(time.perf_counter() - started, 2)
    result["polls_s"] = []
    for _ in range(polls):
        result["polls_s"].append(poll_once()["seconds"])
        time.sleep(1)  # rates need time between two samples
    leaf = Switch.objects.filter(role="leaf").order_by("hostname").values_list(
        "hostname", flat=True
    )
    hot_leaf, cut_leaf = list(leaf[:2])
    nodes = list(Node.objects.order_by("hostname_sort_key").values_list("hostname", flat=True))
    names = {"node": nodes[len(nodes) // 2],
             "spine": Switch.objects.filter(role="spine").order_by("hostname")
             .values_list("hostname", flat=True).first()}
    analyze_like_autovacuum()
    connections.close_all()

    def fabric_changes():
        fabric.switches[hot_leaf].set_utilization("Ethernet0", 0.97)
        fabric.switches[cut_leaf].set_link_up("Ethernet0", False)

    import requests

    server = RedisServer(database_url)
    try:
        session = requests.Session()
        server.wait_until_ready(session, timeout=120)
        log_in(session, server.url, user.username)
        result["pages"] = {
            name: time_page(session, server.url + path.format(**names), reads)
            for name, path in {**PAGES, **MORE_PAGES}.items()
        }
        api = requests.Session()
        api.headers["Authorization"] = f"Token {token}"
        result["api_lists"] = {
            name: time_page(api, server.url + path.format(**names), reads)
            for name, path in API_LISTS.items()
        }
        api.close()
        result["fabric_overview_delta"] = asyncio.run(
            delta_of_one_poll(server.url, token, fabric_changes)
        )
        session.close()
    finally:
        server.stop()
        reset_emulated_fabric()
    return result


def verdict(runs: dict) -> dict:
    checks = {}
    for key, run in runs.items():
        for name, page in {**run.get("pages", {}), **run.get("api_lists", {})}.items():
            checks[f"{name}_{key}_p50_under_{TARGET_P50_MS:g}ms"] = page["p50_ms"] < TARGET_P50_MS
            checks[f"{name}_{key}_under_1MB"] = page["bytes"] < TARGET_BYTES
        if "fabric_overview" in run.get("pages", {}):
            checks[f"fabric_overview_{key}_under_300KB"] = (
                run["pages"]["fabric_overview"]["bytes"] <= TARGET_FABRIC_BYTES
            )
        if "fabric_overview_delta" in run:
            checks[f"fabric_overview_delta_{key}_under_{TARGET_DELTA_BYTES // 1000}kB"] = (
                run["fabric_overview_delta"]["frame_bytes"] <= TARGET_DELTA_BYTES
            )
    return {"targets": checks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="20", help="comma-separated, e.g. 20,125 (max 125)")
    parser.add_argument("--reads", type=int, default=10, help="timed requests per page (<=100)")
    parser.add_argument("--polls", type=int, default=2, help="polls before the pages (>=2)")
    parser.add_argument("--database", default="portal_uibench", help="database to (re)create")
    parser.add_argument("--keep-database", action="store_true", help="do not drop it at the end")
    options = parser.parse_args()
    scales = [int(each) for each in options.scales.split(",") if each]
    if not scales or any(scale < 1 or scale > MAX_SCALE for scale in scales):
        parser.error(f"--scales takes numbers from 1 to {MAX_SCALE}")
    if not os.environ.get("REDIS_URL"):
        parser.error("REDIS_URL is required (the server and this process share its channel layer)")
    if options.database in {"portal", "test_portal"} or not options.database.startswith("portal_"):
        parser.error("--database must be a bench database named portal_<something>")
    database_url = bench_database_url(options.database)
    os.environ["DATABASE_URL"] = database_url
    os.environ["FABRIC_DRIVER"] = "fabric.drivers.emulated.EmulatedDriver"  # this process only
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    runs: dict = {}
    try:
        for scale in scales:
            try:
                runs[f"scale_{scale}"] = run_scale(
                    scale, reads=min(options.reads, 100), polls=max(2, options.polls),
                    database_url=database_url,
                )
            except Exception as error:  # reported with the other scale's figures, not lost
                runs[f"scale_{scale}"] = {"scale": scale,
                                          "error": f"{type(error).__name__}: {error}"[:2000]}
    finally:
        from django.db import connections

        connections.close_all()
        if not options.keep_database:
            drop_database(database_url)
    print(json.dumps({"benchmark": "ui_scale", **runs, **verdict(runs)}, indent=2))


if __name__ == "__main__":
    main()

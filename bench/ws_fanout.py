"""Websocket fan-out benchmark (issue 7): N clients on the "cluster" group, R node-state events
per second published on commit, delay from commit to client receipt, and the server's CPU.

    .venv/bin/python bench/ws_fanout.py [--clients 200] [--rate 100] [--seconds 10]

Needs PostgreSQL and Redis on 127.0.0.1 (the test services). It uses a database of its own
(portal_bench_ws), starts the real ASGI server (daphne via manage.py rundemo) with the Redis
channel layer on a free loopback port, and stops it at the end. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PG = "postgresql://postgres@127.0.0.1:5432"
DATABASE = "portal_bench_ws"
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def run(argv: list[str], env: dict) -> str:
    done = subprocess.run(argv, env=env, cwd=REPO, check=True, capture_output=True, text=True)
    return done.stdout


def prepare(env: dict) -> str:
    """A fresh database with the schema and an API user; returns that user's token."""
    admin = {**env, "PGHOST": "127.0.0.1", "PGUSER": "postgres"}
    subprocess.run(["dropdb", "--if-exists", "--force", DATABASE], env=admin, check=True)
    subprocess.run(["createdb", DATABASE], env=admin, check=True)
    run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], env)
    out = run([sys.executable, "manage.py", "create_portal_user", "bench-viewer", "--role",
               "viewer"], env)
    return next(line.split()[-1] for line in out.splitlines() if line.startswith("token:"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def client(url: str, token: str, ready: asyncio.Event, counter: list, delays: list,
                 stop: asyncio.Event) -> None:
    import websockets

    origin = url.replace("ws://", "http://").rsplit("/ws/", 1)[0]  # the origin check wants one
    async with websockets.connect(url, additional_headers={"Authorization": f"Token {token}"},
                                  origin=origin, max_queue=None) as ws:
        await ws.send(json.dumps({"type": "subscribe", "groups": ["cluster"]}))
        while True:
            message = json.loads(await ws.recv())
            if message.get("type") == "subscribed":
                break
        counter[0] += 1
        if counter[0] == counter[1]:
            ready.set()
        while not stop.is_set():
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            received = time.time()
            message = json.loads(raw)
            if message.get("type") == "event":
                delays.append(received - message["payload"]["committed_at"])
            elif message.get("type") == "events":
                delays.extend(received - e["payload"]["committed_at"] for e in message["events"])


def client_worker(url: str, token: str, clients: int, ready, go_home, results) -> None:
    """One process holding `clients` websockets; reports its delays and CPU when told to stop."""

    async def run() -> list[float]:
        ready_event, stop = asyncio.Event(), asyncio.Event()
        counter, delays = [0, clients], []
        tasks = [asyncio.create_task(client(url, token, ready_event, counter, delays, stop))
                 for _ in range(clients)]
        await asyncio.wait_for(ready_event.wait(), timeout=90)
        ready.release()
        while not go_home.is_set():
            await asyncio.sleep(0.2)
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        return delays

    started = time.process_time()
    delays = asyncio.run(run())
    results.put((delays, time.process_time() - started))


def publisher(rate: int, seconds: float) -> int:
    """Publish `rate` node.state events a second, each after a real transaction commits."""
    import django

    django.setup()
    from django.db import connection, transaction

    from portal.realtime import publish

    sent = 0
    interval = 1.0 / rate
    started = time.perf_counter()
    while (now := time.perf_counter()) - started < seconds:
        with transaction.atomic():
            with connection.cursor() as cursor:  # a real write, so there is a commit to wait for
                cursor.execute("SELECT 1")
            publish("cluster", "node.state", {"hostname": f"gpu{sent % 100 + 1:03d}",
                                              "state": "idle", "committed_at": time.time()})
        sent += 1
        time.sleep(max(0.0, started + sent * interval - time.perf_counter()))
        del now
    return sent


def measure(args, token: str, port: int, server_pid: int) -> dict:
    url = f"ws://127.0.0.1:{port}/ws/"
    context = multiprocessing.get_context("spawn")
    ready, go_home, results = context.Semaphore(0), context.Event(), context.Queue()
    shares = [args.clients // args.client_processes + (1 if i < args.clients % args.client_processes
              else 0) for i in range(args.client_processes)]
    workers = [context.Process(target=client_worker, args=(url, token, n, ready, go_home, results))
               for n in shares if n]
    for worker in workers:
        worker.start()
    for _ in workers:
        if not ready.acquire(timeout=120):
            raise RuntimeError("clients did not all connect")
    cpu_before, wall_before = cpu_seconds(server_pid), time.perf_counter()
    sent = publisher(args.rate, args.seconds)
    time.sleep(2.0)  # let the tail arrive
    cpu_used, wall = cpu_seconds(server_pid) - cpu_before, time.perf_counter() - wall_before
    go_home.set()
    delays, client_cpu = [], 0.0
    for _ in workers:
        worker_delays, worker_cpu = results.get(timeout=120)
        delays += worker_delays
        client_cpu += worker_cpu
    for worker in workers:
        worker.join(timeout=30)
    ordered = sorted(delays)

    def percentile(fraction: float) -> float | None:
        if not ordered:
            return None
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000, 1)

    expected = sent * args.clients
    return {
        "benchmark": "ws_fanout",
        "clients": args.clients,
        "client_processes": len(workers),
        "events_per_second": args.rate,
        "seconds": args.seconds,
        "events_published": sent,
        "deliveries_expected": expected,
        "deliveries_received": len(delays),
        "delivery_ratio": round(len(delays) / expected, 4) if expected else None,
        "delay_ms_p50": percentile(0.50),
        "delay_ms_p99": percentile(0.99),
        "delay_ms_max": round(ordered[-1] * 1000, 1) if ordered else None,
        "delay_ms_mean": round(statistics.fmean(ordered) * 1000, 1) if ordered else None,
        "server_cpu_percent_of_one_core": round(100 * cpu_used / wall, 1),
        "bench_clients_cpu_seconds": round(client_cpu, 1),
        "target_p99_ms": 500,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--rate", type=int, default=100, help="events per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--client-processes", type=int, default=2,
                        help="processes the websocket clients are spread over")
    args = parser.parse_args()
    env = {**os.environ, "DATABASE_URL": f"{PG}/{DATABASE}", "REDIS_URL": REDIS_URL,
           "DJANGO_SETTINGS_MODULE": "portal.settings", "LOG_LEVEL": "WARNING"}
    os.environ.update(env)
    sys.path.insert(0, str(REPO))
    token = prepare(env)
    port = free_port()
    log_path = Path(tempfile.gettempdir()) / "ws-fanout-server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "rundemo", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        result = measure(args, token, port, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=20)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

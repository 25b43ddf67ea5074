"""Websocket fan-out benchmark: N clients on the "cluster" group, R node-state events
per second published on commit, delay from commit to client receipt, and the server's CPU.

    .venv/bin/python bench/ws_fanout.py [--clients 200] [--rate 100] [--seconds 10]
    .venv/bin/python bench/ws_fanout.py --soak --clients 200 --seconds 600 --rate 100

Needs PostgreSQL and Redis on 127.0.0.1 (the test services). It uses a database of its own
(portal_bench_ws), starts the real ASGI server (daphne via manage.py rundemo) with the Redis
channel layer on a free loopback port, and stops it at the end. Prints one JSON object.

--soak keeps every socket open for the whole run and counts the ones the server closed, with
idle pauses in the publishing (--pause-seconds every --pause-every seconds; an idle socket is
what used to be closed), and reports against the targets: no unexpected close, every event
delivered, p99 delay under 500 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
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


class DelayTally:
    """Delays from commit to receipt, as a histogram of 0.1 ms buckets: a 10-minute soak at
    200 clients and 100 events/s is 12 million deliveries, too many to keep one by one."""

    BUCKETS_PER_SECOND = 10_000

    def __init__(self) -> None:
        self.histogram: Counter[int] = Counter()
        self.count = 0
        self.total = 0.0
        self.largest = 0.0

    def add(self, delay: float) -> None:
        self.histogram[max(0, round(delay * self.BUCKETS_PER_SECOND))] += 1
        self.count += 1
        self.total += delay
        self.largest = max(self.largest, delay)

    def state(self) -> tuple[dict[int, int], int, float, float]:
        return dict(self.histogram), self.count, self.total, self.largest

    def merge(self, state: tuple[dict[int, int], int, float, float]) -> None:
        histogram, count, total, largest = state
        self.histogram.update(histogram)
        self.count += count
        self.total += total
        self.largest = max(self.largest, largest)

    def percentile_ms(self, fraction: float) -> float | None:
        if not self.count:
            return None
        rank, seen = min(self.count - 1, int(fraction * self.count)), 0
        for bucket in sorted(self.histogram):
            seen += self.histogram[bucket]
            if seen > rank:
                return round(bucket * 1000 / self.BUCKETS_PER_SECOND, 1)
        return None


async def client(url: str, token: str, ready: asyncio.Event, counter: list, tally: DelayTally,
                 closes: list, stop: asyncio.Event) -> None:
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
            except websockets.ConnectionClosed as closed:
                # The server (or the network) ended a socket nobody asked to close.
                closes.append(str(closed.rcvd) if closed.rcvd else "no close frame")
                return
            received = time.time()
            message = json.loads(raw)
            if message.get("type") == "event":
                tally.add(received - message["payload"]["committed_at"])
            elif message.get("type") == "events":
                for event in message["events"]:
                    tally.add(received - event["payload"]["committed_at"])


def client_worker(url: str, token: str, clients: int, ready, go_home, results) -> None:
    """One process holding `clients` websockets; reports its delays, unexpected closes and CPU
    when told to stop."""

    async def run() -> tuple[DelayTally, list[str]]:
        ready_event, stop = asyncio.Event(), asyncio.Event()
        counter, tally, closes = [0, clients], DelayTally(), []
        tasks = [asyncio.create_task(client(url, token, ready_event, counter, tally, closes,
                                            stop))
                 for _ in range(clients)]
        await asyncio.wait_for(ready_event.wait(), timeout=90)
        ready.release()
        while not go_home.is_set():
            await asyncio.sleep(0.2)
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        return tally, closes

    started = time.process_time()
    tally, closes = asyncio.run(run())
    # Plain values: a class of this script pickles under a module name the parent lacks.
    results.put((tally.state(), closes, time.process_time() - started))


def publisher(rate: int, seconds: float, pause_every: float = 0.0,
              pause_seconds: float = 0.0) -> tuple[int, float]:
    """Publish `rate` node.state events a second, each after a real transaction commits; with
    `pause_every`, stop publishing for `pause_seconds` after each `pause_every` seconds.
    Returns the events sent and the seconds spent paused."""
    import django

    django.setup()
    from django.db import connection, transaction

    from portal.realtime import publish

    sent, paused = 0, 0.0
    interval = 1.0 / rate
    started = time.perf_counter()
    next_pause = started + pause_every if pause_every else float("inf")
    while time.perf_counter() - started < seconds:
        if time.perf_counter() >= next_pause:
            pause = min(pause_seconds, started + seconds - time.perf_counter())
            time.sleep(max(0.0, pause))
            paused += max(0.0, pause)
            next_pause += pause_every + pause_seconds
        with transaction.atomic():
            with connection.cursor() as cursor:  # a real write, so there is a commit to wait for
                cursor.execute("SELECT 1")
            publish("cluster", "node.state", {"hostname": f"gpu{sent % 100 + 1:03d}",
                                              "state": "idle", "committed_at": time.time()})
        sent += 1
        # Keep the rate over the publishing time (pauses excluded).
        time.sleep(max(0.0, started + paused + sent * interval - time.perf_counter()))
    return sent, paused


def rss_megabytes(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


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
    rss_before = rss_megabytes(server_pid)
    pause_every, pause_seconds = (args.pause_every, args.pause_seconds) if args.soak else (0, 0)
    sent, paused = publisher(args.rate, args.seconds, pause_every, pause_seconds)
    time.sleep(2.0)  # let the tail arrive
    cpu_used, wall = cpu_seconds(server_pid) - cpu_before, time.perf_counter() - wall_before
    rss_after = rss_megabytes(server_pid)
    go_home.set()
    tally, closes, client_cpu = DelayTally(), [], 0.0
    for _ in workers:
        worker_tally, worker_closes, worker_cpu = results.get(timeout=120)
        tally.merge(worker_tally)
        closes += worker_closes
        client_cpu += worker_cpu
    for worker in workers:
        worker.join(timeout=30)

    expected = sent * args.clients
    delivered_share = round(tally.count / expected, 6) if expected else None
    result = {
        "benchmark": "ws_fanout_soak" if args.soak else "ws_fanout",
        "clients": args.clients,
        "client_processes": len(workers),
        "events_per_second": args.rate,
        "seconds": args.seconds,
        "events_published": sent,
        "deliveries_expected": expected,
        "deliveries_received": tally.count,
        "delivery_ratio": delivered_share,
        "delay_ms_p50": tally.percentile_ms(0.50),
        "delay_ms_p99": tally.percentile_ms(0.99),
        "delay_ms_max": round(tally.largest * 1000, 1) if tally.count else None,
        "delay_ms_mean": round(tally.total / tally.count * 1000, 1) if tally.count else None,
        "server_cpu_percent_of_one_core": round(100 * cpu_used / wall, 1),
        "server_rss_mb_before_after": [rss_before, rss_after],
        "bench_clients_cpu_seconds": round(client_cpu, 1),
        "target_p99_ms": 500,
    }
    if args.soak:
        p99 = result["delay_ms_p99"]
        result.update({
            "idle_pauses": f"{pause_seconds} s every {pause_every} s",
            "seconds_paused": round(paused, 1),
            "unexpected_closes": len(closes),
            "close_codes": dict(Counter(closes)),
            "delivered_share_percent": round(100 * delivered_share, 4) if expected else None,
            "targets_met": {
                "no_unexpected_close": not closes,
                "every_event_delivered": tally.count == expected,
                "p99_under_500_ms": p99 is not None and p99 < 500,
            },
        })
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--rate", type=int, default=100, help="events per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--client-processes", type=int, default=2,
                        help="processes the websocket clients are spread over")
    parser.add_argument("--soak", action="store_true",
                        help="count unexpected closes, pause publishing now and then")
    parser.add_argument("--pause-every", type=float, default=30.0,
                        help="soak: seconds of publishing between idle pauses")
    parser.add_argument("--pause-seconds", type=float, default=8.0,
                        help="soak: length of each idle pause (longer than Redis's 5 s pop)")
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

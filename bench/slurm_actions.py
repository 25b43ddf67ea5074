"""Drain latency through the portal's Action pipeline against the real Slurm 22.05 test cluster,
compared with a bare `scontrol update` in the same run.

    .venv/bin/python bench/slurm_actions.py [--iterations 30] [--keep-cluster]

Portal path, per sample: jobs.services.request_drain() called in a process of the portal's
own (as a web server calls it for an operator; the bench's `sinfo` polling shares no
interpreter with it): Action row + audit + event, committed; then that process's Action runner
claims the row and calls the CLI driver's `scontrol update` (issue 28: no broker hop for a
drain), until `sinfo` shows the node drained. A real Celery worker runs beside it, as in
production, for what follows the drain (the node-state sync). Bare path: `scontrol update ...
State=DRAIN` from this process, waited for, until `sinfo` shows the same (the yardstick issue 28
set its 2x target against). A third path, `bare_scontrol_polled_beside`, starts `scontrol
update` without waiting and polls `sinfo` beside it from that moment, as the bench polls beside
the portal's drain: slurmctld applies the update before `scontrol` exits, so that poll often
sees the drain sooner than the waited path's first `sinfo`; its ratio is printed too, as the
stricter reading. The paths alternate on the same nodes; after each sample the node is resumed
by hand and left to settle. Prints one JSON document (milliseconds).

Needs root and MariaDB (scripts/slurm-up starts the cluster if it is not up, and this script
stops it again unless it was already running or --keep-cluster), PostgreSQL at DATABASE_URL's
server (default postgresql://postgres@127.0.0.1:5432/; the database `portal_bench_slurm` is
created and dropped) and Redis at REDIS_URL (default redis://127.0.0.1:6379/14). The worker runs
in its own process group and is killed when the run ends, however it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from pathlib import Path

from common import percentiles, stop_process_group

ROOT = Path(__file__).resolve().parents[1]
SLURM_UP = ROOT / "scripts" / "slurm-up"
SLURM_DOWN = ROOT / "scripts" / "slurm-down"
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"
CLUSTER_NODES = 20
TARGET_OVERHEAD_RATIO = 2.0
SAMPLE_TIMEOUT_S = 30.0


def database_url(name: str) -> str:
    base = urllib.parse.urlsplit(os.environ.get("DATABASE_URL") or DEFAULT_SERVER)
    return urllib.parse.urlunsplit((base.scheme, base.netloc, f"/{name}", "", ""))


def _admin(url: str):
    import psycopg

    parts = urllib.parse.urlsplit(url)
    admin = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/postgres", "", ""))
    return psycopg.connect(admin, autocommit=True), parts.path.lstrip("/")


def recreate_database(url: str) -> None:
    connection, name = _admin(url)
    with connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    connection, name = _admin(url)
    with connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def controller_running(state_dir: Path) -> bool:
    try:
        pid = int((state_dir / "run" / "slurmctld.pid").read_text().strip())
        return Path(f"/proc/{pid}/comm").read_text().strip() == "slurmctld"
    except (OSError, ValueError):
        return False


def slurm_up() -> dict:
    proc = subprocess.run(
        [str(SLURM_UP)],
        env={**os.environ, "SLURM_TEST_NODES": str(CLUSTER_NODES)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/slurm-up failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class Slurm:
    """Slurm's own clients for the bare path and for observing, with the cluster's SLURM_CONF."""

    def __init__(self, conf: str):
        self.env = {**os.environ, "SLURM_CONF": conf}

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=60, check=False
        )

    def short_state(self, node: str) -> str:
        """sinfo's compact state: idle, drain (drained), drng (draining), idle* (not responding)."""
        return self.run("sinfo", "-h", "-N", "-p", "gpu", "-n", node, "-o", "%t").stdout.strip()

    def wait_for(self, node: str, predicate, what: str) -> None:
        deadline = time.monotonic() + SAMPLE_TIMEOUT_S
        while not predicate(self.short_state(node)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node}: timed out waiting for {what}")

    def drain_argv(self, node: str, reason: str) -> list[str]:
        return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f'Reason="{reason}"']

    def drain(self, node: str, reason: str) -> None:
        """`scontrol update` to its end (the bench waits for it before polling)."""
        result = self.run(*self.drain_argv(node, reason))
        if result.returncode != 0:
            raise RuntimeError(f"scontrol update failed: {result.stderr}")

    def start_drain(self, node: str, reason: str) -> subprocess.Popen:
        """`scontrol update` started, not waited for: the poll runs beside it, as beside the
        portal's drain."""
        return subprocess.Popen(
            self.drain_argv(node, reason), env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    @staticmethod
    def finished(process: subprocess.Popen) -> None:
        _, stderr = process.communicate(timeout=60)
        if process.returncode != 0:
            raise RuntimeError(f"scontrol update failed: {stderr}")

    def restore(self, node: str) -> None:
        self.run("scontrol", "update", f"NodeName={node}", "State=RESUME")
        self.wait_for(node, lambda state: state == "idle", "idle after resume")


class Worker:
    """`celery worker` against the bench database, in its own process group."""

    def __init__(self):
        log_fd, log_name = tempfile.mkstemp(prefix="bench-slurm-worker-", suffix=".log")
        self.log_path = Path(log_name)
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "portal", "worker",
                "-Q", "default,actions,periodic", "--pool", "prefork", "--concurrency", "1",
                "--without-gossip", "--without-mingle", "--without-heartbeat",
                "-n", "bench@%h", "--loglevel", "INFO",  # INFO: the " ready." line
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "WARNING"},
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        os.close(log_fd)

    def wait_until_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited:\n{self.log_path.read_text()}")
            if " ready." in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.1)
        raise RuntimeError(f"worker not ready after {timeout}s")

    def stop(self) -> None:
        stop_process_group(self.process, timeout=15)
        self.log_path.unlink(missing_ok=True)


def timed_drain(slurm: Slurm, node: str, start_drain) -> float:
    """Milliseconds from start_drain() until sinfo shows the node drained."""
    started = time.perf_counter()
    start_drain()
    slurm.wait_for(node, lambda state: state.startswith("drain"), "DRAIN")
    return (time.perf_counter() - started) * 1000


def run(iterations: int, warmup: int, rotation: int, slurm: Slurm) -> dict:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)
    from inventory.models import Node
    from portal.celery import app
    from portal.models import Action, ActionAttempt, ActionStatus

    names = [f"gpu{i:03d}" for i in range(1, rotation + 1)]
    Node.objects.bulk_create([Node(hostname=name) for name in names])
    app.control.purge()
    connections.close_all()
    for name in names:
        slurm.restore(name)

    worker, requester = Worker(), Requester()
    try:
        worker.wait_until_ready()
        portal, bare, bare_beside, actions = [], [], [], []
        moments: dict[int, tuple[float, float, float]] = {}
        for sample in range(warmup + iterations):
            name = names[sample % rotation]
            reason = f"bench sample {sample}"
            holder = {}

            def through_portal(name=name, reason=reason, holder=holder):
                holder.update(requester.drain(name, reason))

            portal_ms = timed_drain(slurm, name, through_portal)
            seen = time.time()
            action = Action.objects.get(pk=holder["action"])
            deadline = time.monotonic() + SAMPLE_TIMEOUT_S
            while action.status != ActionStatus.SUCCEEDED and time.monotonic() < deadline:
                time.sleep(0.01)
                action.refresh_from_db()
            if action.status != ActionStatus.SUCCEEDED:
                raise RuntimeError(f"Action #{action.pk} is {action.status}: {action.last_error}")
            slurm.restore(name)
            bare_ms = timed_drain(slurm, name, lambda name=name: slurm.drain(name, "bench bare"))
            slurm.restore(name)
            started = {}

            def bare_drain(name=name, started=started):
                started["process"] = slurm.start_drain(name, "bench bare, polled beside")

            beside_ms = timed_drain(slurm, name, bare_drain)
            slurm.finished(started["process"])
            slurm.restore(name)
            if sample >= warmup:
                portal.append(portal_ms)
                bare.append(bare_ms)
                bare_beside.append(beside_ms)
                actions.append(action.pk)
                moments[action.pk] = (holder["asked"], holder["returned"], seen)
        rows = Action.objects.filter(pk__in=actions)
        attempts = sorted({a.attempts for a in rows})
        where = Counter(ActionAttempt.objects.filter(action__in=actions)
                        .values_list("worker", flat=True))
        # Where the portal's time goes, on one wall clock (this process and the requesting one
        # share the host). The request writes the Action already claimed by its process
        # (issue 28), whose runner calls `scontrol update` once it has committed: its own call
        # (row, attempt, audit, ticket links, commit, the Action handed on; the runner starts
        # beside its return), then until the finish is recorded, and until `sinfo` shows it.
        stages = {"request_call": [], "asked_to_finish_recorded": [], "asked_to_seen": []}
        for a in rows:
            asked, returned, seen_at = moments[a.pk]
            stages["request_call"].append((returned - asked) * 1000)
            stages["asked_to_finish_recorded"].append((a.finished_at.timestamp() - asked) * 1000)
            stages["asked_to_seen"].append((seen_at - asked) * 1000)
    finally:
        requester.stop()
        worker.stop()
        connections.close_all()
    portal_stats, bare_stats = percentiles(portal), percentiles(bare)
    beside_stats = percentiles(bare_beside)
    return {
        "portal_drain": portal_stats,
        "bare_scontrol_drain": bare_stats,
        "portal_over_bare_p50": round(portal_stats["p50_ms"] / bare_stats["p50_ms"], 2),
        "portal_over_bare_p95": round(portal_stats["p95_ms"] / bare_stats["p95_ms"], 2),
        # The bare drain observed as the portal's is: polled from its start, not after it.
        "bare_scontrol_polled_beside": beside_stats,
        "portal_over_bare_polled_beside_p50": round(
            portal_stats["p50_ms"] / beside_stats["p50_ms"], 2),
        "portal_breakdown": {
            "attempts_per_action": attempts,
            "attempts_by_runner": {
                ("where queued" if worker.endswith("(where queued)") else "a worker"): count
                for worker, count in where.items()},
            **{name: percentiles(values) for name, values in stages.items()},
        },
    }


class Requester:
    """A process of the portal's own that calls request_drain() for this one, as a web server
    does for an operator: what the portal does after the request (a drain run where it was
    queued, its finish) shares no interpreter with this process's `sinfo` polling."""

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-drains"],
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def drain(self, name: str, reason: str) -> dict:
        """{"action": id, "asked": t, "returned": t}: request_drain() called and returned."""
        self.process.stdin.write(json.dumps({"node": name, "reason": reason}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("the requesting process ended")
        return json.loads(answer)

    def stop(self) -> None:
        self.process.stdin.close()  # it finishes what it runs and exits
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop_process_group(self.process, timeout=5)


def serve_drains() -> None:
    """The Requester's side: one JSON line in per drain, one out once request_drain() returned."""
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from inventory.models import Node
    from jobs.services import request_drain

    nodes = {node.hostname: node for node in Node.objects.all()}  # as a view has its node
    for line in sys.stdin:
        asked = json.loads(line)
        started = time.time()
        action, _ = request_drain(nodes=[nodes[asked["node"]]], reason=asked["reason"])
        print(json.dumps({"action": action.pk, "asked": started, "returned": time.time()}),
              flush=True)


def main() -> None:
    if sys.argv[1:] == ["--serve-drains"]:
        serve_drains()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=30, help="timed samples per path")
    parser.add_argument("--warmup", type=int, default=3, help="untimed samples first")
    parser.add_argument("--rotation", type=int, default=8, help="nodes the samples rotate over")
    parser.add_argument("--database", default="portal_bench_slurm")
    parser.add_argument("--keep-cluster", action="store_true")
    args = parser.parse_args()
    if not args.database.startswith("portal_bench"):
        parser.error("--database must start with portal_bench (it is dropped afterwards)")
    if not 1 <= args.rotation <= CLUSTER_NODES or args.iterations < 1 or args.warmup < 0:
        parser.error(f"--iterations >= 1, --warmup >= 0, --rotation 1..{CLUSTER_NODES}")

    state_dir = Path(os.environ.get("SLURM_TEST_DIR", "/tmp/portal-slurm"))
    was_running = controller_running(state_dir)
    info = slurm_up()
    url = database_url(args.database)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DATABASE_URL": url,
            "REDIS_URL": os.environ.get("REDIS_URL") or DEFAULT_REDIS,
            "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
            "SLURM_CONF": info["conf"],
            "LOG_LEVEL": "WARNING",
        }
    )
    sys.path.insert(0, str(ROOT))
    slurm = Slurm(info["conf"])
    recreate_database(url)
    started = time.monotonic()
    load_before = [round(value, 2) for value in os.getloadavg()]
    try:
        results = run(args.iterations, args.warmup, args.rotation, slurm)
    finally:
        drop_database(url)
        if not was_running and not args.keep_cluster:
            subprocess.run([str(SLURM_DOWN)], capture_output=True, timeout=300, check=False)
    report = {
        "benchmark": "slurm_actions",
        "what": "drain latency: request -> sinfo shows DRAIN, real slurmctld (Slurm 22.05)",
        "portal_entry": "jobs.services.request_drain (the API view's service call)",
        "cluster_nodes": info["nodes"],
        "iterations": args.iterations,
        **results,
        "target": {
            "portal_over_bare_p50_max": TARGET_OVERHEAD_RATIO,
            "met": results["portal_over_bare_p50"] <= TARGET_OVERHEAD_RATIO,
        },
        "wall_s": round(time.monotonic() - started, 1),
        # Latencies here are mostly process starts and scheduling: read them with the load.
        "cpu_count": os.cpu_count(),
        "load_average_1_5_15_before": load_before,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

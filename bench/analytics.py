"""Workload analytics over 1,000,000 jobs in PostgreSQL: each observation's time.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/ .venv/bin/python bench/analytics.py

(Re)creates the database `portal_bench_analytics` on the server of DATABASE_URL (never the demo
or test database), migrates it, loads the jobs with COPY, VACUUM ANALYZEs the table (what
autovacuum does after a bulk load), then times, as an operator who sees every job:
- each observation on its own (states, node buckets with percentiles, GPU counts, daily
  submissions) and the whole answer (`workload_analytics`), over a year holding every job and
  over the default 90 days;
- the whole answer for one tenant's admin (a twentieth of the jobs).
Prints JSON per measurement: wall-clock milliseconds (median and p95 of --repeat runs) and the
PostgreSQL backend's CPU milliseconds (median; read from /proc/<pid>/stat, so only when the
server runs on this machine), and whether each observation stays under the issue's 1 s. Parallel
query is turned off for the session so that the backend's CPU time is all the work done: on a
shared machine wall time says more about the neighbours than about the query, CPU time does not.
- Observation 3 (GPU utilisation per job size) over every finished GPU job, as the portal
  answers it: one aggregate over the jobs' stored utilisation summaries (telemetry/README.md).
  Each finished GPU job gets a synthetic summary row, as the periodic task would have stored;
  asking Prometheus for them is the task's cost, timed by bench/telemetry.py.

The synthetic workload follows the paper's shapes: most jobs take one node, a few take 64+;
1-node jobs take 1, 2, 4 or 8 GPUs (a few 3); 5 % are CPU-only; 12 % are cancelled before they
start; 1 % run now and 1 % wait.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import urllib.parse
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/"
TARGET_MS = 1000.0
FIRST_DAY = date(2025, 1, 1)
DAYS = 365
NODE_COUNTS = (1,) * 60 + (2,) * 12 + (4,) * 10 + (8,) * 8 + (16,) * 5 + (32,) * 3 + (64,) * 1 + (
    96,
)
SINGLE_NODE_GPUS = (1,) * 30 + (2,) * 15 + (4,) * 15 + (8,) * 35 + (3,) * 5
FINAL_STATES = ("COMPLETED",) * 60 + ("FAILED",) * 15 + ("CANCELLED",) * 12 + ("TIMEOUT",) * 8 + (
    "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "NODE_FAIL",
)
COLUMNS = (
    "job_id", "name", "user", "account", "partition", "state", "state_reason", "exit_code",
    "signal", "submit_time", "start_time", "end_time", "elapsed_seconds", "gpus", "node_count",
    "nodelist", "tenant_id", "gpu_seconds", "source", "first_seen_at", "updated_at",
)


def bench_database_url(name: str) -> str:
    base = urllib.parse.urlsplit(os.environ.get("DATABASE_URL") or DEFAULT_SERVER)
    return urllib.parse.urlunsplit((base.scheme, base.netloc, f"/{name}", "", ""))


def _admin_url(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return (urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/postgres", "", "")),
            parts.path.lstrip("/"))


def recreate_database(url: str) -> None:
    import psycopg

    admin, name = _admin_url(url)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    admin, name = _admin_url(url)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def synthetic_rows(count: int, tenant_ids: list[int], seed: int):
    """One tuple per job in COLUMNS order."""
    rng = random.Random(seed)
    origin = datetime.combine(FIRST_DAY, datetime.min.time(), tzinfo=UTC)
    last = origin + timedelta(days=DAYS)
    loaded_at = last
    step = DAYS * 86400 / count
    for number in range(count):
        # In submit order, as a cluster writes them (rows of one week share table pages).
        submit = origin + timedelta(seconds=int(number * step) + rng.randrange(600))
        nodes = rng.choice(NODE_COUNTS)
        gpus = rng.choice(SINGLE_NODE_GPUS) if nodes == 1 else 8 * nodes
        if rng.random() < 0.05:
            gpus = 0
        draw = rng.random()
        tenant = tenant_ids[number % len(tenant_ids)]
        start = end = elapsed = gpu_seconds = None
        if draw < 0.01:
            state, start = "PENDING", None
            nodes_held = 0
        elif draw < 0.02:
            state = "RUNNING"
            start = min(submit + timedelta(seconds=rng.randrange(3600)), last)
            nodes_held = nodes
        elif draw < 0.14:
            state, nodes_held = "CANCELLED", 0
            end = submit + timedelta(seconds=rng.randrange(1, 7200))
            elapsed, gpu_seconds = 0, 0
        else:
            state, nodes_held = rng.choice(FINAL_STATES), nodes
            start = submit + timedelta(seconds=rng.randrange(7200))
            elapsed = int(rng.lognormvariate(8, 2)) % (20 * 86400) + 1
            end = start + timedelta(seconds=elapsed)
            gpu_seconds = elapsed * gpus
        yield (
            str(1_000_000 + number), "bench", f"user{number % 500}", f"account{tenant}", "gpu",
            state, "", 0 if end else None, 0 if end else None, submit, start, end, elapsed, gpus,
            nodes_held, "", tenant, gpu_seconds, "squeue" if end is None else "sacct",
            loaded_at, loaded_at,
        )


def load(count: int, seed: int) -> float:
    from django.db import connection

    from portal.models import Tenant

    tenants = Tenant.objects.bulk_create(
        Tenant(name=f"Tenant {n}", slug=f"tenant-{n}", slurm_account=f"account{n}",
               evpn_vni=20000 + n)
        for n in range(20)
    )
    tenant_ids = [tenant.pk for tenant in tenants]
    started = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.connection
        names = ", ".join(f'"{column}"' for column in COLUMNS)
        copy_sql = f"COPY jobs_job ({names}) FROM STDIN"
        with raw.cursor() as copy_cursor, copy_cursor.copy(copy_sql) as copy:
            for row in synthetic_rows(count, tenant_ids, seed):
                copy.write_row(row)
        raw.commit()
    load_seconds = time.perf_counter() - started
    with raw.cursor() as summaries:
        # What telemetry.services.summarise_finished_jobs would have stored for each finished
        # GPU job; a tenth without samples (before Prometheus's retention).
        summaries.execute("SELECT setseed(0.16)")
        # Each row carries the job's columns telemetry copies beside it (end, node-count
        # bucket, GPU time, tenant), as telemetry.services.record_finished_jobs writes them.
        # bucket_sql() is made of SIZE_BUCKETS' integers, nothing from outside.
        summaries.execute(
            "INSERT INTO telemetry_jobutilisationsummary "  # noqa: S608
            "(job_id, mean_percent, low_share, gpus_reporting, summarised_at, settled, "
            "end_time, node_bucket, gpu_time_weight, tenant_id) "
            "SELECT id, mean, CASE WHEN mean IS NULL THEN NULL ELSE random() END, gpus, now(), "
            f"true, end_time, {bucket_sql()}, COALESCE(gpu_seconds, elapsed_seconds * gpus, 0), "
            "tenant_id FROM (SELECT *, "
            "CASE WHEN random() < 0.1 THEN NULL ELSE random() * 100 END AS mean "
            "FROM jobs_job) AS jobs "
            "WHERE gpus > 0 AND end_time IS NOT NULL "
            "AND state NOT IN ('RUNNING', 'PENDING', 'COMPLETING', 'CONFIGURING', 'SUSPENDED')"
        )
    raw.commit()
    raw.autocommit = True  # VACUUM cannot run in a transaction; Django's default anyway
    with raw.cursor() as vacuum:
        vacuum.execute("VACUUM ANALYZE jobs_job")
        vacuum.execute("VACUUM ANALYZE telemetry_jobutilisationsummary")
    return load_seconds


def bucket_sql() -> str:
    """jobs.buckets.SIZE_BUCKETS as SQL over node_count: the bucket's index, -1 for none."""
    from jobs.buckets import SIZE_BUCKETS

    whens = " ".join(
        f"WHEN node_count >= {bucket.min_nodes}"
        + (f" AND node_count <= {bucket.max_nodes}" if bucket.max_nodes is not None else "")
        + f" THEN {index}"
        for index, bucket in enumerate(SIZE_BUCKETS)
    )
    return f"CASE {whens} ELSE -1 END"


def backend_cpu_seconds() -> float | None:
    """utime + stime of this connection's PostgreSQL backend, if it runs on this machine."""
    from django.db import connection

    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(function, repeat: int) -> dict:
    samples, cpu = [], []
    for _ in range(repeat):
        cpu_before = backend_cpu_seconds()
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
        cpu_after = backend_cpu_seconds()
        if cpu_before is not None and cpu_after is not None:
            cpu.append((cpu_after - cpu_before) * 1000)
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1),
        "max_ms": round(ordered[-1], 1),
        "backend_cpu_median_ms": round(statistics.median(cpu)) if cpu else None,
    }


def measure(user, period, repeat: int, observations: bool = True,
            observation3: bool = False, whole_answer: bool = True) -> dict:
    from jobs import analytics

    now = datetime.combine(FIRST_DAY + timedelta(days=DAYS), datetime.min.time(), tzinfo=UTC)
    selected = analytics.period_jobs(user=user, period=period, now=now)
    results = {}
    def tuned(function, *args):
        # As workload_analytics runs each: inside its tuned transaction.
        def run():
            with analytics.tuned_for_analytics():
                function(*args)
        return run

    if observations:
        in_period, until = selected.in_period, selected.counted_until
        results = {
            "states": timed(tuned(analytics.state_shares, in_period, until), repeat),
            "sizes_and_runtime_percentiles": timed(
                tuned(analytics.size_buckets, in_period, until), repeat),
            "gpu_counts": timed(tuned(analytics.gpu_counts, in_period, until), repeat),
            "daily_submissions": timed(
                tuned(analytics.daily_submissions, selected.jobs, period), repeat),
        }
    if whole_answer:
        results["whole_answer"] = timed(
            lambda: analytics.workload_analytics(user=user, period=period, now=now), repeat
        )
    if observations or observation3:
        from telemetry import selectors

        answer = selectors.observation3(user=user, period=period, now=now)
        assert answer["available"] and answer["jobs_not_summarised"] == 0, answer["message"]
        results["observation3"] = timed(
            lambda: selectors.observation3(user=user, period=period, now=now), repeat
        )
        results["observation3_jobs"] = answer["jobs"]
    results["jobs_in_period"] = selected.in_period.count()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--database", default="portal_bench_analytics")
    parser.add_argument("--keep-database", action="store_true")
    parser.add_argument("--observation3-only", action="store_true",
                        help="time only Observation 3 (operator: year, 90 days; tenant admin)")
    options = parser.parse_args()
    only3 = options.observation3_only
    if not options.database.startswith("portal_bench"):
        parser.error("--database must be a bench database named portal_bench<something>")
    database_url = bench_database_url(options.database)
    os.environ["DATABASE_URL"] = database_url
    os.environ.pop("REDIS_URL", None)
    # Observation 3 needs a telemetry driver configured; with every job summarised it asks
    # Prometheus nothing (the bench asserts so), so nothing needs to listen there.
    os.environ["PROMETHEUS_URL"] = "http://127.0.0.1:9"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    recreate_database(database_url)
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        from jobs.analytics import Period
        from portal.models import Role, Tenant
        from portal.services.accounts import user_create

        call_command("migrate", verbosity=0)
        load_seconds = load(options.jobs, options.seed)
        with connection.cursor() as cursor:
            cursor.execute("SET max_parallel_workers_per_gather = 0")
        operator = user_create(username="bench-operator", role=Role.OPERATOR)
        tenant_admin = user_create(username="bench-tenant-admin", role=Role.TENANT_ADMIN,
                                   tenant=Tenant.objects.order_by("pk").first())
        whole_year = Period(FIRST_DAY, FIRST_DAY + timedelta(days=DAYS - 1))
        last_90_days = Period(FIRST_DAY + timedelta(days=DAYS - 91),
                              FIRST_DAY + timedelta(days=DAYS - 1))
        runs = {
            "operator_whole_year": measure(operator, whole_year, options.repeat,
                                           observations=not only3, observation3=True,
                                           whole_answer=not only3),
            "operator_last_90_days": measure(operator, last_90_days, options.repeat,
                                             observations=not only3, observation3=True,
                                             whole_answer=not only3),
            "tenant_admin_whole_year": measure(tenant_admin, whole_year, options.repeat,
                                               observations=False, observation3=True,
                                               whole_answer=not only3),
        }
    finally:
        from django.db import connections

        connections.close_all()
        if not options.keep_database:
            drop_database(database_url)
    under = {
        f"{run}.{name}": {
            "wall_p95": values["p95_ms"] < TARGET_MS,
            "backend_cpu": None if values["backend_cpu_median_ms"] is None
            else values["backend_cpu_median_ms"] < TARGET_MS,
        }
        for run, results in runs.items()
        for name, values in results.items()
        if isinstance(values, dict) and name != "whole_answer"
    }
    print(json.dumps({
        "benchmark": "analytics",
        "jobs": options.jobs,
        "load_average_at_end": [round(value, 2) for value in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "copy_load_s": round(load_seconds, 1),
        "runs": runs,
        f"each_observation_p95_under_{TARGET_MS:g}ms": under,
    }, indent=2))


if __name__ == "__main__":
    main()

"""One workload fixture for comparing analytics across databases.

`load()` writes the same jobs wherever it runs: in the PostgreSQL test database of the suite, and
in an embedded-default SQLite database of a subprocess (`manage.py shell -c "...; main()"`), which
prints `snapshot()` as JSON. Runtimes repeat on purpose (ties), some jobs lack an elapsed time or
a stored GPU time, some are live, unsized, or ended outside the period, some running ones come
from a trace taken before, inside or after the period (`observed_until`), and the buckets hold
different numbers of jobs, so every percentile position rule and edge is exercised.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, date, datetime, timedelta

from jobs.analytics import KNOWN_FINAL_STATES, Period, workload_analytics
from jobs.models import Job
from portal.models import Role, Tenant
from portal.services.accounts import user_create

SEED = 20260113
PERIOD = Period(date(2026, 1, 1), date(2026, 1, 31))
TENANTS = (
    ("Fixture A", "fixture-a", "fixture-a", 19100),
    ("Fixture B", "fixture-b", "fixture-b", 19200),
)
# Node counts across every bucket and its edges, weighted so bucket sizes differ (1 is common,
# 65+ rare) like the paper's Figure 4; 0 is a job cancelled while pending.
NODE_COUNTS = (0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4, 4, 5, 8, 8, 9, 16, 17, 32, 33, 64, 65, 96)
# A few coarse runtimes plus random ones: ties at the percentile positions matter.
COMMON_RUNTIMES = (60, 600, 3600, 3600, 86400, 7 * 86400, 7 * 86400 + 1)
JOB_COUNT = 600


def load() -> None:
    """Create the fixture's tenants, one operator and one tenant admin, and the jobs."""
    rng = random.Random(SEED)
    tenants = [
        Tenant.objects.create(name=name, slug=slug, slurm_account=account, evpn_vni=vni)
        for name, slug, account, vni in TENANTS
    ]
    user_create(username="fixture-operator", role=Role.OPERATOR)
    user_create(username="fixture-tenant-admin", role=Role.TENANT_ADMIN, tenant=tenants[0])
    states = (*KNOWN_FINAL_STATES, "COMPLETED", "COMPLETED", "FAILED", "RUNNING", "PENDING")
    jobs = []
    for index in range(JOB_COUNT):
        state = rng.choice(states)
        nodes = rng.choice(NODE_COUNTS)
        # Starts from mid-December to early February: some end outside the period.
        start = datetime(2025, 12, 20, tzinfo=UTC) + timedelta(seconds=rng.randrange(50 * 86400))
        if rng.random() < 0.5:
            elapsed = rng.choice(COMMON_RUNTIMES)
        else:
            elapsed = rng.randrange(1, 10 * 86400)
        live = state in ("RUNNING", "PENDING")
        known_elapsed = None if live or rng.random() < 0.05 else elapsed
        # Every third running job is from a trace taken 0 to 19 days after it started (drawn
        # from its index, so the random stream, and so the other jobs, stay as they were).
        from_trace = state == "RUNNING" and index % 3 == 0
        jobs.append(
            Job(
                job_id=str(700000 + index),
                account=tenants[index % 2].slurm_account,
                tenant=tenants[index % 2] if rng.random() < 0.9 else None,
                state=state,
                node_count=nodes,
                gpus=8 * nodes,
                elapsed_seconds=known_elapsed,
                gpu_seconds=(8 * nodes * elapsed if not live and rng.random() < 0.7 else None),
                submit_time=start - timedelta(seconds=rng.randrange(3600)),
                start_time=start if state != "PENDING" and nodes else None,
                end_time=None if live else start + timedelta(seconds=elapsed),
                source=Job.Source.SQUEUE if live and not from_trace else Job.Source.SACCT,
                observed_until=start + timedelta(days=index % 20) if from_trace else None,
            )
        )
    Job.objects.bulk_create(jobs)


def snapshot() -> dict:
    """Analytics of the fixture as the operator (all, and one tenant) and the tenant admin."""
    from portal.models import User

    operator = User.objects.get(username="fixture-operator")
    tenant_admin = User.objects.get(username="fixture-tenant-admin")
    return {
        "operator": workload_analytics(user=operator, period=PERIOD),
        "operator_fixture_b": workload_analytics(
            user=operator, period=PERIOD, tenant_slug="fixture-b"
        ),
        "tenant_admin": workload_analytics(user=tenant_admin, period=PERIOD),
    }


def main() -> None:
    """In a fresh database: load the fixture and print its analytics as JSON."""
    load()
    print(json.dumps(snapshot(), sort_keys=True))

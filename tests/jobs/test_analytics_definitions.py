"""The analytics' stated definitions, each share checked against
tests/jobs/analytics_reference.py, which computes it again row by row in plain Python from the
same hand-built jobs: running jobs (from before the period and inside it), jobs cancelled before
they started, CPU-only jobs, jobs spanning the period's start and end, a job whose GPU time is not
stored, a running job that left the queue, and running jobs of imported traces (counted up to
when the trace was taken; left out if it was taken before the period)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.test import Client

from jobs.analytics import Period, workload_analytics
from jobs.models import Job
from portal.models import Role
from tests.jobs.analytics_reference import Spec, expected

API = "/api/jobs/analytics/"
SINCE, UNTIL = date(2026, 1, 1), date(2026, 1, 31)
PERIOD = "since=2026-01-01&until=2026-01-31"


def at(month: int, day: int, hour: int = 10) -> datetime:
    year = 2025 if month == 12 else 2026
    return datetime(year, month, day, hour, tzinfo=UTC)


def finished(job_id, state, nodes, gpus, start, seconds, *, submit=None, **extra) -> Spec:
    return Spec(job_id, state, nodes, gpus, submit or start - timedelta(minutes=30), start,
                start + timedelta(seconds=seconds), **extra)


SPECS = [
    finished("f1", "COMPLETED", 1, 8, at(1, 2), 7200),
    finished("f2", "COMPLETED", 1, 1, at(1, 3), 3600),
    finished("f3", "FAILED", 1, 2, at(1, 3, 14), 600),
    finished("f4", "TIMEOUT", 2, 16, at(1, 4), 86400),
    finished("f5", "COMPLETED", 1, 4, at(1, 5), 1800, store_gpu_seconds=False),
    finished("f6", "OUT_OF_MEMORY", 1, 3, at(1, 6), 900),  # "other"
    finished("f7", "COMPLETED", 9, 72, at(1, 7), 8 * 86400),  # over one week
    # Spans the period's start: submitted and started in December, ended on January 3.
    finished("span-start", "COMPLETED", 4, 32, at(12, 28), 6 * 86400, submit=at(12, 27)),
    # Spans the period's end: submitted and started in January, ended in February.
    finished("span-end", "COMPLETED", 1, 8, at(1, 30), 3 * 86400),
    # Cancelled before it started: asked for 8 GPUs, never got a node.
    Spec("never", "CANCELLED", 0, 8, at(1, 10, 8), None, at(1, 10, 9)),
    # Running since before the period, and since inside it.
    Spec("run-old", "RUNNING", 2, 16, at(12, 19), at(12, 20)),
    Spec("run-new", "RUNNING", 1, 8, at(1, 20, 7), at(1, 20, 8)),
    Spec("run-later", "RUNNING", 1, 8, at(2, 5), at(2, 5)),  # starts after the period
    Spec("left-queue", "RUNNING", 1, 8, at(1, 12), at(1, 12), left_queue=True),
    Spec("pending", "PENDING", 0, 4, at(1, 15)),
    # Running in imported traces: one taken on January 9, one taken before the period.
    Spec("run-trace", "RUNNING", 1, 8, at(1, 8), at(1, 8), observed_until=at(1, 9)),
    Spec("run-old-trace", "RUNNING", 1, 8, at(12, 1), at(12, 1), observed_until=at(12, 5)),
    # CPU-only jobs: left out unless asked for.
    finished("cpu-done", "COMPLETED", 1, 0, at(1, 6), 3600),
    Spec("cpu-run", "RUNNING", 1, 0, at(1, 21), at(1, 21, 11)),
]


@pytest.fixture
def specs(db, tenant_a):
    rows = []
    for spec in SPECS:
        elapsed = spec.elapsed
        rows.append(Job(
            job_id=spec.job_id, state=spec.state, node_count=spec.nodes, gpus=spec.gpus,
            submit_time=spec.submit, start_time=spec.start, end_time=spec.end,
            elapsed_seconds=elapsed,
            gpu_seconds=elapsed * spec.gpus if elapsed is not None and spec.store_gpu_seconds
            else None,
            left_queue_at=at(1, 13) if spec.left_queue else None,
            observed_until=spec.observed_until,
            tenant=tenant_a, account=tenant_a.slurm_account,
            source=Job.Source.SQUEUE if elapsed is None else Job.Source.SACCT,
        ))
    Job.objects.bulk_create(rows)
    return SPECS


def _rows(rows, key):
    return {
        row[key]: {name: row[name] for name in
                   ("count", "running_count", "count_share", "gpu_hours", "gpu_time_share")
                   if name in row}
        for row in rows
    }


def _without_running_count(table):
    return {label: {k: v for k, v in row.items() if k != "running_count"}
            for label, row in table.items()}


@pytest.mark.parametrize("kind", ["gpu", "cpu", "all"])
def test_every_share_matches_the_reference(api_as, specs, kind):
    body = api_as(Role.OPERATOR).get(f"{API}?{PERIOD}&kind={kind}").json()
    # The period is in the past: running jobs are counted up to its end.
    want = expected(specs, SINCE, UNTIL, now=datetime.now(UTC), kind=kind)
    assert body["kind"] == kind
    assert datetime.fromisoformat(body["gpu_time_counted_until"]) == want["counted_until"]
    states = body["states"]
    assert {name: states[name] for name in want["state_totals"]} == want["state_totals"]
    assert _rows(states["rows"], "state") == _without_running_count(want["states"])
    assert {row["state"]: row["running"] for row in states["rows"]} == {
        state: state == "RUNNING" for state in want["states"]
    }
    assert _rows(body["sizes"]["rows"], "bucket") == want["sizes"]
    assert {row["bucket"]: row["finished_count"] for row in body["sizes"]["rows"]} == (
        want["finished_counts"]
    )
    assert {row["bucket"]: row["runtime_seconds"] for row in body["sizes"]["rows"]} == (
        want["percentiles"]
    )
    assert _rows(body["gpu_counts"]["rows"], "gpus") == want["gpu_counts"]
    daily = body["daily_submissions"]
    assert {row["bucket"]: row["counts"] for row in daily["series"]} == want["daily"]


def test_the_fixture_exercises_what_it_claims(specs):
    """Guards the reference against a fixture that stopped testing anything: the shares the
    issue named differ once running and never-started jobs are counted."""
    want = expected(specs, SINCE, UNTIL, now=datetime.now(UTC))
    assert want["state_totals"]["running_count"] == 3  # run-old, run-new, run-trace
    # Running jobs hold a large share of GPU time (the trace: 56-59 %).
    assert want["states"]["RUNNING"]["gpu_time_share"] > 40
    assert want["states"]["CANCELLED"]["count"] == 1  # the job that never started
    assert sum(want["daily"][""]) == 2  # never + pending
    # span-end ended in February (not in the period) but was submitted on January 30.
    assert want["states"]["COMPLETED"]["count"] == 5  # f1, f2, f5, f7, span-start
    assert want["daily"]["1"][29] == 1
    assert want["gpu_counts"]["other"]["count"] == 1
    assert want["gpu_counts"]["more than 8"]["count"] == 4  # f4, f7, span-start, run-old


def test_running_jobs_count_up_to_now_inside_the_period(specs, make_user):
    operator = make_user(Role.OPERATOR)
    now = at(1, 25, 12)
    stats = workload_analytics(user=operator, period=Period(SINCE, UNTIL), now=now)
    want = expected(specs, SINCE, UNTIL, now=now)
    assert stats["gpu_time_counted_until"] == now.isoformat()
    assert _rows(stats["states"]["rows"], "state") == _without_running_count(want["states"])
    # run-old: 16 GPUs from Dec 20 10:00 to Jan 25 12:00; run-new: 8 GPUs from Jan 20 08:00;
    # run-trace: 8 GPUs from Jan 8 10:00 up to its trace, Jan 9 10:00.
    hours = 16 * (36 * 24 + 2) + 8 * (5 * 24 + 4) + 8 * 24
    assert stats["states"]["running_gpu_hours"] == hours == want["state_totals"][
        "running_gpu_hours"]
    assert stats["states"]["running_from_traces"] == {
        "count": 1, "taken_at_earliest": at(1, 9).isoformat(),
        "taken_at_latest": at(1, 9).isoformat(),
    }


def test_bad_kind_is_a_400_naming_the_field(api_as, make_user, db):
    response = api_as(Role.OPERATOR).get(f"{API}?kind=gpus")
    assert response.status_code == 400 and "kind" in response.json()
    page = Client()
    page.force_login(make_user(Role.OPERATOR, username="op-kind"))
    rendered = page.get("/jobs/analytics/?kind=gpus")
    assert rendered.status_code == 400 and "<li>kind: " in rendered.content.decode()


def test_page_states_definitions_marks_running_and_shows_gpu_counts(specs, make_user):
    client = Client()
    client.force_login(make_user(Role.OPERATOR))
    page = client.get(f"/jobs/analytics/?{PERIOD}").content.decode()
    assert "GPU jobs only" in page and "percentile_disc" in page
    assert "max(1, ⌈<i>f</i> \u00d7 <i>n</i>⌉)" in page
    assert '<tr data-state="RUNNING" class="running"><td>RUNNING <span class="muted">' \
           "(running, so far)</span>" in page
    assert 'id="analytics-gpu-counts"' in page and '<tr data-gpus="other">' in page
    assert "Jobs submitted per day" in page and "never started" in page
    cpu_page = client.get(f"/jobs/analytics/?{PERIOD}&kind=cpu").content.decode()
    assert "CPU-only jobs" in cpu_page and '<option value="cpu" selected>' in cpu_page

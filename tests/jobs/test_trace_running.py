"""Running jobs of an imported trace stop where the trace was taken (issue 28, real-data
finding): before, their GPU time grew up to now for as long as nothing closed them, so the same
analytics query answered differently every day. The import records when the dump was taken
(`--taken-at`, else inferred from the file); the live sync resumes counting up to now once
squeue lists the job again; the page and the API say so."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from jobs.analytics import Period, workload_analytics
from jobs.drivers.base import SlurmJob
from jobs.models import Job
from jobs.sync import sync_live_jobs
from portal.models import Role

FIELDS = "JobID|User|Account|Partition|State|Submit|Start|End|Elapsed|NodeList|AllocTRES"
SACCT_ROWS = [
    # Finished on Feb 2; running since Feb 3 00:00, for a day and a half when sacct ran.
    "301|tanaka|tenant-a|gpu|COMPLETED|2025-02-02T08:00:00|2025-02-02T09:00:00|"
    "2025-02-02T11:00:00|02:00:00|gpu001|cpu=1,gres/gpu=8,node=1",
    "302|sato|tenant-a|gpu|RUNNING|2025-02-03T00:00:00|2025-02-03T00:00:00|Unknown|"
    "1-12:00:00|gpu[002-003]|cpu=2,gres/gpu=16,node=2",
]
TAKEN = datetime(2025, 2, 4, 12, tzinfo=UTC)  # 302's start + Elapsed
FEBRUARY = Period(date(2025, 2, 1), date(2025, 2, 28))
CSV_HEADER = "job_id,user,account,state,submit_time,start_time,end_time,node_count,gpus"
CSV_ROWS = [
    "c-1,alice,tenant-a,completed,2025-03-01T08:00:00,2025-03-01T08:00:00,2025-03-01T10:00:00,1,8",
    "c-2,bob,tenant-a,running,2025-03-01T09:00:00,2025-03-01T09:00:00,,1,8",
    "c-3,bob,tenant-a,queued,2025-03-01T12:30:00,,,0,8",
]


def _import(tmp_path, command: str, text: str, *options: str) -> str:
    path = tmp_path / "trace.txt"
    path.write_text(text, encoding="utf-8")
    out = StringIO()
    call_command(command, str(path), *options, stdout=out)
    return out.getvalue()


def import_sacct(tmp_path, *options: str, rows=SACCT_ROWS) -> str:
    return _import(tmp_path, "import_sacct", "\n".join([FIELDS, *rows]) + "\n", *options)


def import_csv(tmp_path, *options: str) -> str:
    return _import(tmp_path, "import_jobs_csv", "\n".join([CSV_HEADER, *CSV_ROWS]) + "\n",
                   *options)


def _analytics(user, now: datetime, period: Period = FEBRUARY) -> dict:
    return workload_analytics(user=user, period=period, now=now)


def test_the_same_query_gives_the_same_answer_on_any_later_day(tmp_path, make_user, tenant_a):
    import_sacct(tmp_path)
    operator = make_user(Role.OPERATOR)
    # Inside February, then after it, then weeks later: the trace says nothing past Feb 4 12:00.
    answers = [_analytics(operator, now) for now in (
        datetime(2025, 2, 10, tzinfo=UTC), datetime(2025, 2, 20, tzinfo=UTC),
        datetime(2025, 6, 1, tzinfo=UTC),
    )]
    for answer in answers:
        answer.pop("gpu_time_counted_until")
    assert answers[0] == answers[1] == answers[2]
    states = answers[0]["states"]
    # 16 GPUs for the 36 hours between its start and the dump, not up to now.
    assert states["running_gpu_hours"] == 16 * 36
    assert states["running_from_traces"] == {
        "count": 1, "taken_at_earliest": TAKEN.isoformat(), "taken_at_latest": TAKEN.isoformat(),
    }
    # Before the trace was taken, the period's end or now still bounds it.
    early = _analytics(operator, datetime(2025, 2, 3, 6, tzinfo=UTC))
    assert early["states"]["running_gpu_hours"] == 16 * 6


def test_sacct_infers_when_the_dump_was_taken_from_a_running_jobs_elapsed(tmp_path, db):
    output = import_sacct(tmp_path)
    assert "1 running job counted up to 2025-02-04T12:00:00+00:00" in output
    assert Job.objects.get(job_id="302").observed_until == TAKEN
    assert Job.objects.get(job_id="301").observed_until is None  # finished: its own end


def test_without_a_running_elapsed_the_latest_time_in_the_file_is_taken(tmp_path, db):
    import_csv(tmp_path)
    # c-3's submit time is the last moment the file mentions.
    assert Job.objects.get(job_id="c-2").observed_until == datetime(2025, 3, 1, 12, 30, tzinfo=UTC)


def test_an_explicit_taken_at_wins_and_cannot_precede_the_file(tmp_path, db):
    import_csv(tmp_path, "--taken-at", "2025-03-02T00:00:00")  # no zone: UTC
    assert Job.objects.get(job_id="c-2").observed_until == datetime(2025, 3, 2, tzinfo=UTC)
    import_sacct(tmp_path, "--taken-at", "2025-02-05T00:00:00+09:00")
    assert Job.objects.get(job_id="302").observed_until == datetime(2025, 2, 4, 15, tzinfo=UTC)
    with pytest.raises(CommandError, match="before 2025-02-04T12:00:00"):
        import_sacct(tmp_path, "--taken-at", "2025-02-04T11:00:00")
    with pytest.raises(CommandError, match="not an ISO 8601 time"):
        import_sacct(tmp_path, "--taken-at", "yesterday")
    # Refused whole: the earlier import's time stands.
    assert Job.objects.get(job_id="302").observed_until == datetime(2025, 2, 4, 15, tzinfo=UTC)


def test_importing_the_same_dump_again_changes_nothing(tmp_path, db):
    import_sacct(tmp_path)
    assert "0 new, 0 updated, 2 unchanged" in import_sacct(tmp_path)


class ListedDriver:
    def __init__(self, *jobs: SlurmJob):
        self.listed = jobs

    def jobs(self):
        return list(self.listed)


def test_a_sync_that_sees_the_job_again_counts_it_up_to_now(tmp_path, make_user, tenant_a):
    import_sacct(tmp_path)
    sync_live_jobs(driver=ListedDriver(SlurmJob(
        job_id="302", name="", user="sato", account="tenant-a", partition="gpu",
        state="RUNNING", node_names=("gpu002", "gpu003"), node_count=2, gpus=16,
        submit_time=datetime(2025, 2, 3, tzinfo=UTC), start_time=datetime(2025, 2, 3, tzinfo=UTC),
    )))
    job = Job.objects.get(job_id="302")
    assert job.observed_until is None and job.is_live
    now = datetime(2025, 2, 10, tzinfo=UTC)
    stats = _analytics(make_user(Role.OPERATOR), now)
    assert stats["states"]["running_gpu_hours"] == 16 * 7 * 24
    assert stats["states"]["running_from_traces"]["count"] == 0


def test_a_period_after_the_trace_was_taken_holds_none_of_its_running_jobs(
    tmp_path, make_user, tenant_a
):
    import_sacct(tmp_path)
    march = _analytics(make_user(Role.OPERATOR), datetime(2025, 6, 1, tzinfo=UTC),
                       Period(date(2025, 3, 1), date(2025, 3, 31)))
    assert march["states"]["total_count"] == 0


def test_the_model_counts_an_imported_running_job_up_to_the_trace(tmp_path, db):
    import_sacct(tmp_path)
    job = Job.objects.get(job_id="302")
    later = TAKEN + timedelta(days=30)
    assert job.runtime_seconds(later) == 36 * 3600
    assert job.gpu_seconds_so_far(later) == 16 * 36 * 3600


def test_the_page_and_the_api_say_where_imported_running_jobs_stop(
    tmp_path, make_user, api_as, tenant_a
):
    import_sacct(tmp_path)
    client = Client()
    client.force_login(make_user(Role.OPERATOR))
    page = client.get("/jobs/analytics/?since=2025-02-01&until=2025-02-28").content.decode()
    assert 'id="analytics-trace-note"' in page
    assert ("1 running job from an imported trace is counted up to 2025-02-04T12:00 UTC, when "
            "it was taken") in page
    body = api_as(Role.OPERATOR).get(
        "/api/jobs/analytics/?since=2025-02-01&until=2025-02-28").json()
    assert body["states"]["running_from_traces"]["count"] == 1
    assert datetime.fromisoformat(
        body["states"]["running_from_traces"]["taken_at_latest"]) == TAKEN

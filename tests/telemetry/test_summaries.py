"""Observation 3 from stored summaries (issue 28 item 3): each finished GPU job's utilisation
is asked of Prometheus once, after its samples settled, and kept; the observation is then one
aggregate in the database. A driver that records what it is asked stands in for Prometheus here
(tests/telemetry/test_prometheus.py runs the same reads against a real one)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from importlib import import_module
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.analytics import analytics_jobs, parse_period
from jobs.drivers.base import FinishedJob
from jobs.hooks import notify_jobs_accounted
from jobs.models import Job
from jobs.sync import import_finished_jobs
from portal.errors import InvalidInput
from portal.models import Role
from telemetry import selectors
from telemetry.drivers.base import JobUtilisation, TelemetryDriver
from telemetry.models import JobUtilisationSummary
from telemetry.services import summarise_finished_jobs

pytestmark = pytest.mark.django_db
NOW = datetime.now(tz=UTC)


class RecordingDriver(TelemetryDriver):
    """Answers job_summaries from `UTILISATION` (job id -> (mean %, share below 20%)) and
    records each call's job ids."""

    UTILISATION: dict[str, tuple[float, float | None]] = {}
    calls: list[list[str] | None] = []

    def __init__(self, url: str):
        self.url = url

    def ping(self):
        return None

    def job_series(self, job_id, start, end, step_seconds):
        return []

    def job_summaries(self, start, end, job_ids=None):
        type(self).calls.append(None if job_ids is None else list(job_ids))
        wanted = self.UTILISATION if job_ids is None else {
            job_id: self.UTILISATION[job_id] for job_id in job_ids if job_id in self.UTILISATION}
        return {job_id: JobUtilisation(job_id=job_id, mean_percent=mean, low_share=low, gpus=8)
                for job_id, (mean, low) in wanted.items()}

    def gpus_in_jobs(self, window_seconds):
        return []


@pytest.fixture
def recording(settings):
    settings.PROMETHEUS_URL = "http://prometheus.invalid"
    settings.TELEMETRY_DRIVER = "tests.telemetry.test_summaries.RecordingDriver"
    settings.TELEMETRY_SUMMARY_SETTLE_SECONDS = 120
    RecordingDriver.calls = []
    RecordingDriver.UTILISATION = {}
    return RecordingDriver


def finished(job_id: str, *, node_count=1, gpus=8, hours=1.0, ended_ago=timedelta(hours=1),
             tenant=None) -> Job:
    end = NOW - ended_ago
    job = Job.objects.create(
        job_id=job_id, user="alice", account="a", tenant=tenant, state="COMPLETED",
        source=Job.Source.SACCT, submit_time=end - timedelta(hours=hours, minutes=1),
        start_time=end - timedelta(hours=hours), end_time=end,
        elapsed_seconds=int(hours * 3600), gpu_seconds=int(hours * 3600) * gpus,
        node_count=node_count, gpus=gpus,
    )
    notify_jobs_accounted([job.pk])  # as the accounting import does
    return job


def test_each_job_is_summarised_once_its_samples_settled(recording):
    recording.UTILISATION = {"1": (10.0, 1.0), "2": (50.0, 0.0)}
    finished("1")
    finished("2", ended_ago=timedelta(seconds=30))  # its last samples may not be scraped yet
    finished("3")  # Prometheus has nothing of it
    run = summarise_finished_jobs(now=NOW)
    assert (run.asked, run.settled, run.without_samples) == (3, 2, 1)
    rows = {row.job.job_id: row for row in JobUtilisationSummary.objects.select_related("job")}
    assert (rows["1"].mean_percent, rows["1"].settled) == (10.0, True)
    assert (rows["2"].mean_percent, rows["2"].settled) == (50.0, False)
    assert (rows["3"].mean_percent, rows["3"].settled) == (None, True)

    # The next run asks only the unsettled job again; then nothing is left.
    recording.calls.clear()
    summarise_finished_jobs(now=NOW + timedelta(minutes=5))
    assert recording.calls == [["2"]]
    recording.calls.clear()
    assert summarise_finished_jobs(now=NOW + timedelta(minutes=6)).asked == 0
    assert recording.calls == []


def test_observation3_reads_stored_summaries_without_asking_prometheus_again(
    recording, make_user
):
    recording.UTILISATION = {"1": (10.0, 1.0), "2": (30.0, 0.0), "4": (95.0, 0.0)}
    finished("1", gpus=8)
    finished("2", gpus=4, hours=0.5)
    finished("3", gpus=8)
    finished("4", node_count=2, gpus=16, hours=2.0)
    summarise_finished_jobs(now=NOW)
    recording.calls.clear()
    period = parse_period(None, None, today=NOW.date())
    answer = selectors.observation3(user=make_user(Role.OPERATOR), period=period, now=NOW)
    assert recording.calls == []  # all summarised: one aggregate in the database
    assert (answer["jobs"], answer["jobs_with_telemetry"], answer["jobs_not_summarised"]) == (
        4, 3, 0)
    rows = {row["bucket"]: row for row in answer["rows"]}
    assert (rows["1"]["jobs"], rows["1"]["jobs_with_telemetry"]) == (3, 2)
    assert rows["1"]["median_mean_percent"] == 10.0  # percentile_disc(0.5) of [10, 30]
    assert rows["1"]["low_gpu_time_percent"] == 80.0  # 8 of 8 + 2 GPU-hours
    assert (rows["2"]["median_mean_percent"], rows["2"]["low_gpu_time_percent"]) == (95.0, 0.0)
    assert rows["3-4"]["jobs"] == 0 and rows["3-4"]["median_mean_percent"] is None


def test_the_database_and_python_aggregates_agree(recording):
    """PostgreSQL's percentile_disc and the embedded default's Python path give the same rows."""
    recording.UTILISATION = {str(n): (float(n * 7 % 100), (n % 5) / 4 if n % 3 else None)
                             for n in range(1, 60)}
    for n in range(1, 60):
        finished(str(n), node_count=1 + n % 5, gpus=8 * (1 + n % 5), hours=0.25 * (1 + n % 7))
    finished("60", node_count=3, gpus=24)  # no summary yet: counted, and counted as pending
    summarise_finished_jobs(jobs=Job.objects.exclude(job_id="60"), now=NOW)
    summaries = JobUtilisationSummary.objects.all()
    in_database = selectors._rows_in_database(summaries)
    in_python = selectors._rows_in_python(summaries)
    assert in_database.keys() == in_python.keys()
    assert sum(row["not_summarised"] for row in in_database.values()) == 1
    for label in in_database:
        database_row, python_row = in_database[label], in_python[label]
        assert database_row["low_gpu_time_percent"] == pytest.approx(
            python_row["low_gpu_time_percent"])
        assert {**database_row, "low_gpu_time_percent": None} == {
            **python_row, "low_gpu_time_percent": None}


def test_jobs_that_just_ended_are_summarised_by_the_request_older_ones_by_the_task(
    recording, make_user, settings
):
    settings.TELEMETRY_SUMMARY_ON_REQUEST = 2
    recording.UTILISATION = {str(n): (40.0, 0.5) for n in range(5)}
    for n in range(5):
        finished(str(n))
    period = parse_period(None, None, today=NOW.date())
    answer = selectors.observation3(user=make_user(Role.OPERATOR), period=period, now=NOW)
    assert recording.calls == []  # jobs that ended an hour ago are the periodic task's
    assert (answer["jobs"], answer["jobs_not_summarised"], answer["jobs_with_telemetry"]) == (
        5, 5, 0)
    assert "5 finished jobs are not summarised yet" in answer["message"]
    summarise_finished_jobs(now=NOW)
    answer = selectors.observation3(user=make_user(Role.OPERATOR), period=period, now=NOW)
    assert (answer["jobs_not_summarised"], answer["jobs_with_telemetry"]) == (0, 5)


def test_a_request_summarises_only_a_few_jobs_that_just_ended(recording, make_user, settings):
    settings.TELEMETRY_SUMMARY_ON_REQUEST = 2
    recording.UTILISATION = {str(n): (40.0, 0.5) for n in range(4)}
    period = parse_period(None, None, today=NOW.date())
    operator = make_user(Role.OPERATOR)
    for n in range(2):
        finished(str(n), ended_ago=timedelta(seconds=10))
    answer = selectors.observation3(user=operator, period=period, now=NOW)
    assert recording.calls == [["0", "1"]]
    assert (answer["jobs_with_telemetry"], answer["jobs_not_summarised"]) == (2, 0)
    recording.calls.clear()
    for n in range(2, 4):  # more than the request may ask for at once: left to the task
        finished(str(n), ended_ago=timedelta(seconds=5))
    JobUtilisationSummary.objects.update(summarised_at=None, mean_percent=None, settled=False)
    answer = selectors.observation3(user=operator, period=period, now=NOW)
    assert recording.calls == [] and answer["jobs_not_summarised"] == 4


# --- issue 28 item 3: Observation 3 from the telemetry side alone ------------------------------


def _accounted(job_id: str, *, account="tenant-a", state="COMPLETED", gpus=8, node_count=1,
               hours=1.0, ended_ago=timedelta(hours=1)) -> FinishedJob:
    end = NOW - ended_ago
    return FinishedJob(
        job_id=job_id, name="train", user="alice", account=account, partition="gpu",
        state=state, exit_code=0, signal=0, submit_time=end - timedelta(hours=hours, minutes=1),
        start_time=end - timedelta(hours=hours), end_time=end,
        elapsed_seconds=int(hours * 3600), gpus=gpus, node_count=node_count,
    )


def test_the_accounting_import_leaves_a_pending_row_beside_each_finished_gpu_job(
    recording, tenant_a
):
    """The jobs app's accounted-jobs seam: telemetry copies what Observation 3 groups and filters
    by, in bulk, as the import writes the jobs; CPU-only jobs get no row."""
    import_finished_jobs([
        _accounted("1", gpus=8, node_count=1),
        _accounted("2", gpus=32, node_count=4, hours=2.0),
        _accounted("3", gpus=0),  # CPU-only
    ])
    rows = {row.job.job_id: row for row in JobUtilisationSummary.objects.select_related("job")}
    assert set(rows) == {"1", "2"}
    two = rows["2"]
    assert (two.summarised_at, two.mean_percent, two.settled) == (None, None, False)
    assert (two.node_bucket, two.gpu_time_weight, two.tenant_id) == (2, 2 * 3600 * 32, tenant_a.pk)
    assert two.end_time == two.job.end_time

    # Summarised, then accounted again with another end: the copy follows, the figures stay.
    recording.UTILISATION = {"2": (70.0, 0.1)}
    summarise_finished_jobs(now=NOW)
    import_finished_jobs([_accounted("2", gpus=32, node_count=8, hours=3.0)])
    two = JobUtilisationSummary.objects.get(job__job_id="2")
    assert (two.mean_percent, two.node_bucket, two.gpu_time_weight) == (70.0, 3, 3 * 3600 * 32)


def test_observation3_reads_no_job_rows(recording, make_user, tenant_a):
    """On main it joined the period's jobs with their summaries and counted the pending jobs over
    the jobs table: 1.8 s at a million jobs. Now it groups the summaries alone."""
    recording.UTILISATION = {"1": (10.0, 1.0)}
    import_finished_jobs([_accounted("1"), _accounted("2", node_count=2, gpus=16)])
    summarise_finished_jobs(jobs=Job.objects.filter(job_id="1"), now=NOW)
    period = parse_period(None, None, today=NOW.date())
    with CaptureQueriesContext(connection) as queries:
        answer = selectors.observation3(user=make_user(Role.OPERATOR), period=period, now=NOW)
    assert (answer["jobs"], answer["jobs_with_telemetry"], answer["jobs_not_summarised"]) == (
        2, 1, 1)
    assert not [query["sql"] for query in queries if "jobs_job" in query["sql"]]


def test_observation3_is_scoped_as_the_analytics_jobs_are(recording, make_user, tenant_a,
                                                          tenant_b):
    """The tenant column copied beside each summary is filtered by the jobs app's own rule
    (analytics_scope): the same jobs as analytics_jobs for every role and ?tenant=."""
    import_finished_jobs([
        _accounted("1", account=tenant_a.slurm_account),
        _accounted("2", account=tenant_a.slurm_account, node_count=2, gpus=16),
        _accounted("3", account=tenant_b.slurm_account),
        _accounted("4", account="nobody"),  # no tenant
    ])
    period = parse_period(None, None, today=NOW.date())
    cases = [
        (make_user(Role.OPERATOR), None),
        (make_user(Role.OPERATOR), "tenant-b"),
        (make_user(Role.TENANT_ADMIN, tenant=tenant_a), None),
        (make_user(Role.TENANT_ADMIN, tenant=tenant_a), "tenant-b"),  # ignored: own tenant only
        (make_user(Role.VIEWER), None),
    ]
    seen = []
    for user, tenant in cases:
        answer = selectors.observation3(user=user, period=period, tenant_slug=tenant, now=NOW)
        expected = analytics_jobs(user=user, tenant_slug=tenant).filter(gpus__gt=0).count()
        assert answer["jobs"] == expected, (user.role, tenant)
        seen.append(answer["jobs"])
    assert seen == [4, 1, 2, 2, 0]
    with pytest.raises(InvalidInput):
        selectors.observation3(user=make_user(Role.OPERATOR), period=period,
                               tenant_slug="no-such-tenant", now=NOW)


def test_the_migration_copies_existing_jobs_beside_their_summaries(recording, tenant_a):
    """Rows written before the copy existed: the data migration gives summarised jobs their
    columns and every other finished GPU job a pending row, by the same rule as the import."""
    import_finished_jobs([_accounted("1"), _accounted("2", node_count=3, gpus=24),
                          _accounted("3", gpus=0), _accounted("4", state="RUNNING")])
    recording.UTILISATION = {"1": (30.0, 0.5)}
    summarise_finished_jobs(jobs=Job.objects.filter(job_id="1"), now=NOW)
    expected = {row.job_id: (row.end_time, row.node_bucket, row.gpu_time_weight, row.tenant_id,
                             row.summarised_at is None, row.mean_percent)
                for row in JobUtilisationSummary.objects.all()}
    JobUtilisationSummary.objects.filter(job__job_id="2").delete()
    JobUtilisationSummary.objects.update(end_time=None, node_bucket=-1, gpu_time_weight=0,
                                         tenant=None)
    migration = import_module("telemetry.migrations.0002_summary_beside_the_job")
    # The migration reads only the schema editor's connection (SQLite refuses a real schema
    # editor inside the test's transaction).
    migration.copy_the_jobs_columns(None, SimpleNamespace(connection=connection))
    copied = {row.job_id: (row.end_time, row.node_bucket, row.gpu_time_weight, row.tenant_id,
                           row.summarised_at is None, row.mean_percent)
              for row in JobUtilisationSummary.objects.all()}
    assert copied == expected
    assert len(copied) == 2

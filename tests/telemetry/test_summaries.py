"""Observation 3 from stored summaries (issue 28 item 3): each finished GPU job's utilisation
is asked of Prometheus once, after its samples settled, and kept; the observation is then one
aggregate in the database. A driver that records what it is asked stands in for Prometheus here
(tests/telemetry/test_prometheus.py runs the same reads against a real one)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.analytics import parse_period
from jobs.models import Job
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
    return Job.objects.create(
        job_id=job_id, user="alice", account="a", tenant=tenant, state="COMPLETED",
        source=Job.Source.SACCT, submit_time=end - timedelta(hours=hours, minutes=1),
        start_time=end - timedelta(hours=hours), end_time=end,
        elapsed_seconds=int(hours * 3600), gpu_seconds=int(hours * 3600) * gpus,
        node_count=node_count, gpus=gpus,
    )


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
    jobs = Job.objects.all()
    in_database = selectors._rows_in_database(jobs)
    in_python = selectors._rows_in_python(jobs)
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
    JobUtilisationSummary.objects.all().delete()
    answer = selectors.observation3(user=operator, period=period, now=NOW)
    assert recording.calls == [] and answer["jobs_not_summarised"] == 4

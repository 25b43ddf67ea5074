"""Running jobs of an imported trace stop where the trace was taken (issue 28, real-data
finding): before, their GPU time grew up to now for as long as nothing closed them, so the same
analytics query answered differently every day. The import records when the dump was taken
(`--taken-at`, else inferred from the file); the live sync resumes counting up to now once
squeue lists the job again; the page and the API say so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from jobs.drivers.base import SlurmJob
from jobs.models import Job
from jobs.sync import sync_live_jobs

FIELDS = "JobID|User|Account|Partition|State|Submit|Start|End|Elapsed|NodeList|AllocTRES"
SACCT_ROWS = [
    # Finished on Feb 2; running since Feb 3 00:00, for a day and a half when sacct ran.
    "301|tanaka|tenant-a|gpu|COMPLETED|2025-02-02T08:00:00|2025-02-02T09:00:00|"
    "2025-02-02T11:00:00|02:00:00|gpu001|cpu=1,gres/gpu=8,node=1",
    "302|sato|tenant-a|gpu|RUNNING|2025-02-03T00:00:00|2025-02-03T00:00:00|Unknown|"
    "1-12:00:00|gpu[002-003]|cpu=2,gres/gpu=16,node=2",
]
TAKEN = datetime(2025, 2, 4, 12, tzinfo=UTC)  # 302's start + Elapsed
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


def test_a_sync_that_sees_the_job_again_counts_it_up_to_now(tmp_path, db):
    import_sacct(tmp_path)
    sync_live_jobs(driver=ListedDriver(SlurmJob(
        job_id="302", name="", user="sato", account="tenant-a", partition="gpu",
        state="RUNNING", node_names=("gpu002", "gpu003"), node_count=2, gpus=16,
        submit_time=datetime(2025, 2, 3, tzinfo=UTC), start_time=datetime(2025, 2, 3, tzinfo=UTC),
    )))
    job = Job.objects.get(job_id="302")
    assert job.observed_until is None and job.is_live
    assert job.runtime_seconds(TAKEN + timedelta(days=1)) == 60 * 3600


def test_the_model_counts_an_imported_running_job_up_to_the_trace(tmp_path, db):
    import_sacct(tmp_path)
    job = Job.objects.get(job_id="302")
    later = TAKEN + timedelta(days=30)
    assert job.runtime_seconds(later) == 36 * 3600
    assert job.gpu_seconds_so_far(later) == 16 * 36 * 3600

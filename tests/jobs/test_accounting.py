"""Accounting: the incremental import from the driver and `manage.py import_sacct`."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from inventory.models import Node
from jobs.models import Job, SyncWatermark
from jobs.sync import ACCOUNTING_WATERMARK, import_accounting, sync_live_jobs

HEADER = (
    "JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|NodeList|"
    "AllocTRES"
)
GOOD = "\n".join(
    [
        HEADER,
        "101|cpt|tanaka|tenant-a|gpu|CANCELLED by 0|0:15|2025-01-10T09:00:00|"
        "2025-01-10T09:01:00|2025-01-12T09:01:00|2-00:00:00|gpu[001-004]|"
        "billing=4,cpu=4,gres/gpu=32,node=4",
        "101.batch|batch||tenant-a||CANCELLED|0:15|2025-01-10T09:01:00|2025-01-10T09:01:00|"
        "2025-01-12T09:01:00|2-00:00:00|gpu001|cpu=1,gres/gpu=8,node=1",
        "102|fail|alice|other|gpu|FAILED|3:0|2025-01-11T10:00:00|2025-01-11T10:00:05|"
        "2025-01-11T10:00:35|00:00:30|gpu005|billing=1,cpu=1,gres/gpu=8,node=1",
    ]
) + "\n"  # sacct ends every line, the last included, with a newline


@pytest.fixture
def nodes(db):
    return [Node.objects.create(hostname=f"gpu{number:03d}") for number in range(1, 7)]


def test_import_sacct_loads_jobs_with_exit_codes_gpus_and_tenant(tmp_path, nodes, tenant_a):
    dump = tmp_path / "sacct.txt"
    dump.write_text(GOOD)
    out = StringIO()
    call_command("import_sacct", str(dump), stdout=out)
    assert "2 new" in out.getvalue()
    cancelled = Job.objects.get(job_id="101")
    assert cancelled.state == "CANCELLED" and (cancelled.exit_code, cancelled.signal) == (0, 15)
    assert cancelled.gpus == 32 and cancelled.node_count == 4
    assert cancelled.gpu_seconds == 2 * 86400 * 32
    assert cancelled.tenant == tenant_a
    assert sorted(cancelled.nodes.values_list("hostname", flat=True)) == [
        "gpu001", "gpu002", "gpu003", "gpu004"
    ]
    failed = Job.objects.get(job_id="102")
    assert (failed.state, failed.exit_code, failed.gpu_seconds, failed.tenant) == (
        "FAILED", 3, 240, None
    )
    again = StringIO()
    call_command("import_sacct", str(dump), stdout=again)
    assert "0 new, 0 updated, 2 unchanged" in again.getvalue()
    assert Job.objects.count() == 2


def test_a_bad_line_names_itself_and_nothing_is_written(tmp_path, nodes):
    lines = GOOD.splitlines()
    lines.insert(3, "103|short|line")
    dump = tmp_path / "bad.txt"
    dump.write_text("\n".join(lines) + "\n")
    with pytest.raises(CommandError, match="line 4"):
        call_command("import_sacct", str(dump))
    assert not Job.objects.exists()

    broken_time = GOOD.replace("2025-01-11T10:00:35", "yesterday")
    dump.write_text(broken_time)
    with pytest.raises(CommandError, match=r"line 4.*yesterday"):
        call_command("import_sacct", str(dump))
    assert not Job.objects.exists()


def test_missing_or_binary_files_are_clear_errors(tmp_path, db):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_sacct", str(tmp_path / "absent.txt"))
    binary = tmp_path / "dump.gz"
    binary.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")
    with pytest.raises(CommandError, match="not UTF-8"):
        call_command("import_sacct", str(binary))


def test_incremental_import_is_idempotent_and_moves_the_watermark(
    db, make_simulator, clock, settings
):
    for number in range(1, 11):
        Node.objects.create(hostname=f"gpu{number:03d}")
    driver = make_simulator(nodes=10, mean_arrival_seconds=300)
    clock.advance(hours=12)
    sync_live_jobs(driver=driver)
    first = import_accounting(driver=driver, now=clock.now)
    assert first.created > 0
    watermark = SyncWatermark.objects.get(name=ACCOUNTING_WATERMARK)
    assert watermark.value == clock.now
    finished = Job.objects.filter(source=Job.Source.SACCT)
    assert finished.count() == len(driver.accounting(since=clock.now - timedelta(days=1)))
    for job in finished:
        assert job.gpu_seconds == job.elapsed_seconds * job.gpus
        assert job.end_time is not None
    # Nothing new: nothing written, however often it runs.
    again = import_accounting(driver=driver, now=clock.now)
    assert (again.created, again.updated) == (0, 0)
    clock.advance(hours=6)
    later = import_accounting(driver=driver, now=clock.now)
    assert later.total > 0
    assert SyncWatermark.objects.get(name=ACCOUNTING_WATERMARK).value == clock.now
    # A job seen live and then in accounting is one row with its final state.
    assert Job.objects.values("job_id").distinct().count() == Job.objects.count()
    assert not Job.objects.filter(source=Job.Source.SACCT, state="RUNNING").exists()


def test_a_live_job_becomes_its_accounting_record(db, make_simulator, clock):
    for number in range(1, 5):
        Node.objects.create(hostname=f"gpu{number:03d}")
    driver = make_simulator(nodes=4, mean_arrival_seconds=300)
    clock.advance(hours=1)
    sync_live_jobs(driver=driver)
    live = Job.objects.filter(state="RUNNING").order_by("job_id").first()
    assert live is not None and live.source == Job.Source.SQUEUE
    for _ in range(400):
        clock.advance(hours=1)
        if live.job_id not in {job.job_id for job in driver.jobs()}:
            break
    sync_live_jobs(driver=driver)
    import_accounting(driver=driver, now=clock.now)
    live.refresh_from_db()
    record = next(
        job for job in driver.accounting(since=clock.now - timedelta(days=30))
        if job.job_id == live.job_id
    )
    assert live.source == Job.Source.SACCT
    assert (live.state, live.exit_code, live.gpus) == (record.state, record.exit_code, record.gpus)
    assert live.gpu_seconds == record.elapsed_seconds * record.gpus
    assert not live.is_live

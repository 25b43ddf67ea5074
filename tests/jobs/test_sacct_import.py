"""`manage.py import_sacct` refuses what it does not understand: columns by the
header's names in any order, a BOM, and every bad input named as "line N, field F: why" with
nothing written; the reader streams (memory flat in the file's size)."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime
from io import BytesIO, StringIO

import pytest
from django.core.management import CommandError, call_command

from jobs.drivers import sacct
from jobs.drivers.sacct import read_sacct
from jobs.models import Job

FIELDS = ("JobID", "JobName", "User", "Account", "Partition", "State", "ExitCode", "Submit",
          "Start", "End", "Elapsed", "NodeList", "AllocTRES", "ReqTRES")
ROWS = [
    ("201", "train", "tanaka", "tenant-a", "gpu", "COMPLETED", "0:0", "2025-02-01T09:00:00",
     "2025-02-01T09:05:00", "2025-02-01T10:05:00", "01:00:00", "gpu[001-002]",
     "billing=2,cpu=2,gres/gpu=16,node=2", "billing=2,gres/gpu=16,node=2"),
    ("201.batch", "batch", "", "tenant-a", "", "COMPLETED", "0:0", "2025-02-01T09:05:00",
     "2025-02-01T09:05:00", "2025-02-01T10:05:00", "01:00:00", "gpu001",
     "cpu=1,gres/gpu=8,node=1", ""),
    ("202", "never", "sato", "tenant-a", "gpu", "CANCELLED by 1000", "0:0",
     "2025-02-01T11:00:00", "None", "2025-02-01T11:30:00", "00:00:00", "None assigned", "",
     "billing=1,gres/gpu=4,node=1"),
    ("203", "oom", "sato", "tenant-a", "gpu", "OUT_OF_MEMORY", "0:125", "2025-02-02T08:00:00",
     "2025-02-02T08:00:10", "2025-02-02T08:10:10", "00:10:00", "gpu003",
     "cpu=4,gres/gpu:h100=1,node=1", "gres/gpu=1"),
]


def dump(rows=ROWS, fields=FIELDS, order=None, bom=False) -> str:
    order = order or list(range(len(fields)))
    lines = ["|".join(fields[i] for i in order)]
    lines += ["|".join(row[i] for i in order) for row in rows]
    return ("\ufeff" if bom else "") + "\n".join(lines) + "\n"


def with_field(row_index: int, field: str, value: str):
    rows = [list(row) for row in ROWS]
    rows[row_index][FIELDS.index(field)] = value
    return [tuple(row) for row in rows]


def run_import(tmp_path, text: str) -> str:
    path = tmp_path / "sacct.txt"
    path.write_text(text, encoding="utf-8")
    out = StringIO()
    call_command("import_sacct", str(path), stdout=out)
    return out.getvalue()


def stored() -> dict:
    return {
        job.job_id: (job.user, job.account, job.state, job.exit_code, job.signal,
                     job.submit_time, job.start_time, job.end_time, job.elapsed_seconds,
                     job.gpus, job.node_count, job.nodelist)
        for job in Job.objects.all()
    }


def test_columns_in_any_order_import_the_same_jobs(tmp_path, db):
    assert "3 new" in run_import(tmp_path, dump())
    canonical = stored()
    Job.objects.all().delete()
    shuffled = [9, 0, 13, 5, 2, 12, 7, 1, 11, 3, 8, 10, 6, 4]
    assert "3 new" in run_import(tmp_path, dump(order=shuffled, bom=True))
    assert stored() == canonical
    assert canonical["201"][5:] == (
        datetime(2025, 2, 1, 9, tzinfo=UTC), datetime(2025, 2, 1, 9, 5, tzinfo=UTC),
        datetime(2025, 2, 1, 10, 5, tzinfo=UTC), 3600, 16, 2, "gpu[001-002]",
    )
    # Never started: no allocation, but it asked for 4 GPUs (ReqTRES), so it is a GPU job.
    assert canonical["202"][2] == "CANCELLED" and canonical["202"][9:11] == (4, 0)
    assert canonical["203"][3:5] == (0, 125) and canonical["203"][9] == 1


def test_optional_columns_may_be_left_out(tmp_path, db):
    keep = [FIELDS.index(name) for name in sacct.REQUIRED_FIELDS]
    assert "3 new" in run_import(tmp_path, dump(order=keep))
    assert Job.objects.get(job_id="202").gpus == 0  # without ReqTRES nothing says it wanted GPUs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The header
        (dump().replace("AllocTRES", "AllocTres2", 1), "line 1, field AllocTres2: unknown column"),
        (dump(order=[i for i in range(14) if i != FIELDS.index("State")]),
         "line 1, field State: missing from the header"),
        (dump().replace("JobName", "JobID", 1), "line 1, field JobID: named twice"),
        ("\n".join(dump().splitlines()[1:]) + "\n", "line 1, field *: no header line"),
        # States Slurm 22.05 never prints
        (dump(with_field(0, "State", "completed")), "line 2, field State: 'completed' is not"),
        (dump(with_field(3, "State", "DONE")), "line 5, field State: 'DONE' is not"),
        # Duplicate job ids
        (dump([*ROWS, ROWS[2]]), "line 6, field JobID: job 202 is already on an earlier line"),
        # Hostlists
        (dump(with_field(0, "NodeList", "gpu[001-002")), "line 2, field NodeList: 'gpu[001-002'"),
        (dump(with_field(3, "NodeList", "gpu[9-1]")), "line 5, field NodeList:"),
        # Negative and absurd counts
        (dump(with_field(0, "AllocTRES", "cpu=2,gres/gpu=-8,node=2")),
         "line 2, field AllocTRES: 'gres/gpu=-8': the GPU count must be a whole number"),
        (dump(with_field(3, "AllocTRES", "gres/gpu=100000,node=1")),
         "line 5, field AllocTRES: 100000 GPUs on 1 node(s)"),
        (dump(with_field(0, "Elapsed", "9999-00:00:00")), "line 2, field Elapsed:"),
        (dump(with_field(0, "ExitCode", "-1:0")), "line 2, field ExitCode: '-1:0'"),
        # Over-long job ids and ids Slurm does not make
        (dump(with_field(0, "JobID", "1" * 40)), "line 2, field JobID: '1111111111"),
        (dump(with_field(3, "JobID", "job-203")), "line 5, field JobID: 'job-203' is not"),
        # Columns swapped under a right header: submit after start
        (dump(with_field(0, "Submit", "2025-02-01T09:30:00")),
         "line 2, field Start: 2025-02-01T09:05:00 is before Submit 2025-02-01T09:30:00"),
        (dump(with_field(0, "End", "2025-02-01T09:00:00")), "line 2, field End:"),
        (dump(with_field(3, "Start", "soon")), "line 5, field Start: 'soon' is not a time"),
        (dump() + "204|x|u|a\n", "line 6, field *: 4 fields, the header has 14"),
        # Longer than the portal stores: named before the database sees it
        (dump(with_field(0, "JobName", "n" * 201)),
         "line 2, field JobName: 201 characters, at most 200"),
        (dump(with_field(3, "User", "u" * 65)), "line 5, field User: 65 characters, at most 64"),
        (dump(with_field(3, "Account", "a" * 65)), "line 5, field Account: 65 characters"),
        (dump(with_field(3, "Partition", "p" * 65)), "line 5, field Partition: 65 characters"),
    ],
)
def test_bad_input_is_refused_naming_line_and_field_and_nothing_is_written(
    tmp_path, db, text, expected
):
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, text)
    assert expected in str(error.value)
    assert "Nothing was imported" in str(error.value)
    assert not Job.objects.exists()


def test_a_dump_cut_off_inside_its_last_line_is_refused(tmp_path, db):
    whole = dump()
    cut = whole[: whole.rindex("gres/gpu=1") + len("gres/g")]  # inside the last AllocTRES
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, cut)
    assert "line 5, field *: the file ends inside this line" in str(error.value)
    assert not Job.objects.exists()
    # Cut just before the final newline: the line is whole, but nothing says the file is.
    with pytest.raises(CommandError):
        run_import(tmp_path, whole.removesuffix("\n"))
    assert not Job.objects.exists()
    assert "Imported 3 jobs" in run_import(tmp_path, whole)


def test_a_huge_field_is_shortened_in_the_message(tmp_path, db):
    for field in ("JobName", "Elapsed", "NodeList", "State"):
        with pytest.raises(CommandError) as error:
            run_import(tmp_path, dump(with_field(0, field, "x" * 10_000_000)))
        message = str(error.value)
        assert f"line 2, field {field}:" in message
        assert len(message) < 1_000, (field, len(message))
    assert not Job.objects.exists()


def test_every_problem_is_named_at_once(tmp_path, db):
    rows = with_field(0, "State", "Completed")
    rows[3] = (*tuple(rows[3][:5]), "BOGUS", *tuple(rows[3][6:]))
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, dump(rows))
    message = str(error.value)
    assert "line 2, field State" in message and "line 5, field State" in message


def test_a_header_only_file_imports_nothing_and_an_empty_one_is_refused(tmp_path, db):
    assert "Imported 0 jobs" in run_import(tmp_path, dump(rows=[]))
    with pytest.raises(CommandError, match="the file is empty"):
        run_import(tmp_path, "\n")


def _lines(count: int):
    yield "|".join(FIELDS) + "\n"
    for number in range(count):
        yield (f"{300000 + number}|j|u|a|gpu|COMPLETED|0:0|2025-02-01T09:00:00|"
               "2025-02-01T09:00:01|2025-02-01T09:01:01|00:01:00|gpu001|gres/gpu=8,node=1|\n")


def _peak_bytes(count: int) -> int:
    tracemalloc.start()
    try:
        jobs = sum(1 for _ in read_sacct(_lines(count)))
        assert jobs == count
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_reading_streams_in_memory_flat_in_the_files_size(monkeypatch):
    # Job ids are remembered in a bitmap past SMALL of them (8 MiB at most): make that early.
    monkeypatch.setattr(sacct.SeenJobIds, "SMALL", 500)
    small, large = _peak_bytes(1_000), _peak_bytes(6_000)
    # Six times the lines; the peak grows by less than 500 lines' text would take.
    assert large - small < 500 * 130, (small, large)


def test_standard_input_is_read_twice_through_a_spool(monkeypatch, db):
    class Stdin:
        buffer = BytesIO(dump(bom=True).encode())

    monkeypatch.setattr("sys.stdin", Stdin())
    out = StringIO()
    call_command("import_sacct", "-", stdout=out)
    assert "Imported 3 jobs from -: 3 new" in out.getvalue()
    assert Job.objects.count() == 3


def test_seen_job_ids_find_duplicates_before_and_after_the_bitmap(monkeypatch):
    monkeypatch.setattr(sacct.SeenJobIds, "SMALL", 3)
    seen = sacct.SeenJobIds()
    assert all(seen.add(str(number)) for number in (5, 7, 0x03FFFFFF))
    assert not seen.add("7")  # still a set
    assert seen.add("9")  # the fourth plain id moves them into the bitmap
    assert not seen.add("5") and not seen.add("9") and not seen.add(str(0x03FFFFFF))
    assert seen.add("11") and not seen.add("11")
    # Array tasks, heterogeneous components, ids past Slurm's range, leading zeros: a set.
    for job_id in ("12_3", "12+1", str(0x04000000), "0012"):
        assert seen.add(job_id) and not seen.add(job_id)

"""`manage.py import_jobs_csv`: a trace from another scheduler with a documented column set and
state mapping (jobs/README.md), refused whole with "line N, field F: why"."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from jobs.models import Job
from jobs.trace_csv import STATE_MAPPING

HEADER = "gpus,state,job_id,user,account,submit_time,start_time,end_time,node_count,nodes"
ROWS = [
    # ISO times without a zone are UTC; Unix seconds are taken too.
    "16,Pass,p-1,alice,tenant-a,2025-03-01T08:00:00,2025-03-01T08:10:00,2025-03-01T10:10:00,2,",
    "8,Killed,p-2,bob,tenant-a,1740819600,1740819660,1740823260,,gpu[001]",
    "4,waiting,p-3,bob,tenant-a,2025-03-02T00:00:00,,,1,",
    "1,Running,p-4,carol,other,2025-03-02T01:00:00+09:00,2025-03-02T01:00:00+09:00,,1,",
    "0,FAILED,p-5,carol,other,2025-03-02T02:00:00,2025-03-02T02:00:00,2025-03-02T02:00:30,1,",
    "8,canceled,p-6,dave,tenant-a,2025-03-03T00:00:00,,2025-03-03T00:05:00,1,",
]


def trace(rows=ROWS, header=HEADER, bom=False) -> str:
    return ("\ufeff" if bom else "") + "\n".join([header, *rows]) + "\n"


def run_import(tmp_path, text: str) -> str:
    path = tmp_path / "trace.csv"
    path.write_text(text, encoding="utf-8")
    out = StringIO()
    call_command("import_jobs_csv", str(path), stdout=out)
    return out.getvalue()


def test_a_trace_imports_with_states_mapped_and_counts_kept(tmp_path, tenant_a):
    assert "6 new" in run_import(tmp_path, trace(bom=True))
    jobs = {job.job_id: job for job in Job.objects.all()}
    assert {job_id: job.state for job_id, job in jobs.items()} == {
        "p-1": "COMPLETED", "p-2": "CANCELLED", "p-3": "PENDING", "p-4": "RUNNING",
        "p-5": "FAILED", "p-6": "CANCELLED",
    }
    done = jobs["p-1"]
    assert (done.node_count, done.nodelist, done.gpus, done.elapsed_seconds) == (2, "", 16, 7200)
    assert done.gpu_seconds == 16 * 7200 and done.tenant == tenant_a
    assert jobs["p-2"].submit_time == datetime(2025, 3, 1, 9, tzinfo=UTC)
    assert (jobs["p-2"].node_count, jobs["p-2"].nodelist) == (1, "gpu001")
    assert jobs["p-4"].start_time == datetime(2025, 3, 1, 16, tzinfo=UTC)
    # Never started: it asked for 8 GPUs but held no node.
    assert (jobs["p-6"].node_count, jobs["p-6"].gpus, jobs["p-6"].gpu_seconds) == (0, 8, 0)
    assert "0 new, 0 updated, 6 unchanged" in run_import(tmp_path, trace())


def test_the_mapping_is_the_documented_one():
    readme = (Path(__file__).parents[2] / "jobs" / "README.md").read_text()
    for word, state in STATE_MAPPING.items():
        assert f"`{word}`" in readme and state in readme


def _replace(row_index: int, column: str, value: str) -> list[str]:
    names = HEADER.split(",")
    rows = [row.split(",") for row in ROWS]
    rows[row_index][names.index(column)] = value
    return [",".join(row) for row in rows]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (trace(header=HEADER.replace("gpus", "gpu_count")),
         "line 1, field gpu_count: unknown column"),
        (trace(header=HEADER.replace(",node_count,nodes", ",x,y")), "line 1, field x: unknown"),
        (trace(rows=[r.rsplit(",", 2)[0] for r in ROWS],
               header=HEADER.replace(",node_count,nodes", "")),
         "line 1, field node_count: missing from the header (node_count or nodes needed)"),
        (trace(_replace(0, "state", "Terminated")), "line 2, field state: 'Terminated' is not"),
        (trace(_replace(1, "gpus", "0.5")), "line 3, field gpus: '0.5': fractions are not"),
        (trace(_replace(1, "gpus", "-8")), "line 3, field gpus: '-8' is not a whole number"),
        (trace(_replace(0, "gpus", "4096")), "line 2, field gpus: 4096 GPUs on 2 node(s)"),
        (trace(_replace(0, "node_count", "1000000")), "line 2, field node_count: 1000000 nodes"),
        (trace([*ROWS, ROWS[0]]), "line 8, field job_id: job p-1 is already on an earlier line"),
        (trace(_replace(1, "nodes", "gpu[001")), "line 3, field nodes:"),
        (trace(_replace(1, "node_count", "2")), "line 3, field node_count: 2, but nodes names 1"),
        (trace(_replace(0, "job_id", "x" * 33)), "line 2, field job_id: 'xxxxxxxx"),
        (trace(_replace(0, "job_id", "p 1")), "line 2, field job_id: 'p 1': letters"),
        (trace(_replace(0, "submit_time", "2025-03-01T09:00:00")),
         "line 2, field start_time: 2025-03-01T08:10:00 is before submit_time"),
        (trace(_replace(0, "end_time", "")), "line 2, field end_time: a COMPLETED job has ended"),
        (trace(_replace(2, "start_time", "2025-03-02T00:00:01")),
         "line 4, field start_time: a PENDING job has not started"),
        (trace(_replace(4, "end_time", "yesterday")), "line 6, field end_time: 'yesterday'"),
        (trace([*ROWS, "1,FAILED,p-9"]), "line 8, field *: 3 fields, the header has 10"),
        (trace(_replace(0, "user", "u" * 65)), "line 2, field user: 65 characters, at most 64"),
    ],
)
def test_bad_traces_are_refused_naming_line_and_field(tmp_path, db, text, expected):
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, text)
    assert expected in str(error.value) and "Nothing was imported" in str(error.value)
    assert not Job.objects.exists()

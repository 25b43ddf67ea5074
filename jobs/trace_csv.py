"""Reading a job trace from another scheduler as CSV (`manage.py import_jobs_csv`).

The columns, by the header's names in any order (jobs/README.md documents them and the state
mapping): job_id, user, account, state, submit_time, start_time, end_time, node_count and/or
nodes, gpus; optional name, partition, exit_code. Every problem is "line N, field F: why" and
the file is refused whole; the reader streams (csv.reader over the lines).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from jobs.drivers.base import FinishedJob
from jobs.drivers.sacct import (
    SLURM_JOB_STATES,
    LineProblem,
    LineProblemAt,
    check_counts,
    check_job_id,
    check_times,
    expand_nodes,
    read_rows,
)

REQUIRED_COLUMNS = ("job_id", "user", "account", "state", "submit_time", "gpus")
OPTIONAL_COLUMNS = ("start_time", "end_time", "node_count", "nodes", "name", "partition",
                    "exit_code")
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
# Other schedulers' words for Slurm's states (lower case; Slurm's own upper-case names are
# taken as they are). Anything else is refused: "terminated", say, does not tell how it ended.
STATE_MAPPING = {
    "completed": "COMPLETED", "complete": "COMPLETED", "succeeded": "COMPLETED",
    "success": "COMPLETED", "done": "COMPLETED", "finished": "COMPLETED", "pass": "COMPLETED",
    "failed": "FAILED", "fail": "FAILED", "error": "FAILED",
    "cancelled": "CANCELLED", "canceled": "CANCELLED", "killed": "CANCELLED",
    "aborted": "CANCELLED",
    "timeout": "TIMEOUT", "timed_out": "TIMEOUT",
    "node_fail": "NODE_FAIL", "node_failure": "NODE_FAIL",
    "out_of_memory": "OUT_OF_MEMORY", "oom": "OUT_OF_MEMORY",
    "preempted": "PREEMPTED",
    "running": "RUNNING",
    "pending": "PENDING", "queued": "PENDING", "waiting": "PENDING",
}
_LIVE_UNSTARTED = {"PENDING"}
_RUNNING = {"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+\-\[\]]*$")
_EPOCH = re.compile(r"^\d{9,11}(?:\.\d+)?$")


def map_state(value: str) -> str:
    word = value.strip()
    if word in SLURM_JOB_STATES:
        return word
    mapped = STATE_MAPPING.get(word.lower())
    if mapped is None:
        raise LineProblem("state", f"{value!r} is not a state this import knows (jobs/README.md "
                                   "lists the mapping)")
    return mapped


def _time(value: str, field: str) -> datetime | None:
    value = value.strip()
    if not value:
        return None
    if _EPOCH.match(value):
        return datetime.fromtimestamp(float(value), tz=UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise LineProblem(field, f"{value!r} is not an ISO 8601 time or Unix seconds") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _count(value: str, field: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    if re.fullmatch(r"\d+\.\d*|\.\d+", value):
        raise LineProblem(field, f"{value!r}: fractions are not supported (the portal counts "
                                 "whole GPUs and nodes)")
    if not value.isdigit():
        raise LineProblem(field, f"{value!r} is not a whole number >= 0")
    return int(value)


def _header(names: list[str]) -> dict[str, int]:
    positions: dict[str, int] = {}
    for position, raw in enumerate(names):
        name = raw.strip().lower()
        if name not in COLUMNS:
            raise LineProblem(raw or f"#{position + 1}",
                              f"unknown column (columns read: {', '.join(COLUMNS)})")
        if name in positions:
            raise LineProblem(name, "named twice in the header")
        positions[name] = position
    missing = [name for name in REQUIRED_COLUMNS if name not in positions]
    if missing:
        raise LineProblem(missing[0], f"missing from the header (needed: "
                                      f"{', '.join(REQUIRED_COLUMNS)})")
    if "node_count" not in positions and "nodes" not in positions:
        raise LineProblem("node_count", "missing from the header (node_count or nodes needed)")
    return positions


def _job(row: dict[str, str]) -> FinishedJob:
    job_id = row["job_id"].strip()
    check_job_id(job_id, "job_id")
    if not _JOB_ID.match(job_id):
        raise LineProblem("job_id", f"{job_id!r}: letters, digits and . _ + - [ ] only")
    state = map_state(row["state"])
    submit = _time(row["submit_time"], "submit_time")
    if submit is None:
        raise LineProblem("submit_time", "empty")
    start = _time(row.get("start_time", ""), "start_time")
    end = _time(row.get("end_time", ""), "end_time")
    check_times(submit, start, end, names=("submit_time", "start_time", "end_time"))
    if state in _LIVE_UNSTARTED and start is not None:
        raise LineProblem("start_time", f"a {state} job has not started")
    if state in _RUNNING and (start is None or end is not None):
        raise LineProblem("end_time" if end else "start_time",
                          f"a {state} job has a start time and no end time")
    if state not in _RUNNING | _LIVE_UNSTARTED and end is None:
        raise LineProblem("end_time", f"a {state} job has ended: its end time is needed")
    names = expand_nodes(row["nodes"].strip(), "nodes") if row.get("nodes", "").strip() else ()
    node_count = _count(row.get("node_count", ""), "node_count")
    if names and node_count is not None and node_count != len(names):
        raise LineProblem("node_count", f"{node_count}, but nodes names {len(names)}")
    gpus = _count(row["gpus"], "gpus")
    if gpus is None:
        raise LineProblem("gpus", "empty (0 for a CPU-only job)")
    held = len(names) or (node_count or 0)
    check_counts(nodes=held, gpus=gpus, nodes_field="node_count", gpus_field="gpus")
    if start is None:  # never held nodes, whatever it asked for
        names, node_count = (), 0
    exit_code = _count(row.get("exit_code", ""), "exit_code") or 0
    return FinishedJob(
        job_id=job_id,
        name=row.get("name", "").strip(),
        user=row["user"].strip(),
        account=row["account"].strip(),
        partition=row.get("partition", "").strip(),
        state=state,
        exit_code=exit_code,
        signal=0,
        submit_time=submit,
        start_time=start,
        end_time=end,
        elapsed_seconds=int((end - start).total_seconds()) if start and end else 0,
        node_names=names,
        gpus=gpus,
        node_count=node_count,
    )


def _without_bom(lines: Iterable[str]) -> Iterator[str]:
    first = True
    for line in lines:
        yield line.removeprefix("\ufeff") if first else line
        first = False


def read_jobs_csv(lines: Iterable[str], *, max_problems: int = 1) -> Iterator[FinishedJob]:
    """Stream the trace into one FinishedJob per row; InvalidInput {"file": ["line N, field F:
    why", ...]} once `max_problems` problems are found, or at the end."""
    reader = csv.reader(_without_bom(lines), strict=True)

    def numbered_rows() -> Iterator[tuple[int, list[str]]]:
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                raise LineProblemAt(f"line {reader.line_num}, field *: {error}") from None
            if any(value.strip() for value in values):
                yield reader.line_num, values

    yield from read_rows(numbered_rows(), header=_header, job_of=_job, id_field="job_id",
                         max_problems=max_problems)

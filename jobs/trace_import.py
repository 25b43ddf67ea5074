"""Importing a job trace file all or nothing, in memory that does not grow with the file.

Two passes over the file: the first reads every line and only validates (a refused file names
its problems and writes nothing); the second reads it again and writes BATCH_SIZE jobs at a
time inside one transaction. Standard input is spooled to a temporary file first, since it
cannot be read twice. Used by `manage.py import_sacct` and `manage.py import_jobs_csv`.

A trace says nothing about its running jobs after it was taken, so they are counted up to then
(`Job.observed_until`) until squeue lists them again: the moment is given (`taken_at`) or
inferred in the first pass as the latest the file shows (a running job's start + Elapsed, which
sacct measures up to when it ran, or any submit, start or end time).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

from django.db import transaction
from django.utils import timezone

from jobs.drivers.base import FinishedJob
from jobs.models import RUNNING_STATES
from jobs.sync import ImportResult, import_finished_job_stream
from portal.errors import InvalidInput

MAX_PROBLEMS = 20

# reader(lines, max_problems=N) -> FinishedJob stream; InvalidInput {"file": [...]} if refused.
TraceReader = Callable[..., Iterator[FinishedJob]]


class TraceRefused(Exception):
    """The file cannot be imported; `problems` say where and why, one per line."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class TraceImport:
    jobs: int
    result: ImportResult
    running: int = 0  # jobs running in the file
    taken_at: datetime | None = None  # their GPU time is counted up to here
    taken_at_given: bool = False  # given by the caller, not inferred


def parse_taken_at(value: str) -> datetime:
    """`--taken-at`: ISO 8601; without a zone, UTC (as the traces' own times)."""
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise TraceRefused([f"--taken-at {value!r} is not an ISO 8601 time"]) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _latest_shown(job: FinishedJob) -> datetime | None:
    """The latest moment a job's line shows the file was taken at or after."""
    times = [time for time in (job.submit_time, job.start_time, job.end_time) if time]
    if job.state in RUNNING_STATES and job.start_time is not None:
        # sacct's Elapsed of a running job is its run time when sacct ran (a CSV trace's is 0).
        times.append(job.start_time + timedelta(seconds=job.elapsed_seconds))
    return max(times, default=None)


@contextmanager
def readable_path(name: str) -> Iterator[Path]:
    """The file's path; for "-" a temporary copy of standard input (removed afterwards)."""
    if name != "-":
        path = Path(name)
        if not path.is_file():
            raise TraceRefused([f"{name}: no such file"])
        yield path
        return
    with tempfile.NamedTemporaryFile("wb", suffix=".trace") as spool:
        shutil.copyfileobj(sys.stdin.buffer, spool)
        spool.flush()
        yield Path(spool.name)


def _lines(handle: TextIO) -> Iterable[str]:
    try:
        yield from handle
    except UnicodeDecodeError as error:
        raise TraceRefused([f"not UTF-8 text (byte {error.start} of a block); is it the right "
                            "file?"]) from None


def import_trace(name: str, reader: TraceReader, *, taken_at: datetime | None = None
                 ) -> TraceImport:
    """Validate the whole file, then write it in one transaction; TraceRefused otherwise.
    Its running jobs are counted up to `taken_at`, else up to the latest time the file shows;
    a `taken_at` before that, or in the future, is refused."""
    with readable_path(name) as path:
        count = running = 0
        latest: datetime | None = None
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                for job in reader(_lines(handle), max_problems=MAX_PROBLEMS):
                    count += 1
                    running += job.state in RUNNING_STATES
                    shown = _latest_shown(job)
                    if shown is not None and (latest is None or shown > latest):
                        latest = shown
        except InvalidInput as error:
            raise TraceRefused(_problems(error)) from None
        if taken_at is not None:
            _check_taken_at(taken_at, latest)
        counted_until = taken_at or latest
        with transaction.atomic(), path.open(encoding="utf-8", newline="") as handle:
            result = import_finished_job_stream(reader(_lines(handle)), taken_at=counted_until)
    return TraceImport(count, result, running, counted_until, taken_at is not None)


def _check_taken_at(taken_at: datetime, latest: datetime | None) -> None:
    if latest is not None and taken_at < latest:
        raise TraceRefused([
            f"--taken-at {taken_at.isoformat()} is before {latest.isoformat()}, the latest time "
            "the file shows (a running job's start + Elapsed, or a submit, start or end time)"
        ])
    if taken_at > timezone.now():
        raise TraceRefused([f"--taken-at {taken_at.isoformat()} is in the future"])


def _problems(error: InvalidInput) -> list[str]:
    detail = error.detail if isinstance(error.detail, dict) else {"file": [error.detail]}
    return [str(message) for messages in detail.values() for message in messages]

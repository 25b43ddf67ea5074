"""Importing a job trace file all or nothing, in memory that does not grow with the file.

Two passes over the file: the first reads every line and only validates (a refused file names
its problems and writes nothing); the second reads it again and writes BATCH_SIZE jobs at a
time inside one transaction. Standard input is spooled to a temporary file first, since it
cannot be read twice. Used by `manage.py import_sacct` and `manage.py import_jobs_csv`.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from django.db import transaction

from jobs.drivers.base import FinishedJob
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


def import_trace(name: str, reader: TraceReader) -> TraceImport:
    """Validate the whole file, then write it in one transaction; TraceRefused otherwise."""
    with readable_path(name) as path:
        count = 0
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                for _ in reader(_lines(handle), max_problems=MAX_PROBLEMS):
                    count += 1
        except InvalidInput as error:
            raise TraceRefused(_problems(error)) from None
        with transaction.atomic(), path.open(encoding="utf-8", newline="") as handle:
            result = import_finished_job_stream(reader(_lines(handle)))
    return TraceImport(count, result)


def _problems(error: InvalidInput) -> list[str]:
    detail = error.detail if isinstance(error.detail, dict) else {"file": [error.detail]}
    return [str(message) for messages in detail.values() for message in messages]

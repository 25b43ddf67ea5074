"""Reading `sacct -P` output (SLURM-NOTES.md): exit codes are right there, unlike `sacct --json`.

The format the CLI driver asks for and `manage.py import_sacct` accepts:
    sacct -P -o JobID,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,
                NodeList,AllocTRES
A header line is optional. Job steps (`123.batch`, `123.0`) are folded into their job.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from inventory.hostlist import expand_hostlist
from jobs.drivers.base import FinishedJob
from portal.errors import InvalidInput

SACCT_FIELDS = (
    "JobID", "JobName", "User", "Account", "Partition", "State", "ExitCode",
    "Submit", "Start", "End", "Elapsed", "NodeList", "AllocTRES",
)
SACCT_FORMAT = ",".join(SACCT_FIELDS)
_ELAPSED = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?$")
_NO_TIME = {"", "Unknown", "None", "N/A"}
_NO_NODES = {"", "None assigned", "(null)"}


def _time(value: str, *, line: int, field: str) -> datetime | None:
    if value in _NO_TIME:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as error:
        raise InvalidInput({field: [f"line {line}: {value!r} is not a time"]}) from error
    # sacct prints the controller's local time without a zone; the model cluster runs in UTC.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_elapsed(value: str) -> int:
    """`[D-]HH:MM:SS` or `MM:SS` -> seconds."""
    match = _ELAPSED.match(value.strip())
    if not match:
        raise ValueError(f"{value!r} is not an elapsed time")
    days, hours, minutes, seconds = (int(part) if part else 0 for part in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def gpus_from_tres(tres: str) -> int:
    """`billing=1,cpu=1,gres/gpu=8,node=1` -> 8 (typed GPUs `gres/gpu:h100=8` count too)."""
    total = untyped = 0
    for item in tres.split(","):
        name, _, count = item.partition("=")
        if name == "gres/gpu":
            untyped = int(count or 0)
        elif name.startswith("gres/gpu:"):
            total += int(count or 0)
    return untyped or total


def parse_sacct(text: str) -> list[FinishedJob]:
    """Parse `sacct -P` text into one FinishedJob per job; InvalidInput names the bad line."""
    jobs: dict[str, FinishedJob] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        fields = raw.split("|")
        if fields[0] == "JobID":
            continue
        if len(fields) != len(SACCT_FIELDS):
            raise InvalidInput(
                {"file": [f"line {number}: expected {len(SACCT_FIELDS)} fields "
                          f"({SACCT_FORMAT}), found {len(fields)}"]}
            )
        row = dict(zip(SACCT_FIELDS, fields, strict=True))
        if "." in row["JobID"]:
            continue  # a step; the job line carries the job's own totals
        try:
            exit_code, _, signal = row["ExitCode"].partition(":")
            elapsed = parse_elapsed(row["Elapsed"])
            gpus = gpus_from_tres(row["AllocTRES"])
            nodes = () if row["NodeList"] in _NO_NODES else tuple(expand_hostlist(row["NodeList"]))
            job = FinishedJob(
                job_id=row["JobID"],
                name=row["JobName"],
                user=row["User"],
                account=row["Account"],
                partition=row["Partition"],
                state=row["State"].split(" ", 1)[0],
                exit_code=int(exit_code or 0),
                signal=int(signal or 0),
                submit_time=_time(row["Submit"], line=number, field="Submit"),
                start_time=_time(row["Start"], line=number, field="Start"),
                end_time=_time(row["End"], line=number, field="End"),
                elapsed_seconds=elapsed,
                node_names=nodes,
                gpus=gpus,
            )
        except InvalidInput:
            raise
        except ValueError as error:
            raise InvalidInput({"file": [f"line {number}: {error}"]}) from error
        jobs[job.job_id] = job
    return list(jobs.values())

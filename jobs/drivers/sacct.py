"""Reading `sacct -P` output (SLURM-NOTES.md): exit codes are right there, unlike `sacct --json`.

The format the CLI driver asks for (without a header, `-n`):
    sacct -P -o JobID,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,
                NodeList,AllocTRES,ReqTRES
`manage.py import_sacct` takes any order of these columns, by the header's names (which sacct
prints unless told `-n`); JobName, Partition, ExitCode and ReqTRES may be left out. Job steps
(`123.batch`, `123.0`) are folded into their job.

What Slurm 22.05 prints, read in its source (tag slurm-22-05-9-1):
- `-P` (`--parsable2`): fields joined by '|', no '|' after the last one, a header line of the
  field names first unless `-n` (src/common/print_fields.c, print_fields_header and the
  PRINT_FIELDS_PARSABLE_NO_ENDING branches of print_fields_str).
- Header names: the `fields[]` table of src/sacct/sacct.c (JobID, JobName, User, Account,
  Partition, State, ExitCode, Submit, Start, End, Elapsed, NodeList, AllocTRES, ReqTRES, ...),
  printed as spelled there whatever the case given to -o.
- State: `job_state_string()` (src/common/slurm_protocol_defs.c) gives one upper-case word, a
  state flag (COMPLETING, REQUEUED, ...) in place of the base state when one is set; sacct adds
  " by <uid>" to CANCELLED when it knows who cancelled (src/sacct/print.c, PRINT_STATE).
Anything else is refused: a line that cannot be read is a line whose meaning is unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime

from inventory.hostlist import expand_hostlist
from jobs.drivers.base import JOB_TEXT_LIMITS, FinishedJob
from jobs.drivers.validation import MAX_HOSTNAME_LENGTH
from portal.errors import InvalidInput

SACCT_FIELDS = (
    "JobID", "JobName", "User", "Account", "Partition", "State", "ExitCode",
    "Submit", "Start", "End", "Elapsed", "NodeList", "AllocTRES", "ReqTRES",
)
SACCT_FORMAT = ",".join(SACCT_FIELDS)
REQUIRED_FIELDS = (
    "JobID", "User", "Account", "State", "Submit", "Start", "End", "Elapsed", "NodeList",
    "AllocTRES",
)
# Every word job_state_string() returns in 22.05, base states then flags ("?" is not a state).
SLURM_JOB_STATES = frozenset({
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
    "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
    "COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED",
    "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING",
})
JOB_ID_MAX_LENGTH = 32  # Job.job_id
# No node has more than 64 GPUs and no cluster 100,000 nodes: larger counts are typos.
MAX_NODES_PER_JOB = 100_000
MAX_GPUS_PER_NODE = 64
MAX_GPUS_PER_JOB = MAX_NODES_PER_JOB * MAX_GPUS_PER_NODE
MAX_ELAPSED_SECONDS = 10 * 366 * 86400
MAX_PROBLEMS = 20  # reported at once; the rest of the file is not read
_ELAPSED = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?$")
_JOB_ID = re.compile(r"^\d+(?:_(?:\d+|\[[0-9,\-%]+\])|\+\d+)?(?:\.[A-Za-z0-9_+-]+)?$")
_CANCELLED_BY = re.compile(r"^CANCELLED by \d+$")
_NO_TIME = {"", "Unknown", "None", "N/A"}
_NO_NODES = {"", "None assigned", "(null)"}


# A message quotes the value it refuses; a 10 MB field must not come back whole.
MAX_MESSAGE_CHARACTERS = 300


class LineProblem(ValueError):
    """What is wrong with one field of one line."""

    def __init__(self, field: str, why: str):
        field = shortened(field, 60)
        super().__init__(f"field {field}: {shortened(why, MAX_MESSAGE_CHARACTERS)}")
        self.field = field


def shortened(text: str, limit: int) -> str:
    """`text`, or its start and how much was left out when it is longer than `limit`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def check_text_lengths(job: FinishedJob, columns: dict[str, str]) -> None:
    """Each text field within what the portal stores (JOB_TEXT_LIMITS), named by its column."""
    for attribute, limit in JOB_TEXT_LIMITS.items():
        value = getattr(job, attribute)
        if len(value) > limit:
            raise LineProblem(
                columns.get(attribute, attribute),
                f"{len(value):,} characters, at most {limit} ({value[:20]!r}...)",
            )


def parse_elapsed(value: str) -> int:
    """`[D-]HH:MM:SS` or `MM:SS` -> seconds."""
    match = _ELAPSED.match(value.strip())
    if not match:
        raise ValueError(f"{value!r} is not an elapsed time")
    days, hours, minutes, seconds = (int(part) if part else 0 for part in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def gpus_from_tres(tres: str) -> int:
    """`billing=1,cpu=1,gres/gpu=8,node=1` -> 8 (typed GPUs `gres/gpu:h100=8` count too).
    A count that is not a whole number >= 0 is a ValueError."""
    total = untyped = 0
    for item in tres.split(","):
        if not item:
            continue
        name, _, count = item.partition("=")
        if not name.startswith("gres/gpu"):
            continue
        if not count.isdigit():
            raise ValueError(f"{item!r}: the GPU count must be a whole number >= 0")
        if name == "gres/gpu":
            untyped = int(count)
        elif name.startswith("gres/gpu:"):
            total += int(count)
    return untyped or total


def _time(value: str, field: str) -> datetime | None:
    if value in _NO_TIME:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise LineProblem(field, f"{value!r} is not a time (YYYY-MM-DDTHH:MM:SS)") from None
    # sacct prints the controller's local time without a zone; the model cluster runs in UTC.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def check_times(submit, start, end, names=("Submit", "Start", "End")) -> None:
    """Submit <= Start <= End, where known: a swapped column shows here first."""
    submit_name, start_name, end_name = names
    if submit and start and start < submit:
        raise LineProblem(start_name, f"{start:%Y-%m-%dT%H:%M:%S} is before {submit_name} "
                                      f"{submit:%Y-%m-%dT%H:%M:%S}")
    if start and end and end < start:
        raise LineProblem(end_name, f"{end:%Y-%m-%dT%H:%M:%S} is before {start_name} "
                                    f"{start:%Y-%m-%dT%H:%M:%S}")


def check_job_id(job_id: str, field: str = "JobID") -> None:
    if not job_id:
        raise LineProblem(field, "empty")
    if len(job_id) > JOB_ID_MAX_LENGTH:
        raise LineProblem(field, f"{job_id[:40]!r}... is longer than {JOB_ID_MAX_LENGTH} "
                                 "characters")


def check_counts(*, nodes: int, gpus: int, nodes_field: str, gpus_field: str) -> None:
    if nodes > MAX_NODES_PER_JOB:
        raise LineProblem(nodes_field, f"{nodes} nodes: more than {MAX_NODES_PER_JOB} is not "
                                       "a job")
    limit = MAX_GPUS_PER_NODE * nodes if nodes else MAX_GPUS_PER_JOB
    if gpus > limit:
        raise LineProblem(gpus_field, f"{gpus} GPUs on {nodes} node(s): more than "
                                 f"{MAX_GPUS_PER_NODE} per node is not a real allocation")


def expand_nodes(value: str, field: str) -> tuple[str, ...]:
    try:
        names = tuple(expand_hostlist(value, field=field))
    except InvalidInput as error:
        detail = error.detail.get(field) if isinstance(error.detail, dict) else error.detail
        why = " ".join(map(str, detail if isinstance(detail, list) else [detail]))
        raise LineProblem(field, why) from None
    too_long = next((name for name in names if len(name) > MAX_HOSTNAME_LENGTH), None)
    if too_long is not None:
        raise LineProblem(
            field,
            f"a host name of {len(too_long):,} characters, at most {MAX_HOSTNAME_LENGTH} "
            f"({too_long[:20]!r}...)",
        )
    return names


class SeenJobIds:
    """Job ids already read, in memory that stops growing with the file for plain Slurm ids:
    a set while it is small, then one bit per possible id up to Slurm's MAX_JOB_ID (0x03FFFFFF
    in slurm/slurm.h: 8 MiB); a set for the rest (array tasks, heterogeneous components, other
    schedulers' ids)."""

    PLAIN_LIMIT = 0x03FFFFFF
    SMALL = 65_536

    def __init__(self):
        self._plain: set[int] = set()
        self._bits: bytearray | None = None
        self._others: set[str] = set()

    def add(self, job_id: str) -> bool:
        """Record `job_id`; False if it was already there."""
        if job_id.isdigit() and not job_id.startswith("0") and int(job_id) <= self.PLAIN_LIMIT:
            return self._add_plain(int(job_id))
        if job_id in self._others:
            return False
        self._others.add(job_id)
        return True

    def _add_plain(self, number: int) -> bool:
        if self._bits is None:
            if number in self._plain:
                return False
            self._plain.add(number)
            if len(self._plain) > self.SMALL:
                self._bits = bytearray(self.PLAIN_LIMIT // 8 + 1)
                for known in self._plain:
                    self._bits[known >> 3] |= 1 << (known & 7)
                self._plain = set()
            return True
        byte, bit = number >> 3, 1 << (number & 7)
        if self._bits[byte] & bit:
            return False
        self._bits[byte] |= bit
        return True


def _header(fields: list[str]) -> dict[str, int]:
    by_name = {name.lower(): name for name in SACCT_FIELDS}
    positions: dict[str, int] = {}
    unknown = []
    for position, raw in enumerate(fields):
        name = by_name.get(raw.strip().lower())
        if name is None:
            unknown.append(raw)
        elif name in positions:
            raise LineProblem(name, "named twice in the header")
        else:
            positions[name] = position
    if not positions:
        raise LineProblem("*", "no header line: sacct -P prints the field names first unless "
                               "told -n")
    if unknown:
        raise LineProblem(unknown[0], f"unknown column (columns read: {SACCT_FORMAT})")
    missing = [name for name in REQUIRED_FIELDS if name not in positions]
    if missing:
        raise LineProblem(missing[0], f"missing from the header (needed: "
                                      f"{', '.join(REQUIRED_FIELDS)})")
    return positions


def _state(value: str) -> str:
    if _CANCELLED_BY.match(value):
        return "CANCELLED"
    if value not in SLURM_JOB_STATES:
        raise LineProblem("State", f"{value!r} is not a job state Slurm 22.05 prints "
                                   "(job_state_string: COMPLETED, FAILED, CANCELLED, ...)")
    return value


def _exit_code(value: str) -> tuple[int, int]:
    if value == "":
        return 0, 0
    code, colon, signal = value.partition(":")
    if not colon or not code.isdigit() or not signal.isdigit():
        raise LineProblem("ExitCode", f"{value!r} is not <exit code>:<signal>")
    return int(code), int(signal)


SACCT_COLUMNS_OF_TEXT = {
    "job_id": "JobID",
    "name": "JobName",
    "user": "User",
    "account": "Account",
    "partition": "Partition",
    "state": "State",
}


def _job(values: dict[str, str]) -> FinishedJob:
    job_id = values["JobID"]
    state = _state(values["State"])
    exit_code, signal = _exit_code(values.get("ExitCode", ""))
    try:
        elapsed = parse_elapsed(values["Elapsed"])
    except ValueError as error:
        raise LineProblem("Elapsed", str(error)) from None
    if elapsed > MAX_ELAPSED_SECONDS:
        raise LineProblem("Elapsed", f"{values['Elapsed']!r} is more than ten years")
    try:
        gpus = gpus_from_tres(values["AllocTRES"])
    except ValueError as error:
        raise LineProblem("AllocTRES", str(error)) from None
    nodes = () if values["NodeList"] in _NO_NODES else expand_nodes(values["NodeList"],
                                                                      "NodeList")
    submit = _time(values["Submit"], "Submit")
    start = _time(values["Start"], "Start")
    end = _time(values["End"], "End")
    check_times(submit, start, end)
    if not gpus and start is None and values.get("ReqTRES"):
        # Never started: no allocation, but what it asked for makes it a GPU job or not.
        try:
            gpus = gpus_from_tres(values["ReqTRES"])
        except ValueError as error:
            raise LineProblem("ReqTRES", str(error)) from None
    check_counts(nodes=len(nodes), gpus=gpus, nodes_field="NodeList", gpus_field="AllocTRES")
    return FinishedJob(
        job_id=job_id,
        name=values.get("JobName", ""),
        user=values["User"],
        account=values["Account"],
        partition=values.get("Partition", ""),
        state=state,
        exit_code=exit_code,
        signal=signal,
        submit_time=submit,
        start_time=start,
        end_time=end,
        elapsed_seconds=elapsed,
        node_names=nodes,
        gpus=gpus,
    )


def read_sacct(
    lines: Iterable[str],
    *,
    fields: Sequence[str] | None = None,
    max_problems: int = 1,
    whole_lines: bool = False,
) -> Iterator[FinishedJob]:
    """Stream `sacct -P` lines into one FinishedJob per job. Without `fields` the first line
    must be sacct's header. Raises InvalidInput {"file": ["line N, field F: why", ...]} once
    `max_problems` problems are found (or at the end, naming all of them): nothing about a
    refused file may be written, so read it to the end before writing (import_sacct does).
    With `whole_lines` (a file's lines, newlines kept) a last line without its newline is
    refused as cut off."""
    def numbered_rows() -> Iterator[tuple[int, list[str]]]:
        for number, raw in enumerate(lines, start=1):
            if whole_lines and not raw.endswith("\n"):
                # sacct ends every line with one: a dump cut off inside its last line (say
                # `...,gres/g`) would otherwise import that job with the GPUs it lost.
                raise LineProblemAt(
                    f"line {number}, field *: the file ends inside this line (no newline "
                    "after it): was the dump cut off?"
                )
            line = raw.rstrip("\r\n")
            if number == 1:
                line = line.removeprefix("\ufeff")
            if line.strip():
                yield number, line.split("|")

    def job_of(row: dict[str, str]) -> FinishedJob | None:
        check_job_id(row["JobID"])
        if not _JOB_ID.match(row["JobID"]):
            raise LineProblem("JobID", f"{row['JobID']!r} is not a Slurm job id")
        if "." in row["JobID"]:
            return None  # a step; the job line carries the job's own totals
        return _job(row)

    positions = None if fields is None else _header(list(fields))
    yield from read_rows(numbered_rows(), header=_header, job_of=job_of, id_field="JobID",
                         positions=positions, max_problems=max_problems,
                         columns=SACCT_COLUMNS_OF_TEXT)


def read_rows(
    rows: Iterable[tuple[int, list[str]]],
    *,
    header: Callable[[list[str]], dict[str, int]],
    job_of: Callable[[dict[str, str]], FinishedJob | None],
    id_field: str,
    positions: dict[str, int] | None = None,
    max_problems: int = 1,
    columns: dict[str, str] | None = None,
) -> Iterator[FinishedJob]:
    """The streaming check every trace reader shares (sacct -P here, CSV in jobs/trace_csv.py):
    (line number, values) rows, the first the header unless `positions` is given; a job per row
    (`job_of` may skip one with None), each job id once. Yields jobs only while no line was
    refused; raises InvalidInput {"file": ["line N, field F: why", ...]} at `max_problems`
    problems or at the end. A row source may raise LineProblemAt for a line it cannot read.
    `columns` names the column of each FinishedJob text field, for the length check's message
    (by default the columns are named as the fields)."""
    seen = SeenJobIds()
    problems: list[str] = []
    try:
        for number, values in rows:
            try:
                if positions is None:
                    positions = header(values)
                    continue
                if len(values) != len(positions):
                    raise LineProblem(
                        "*", f"{len(values)} fields, the header has {len(positions)}"
                    )
                job = job_of({name: values[position] for name, position in positions.items()})
                if job is None:
                    continue
                check_text_lengths(job, columns or {})
                if not seen.add(job.job_id):
                    raise LineProblem(
                        id_field, f"job {job.job_id} is already on an earlier line"
                    )
            except LineProblem as problem:
                problems.append(f"line {number}, {problem}")
                if len(problems) >= max_problems:
                    break
                continue
            if not problems:
                yield job
    except LineProblemAt as unreadable:
        problems.append(str(unreadable))
    if positions is None and not problems:
        problems.append("line 1, field *: no header line: the file is empty")
    if problems:
        raise InvalidInput({"file": problems})


class LineProblemAt(ValueError):
    """A line a row source cannot read at all ("line N, field *: why"): it ends the reading."""


def parse_sacct(text: str, *, fields: Sequence[str] | None = None) -> list[FinishedJob]:
    """All of `text` at once (the CLI driver's output, which it reads with -n and `fields`)."""
    return list(read_sacct(text.splitlines(), fields=fields))

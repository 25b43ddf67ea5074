"""Slurm through its own command-line clients, the way an administrator would.

    sinfo --json / squeue --json        node and job state (OpenAPI v0.0.38 documents)
    scontrol -o show node <hostlist>    which named nodes exist, and their state flags
    scontrol update NodeName=<hostlist> State=DRAIN|RESUME ...      one call per request
    sacct -P -X -o <SACCT_FORMAT>       accounting (`sacct --json` loses exit codes in 22.05)
    scontrol ping                       is the controller up
    scontrol -o show reservation        reservations (tenants' allocations), one line each
    scontrol create|update|delete reservation ReservationName=...   one call per change

Every command is an argv list run without a shell, with a timeout, SLURM_CONF from settings and
TZ=UTC (sacct prints local times without a zone). Quirks of Slurm 22.05 handled here (measured,
see SLURM-NOTES.md):
- an update naming an unknown node still changes the known ones, so the names of an update of
  several nodes are checked first (a node slurmctld confirmed within SLURM_KNOWN_NODE_SECONDS is
  not asked about again) and an unknown name rejects the whole request before anything changes;
  an update of one unknown node changes nothing and says "Invalid node name specified", so one
  node is not checked first: that refusal is reported as the check's would be;
- RESUME exits 1 with "Invalid node state specified" when some named node was not drained (or
  has no slurmd) although the drains were cleared: success when no named node is still drained;
- scontrol strips one leading and one trailing '"' from Reason=, so the reason is sent wrapped in
  quotes and arrives verbatim;
- `scontrol update ReservationName=` refuses StartTime= once the reservation has started, and
  `scontrol delete` of a missing reservation exits 1 ("Requested reservation is invalid"): the
  start is only sent while the reservation is still ahead, and a failed delete succeeds when
  `scontrol show reservation` then says it is not found;
- Duration=UNLIMITED is stored as 365 days: reservations() reports the end Slurm holds;
- `sinfo --json` ignores -n and reports "Unspecified error" inside a document it exits 0 with
  when the controller is gone: nodes are filtered here and document errors raised.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings

from inventory.hostlist import compress_hostlist, expand_hostlist
from jobs.drivers.base import (
    BatchJobRequest,
    BatchJobState,
    FinishedJob,
    SlurmDriver,
    SlurmError,
    SlurmJob,
    SlurmNodeState,
    SlurmRejected,
    SlurmReservation,
    SlurmUnavailable,
)
from jobs.drivers.openapi38 import (
    ACTIVE_JOB_STATES,
    check_errors,
    parse_jobs,
    parse_nodes,
    select_nodes,
)
from jobs.drivers.sacct import SACCT_FIELDS, SACCT_FORMAT, parse_sacct
from jobs.drivers.validation import checked_node_names, checked_reason
from portal.errors import InvalidInput

logger = logging.getLogger(__name__)

# What Slurm clients print when slurmctld (or slurmdbd, for sacct) cannot be reached.
_UNREACHABLE = re.compile(
    r"Unable to contact slurm controller|connect failure|Connection refused|Socket timed out"
    r"|Zero Bytes were transmitted|Communication connection failure|Transport endpoint"
    r"|Problem talking to the database|Unable to connect to database",
    re.IGNORECASE,
)
INVALID_NODE_STATE = "Invalid node state specified"
INVALID_NODE_NAME = "Invalid node name specified"
_NODE_NOT_FOUND = re.compile(r"^Node (\S+) not found$")
_NODE_NAME = re.compile(r"(?:^|\s)NodeName=(\S+)")
_NODE_STATE = re.compile(r"(?:^|\s)State=(\S+)")
# Reservation names and Slurm account names: one word that cannot start an option or carry
# a separator into the argument it is put in.
_SLURM_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_KEY_VALUE = re.compile(r"(\w+)=(\S*)")
_RESERVATION_NOT_FOUND = re.compile(r"Reservation \S+ not found")
_SLURM_NULL = "(null)"


REBOOT_NEXT_STATES = ("resume", "down")


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def command(self) -> str:
        """The command as a person would type it (for messages only; nothing runs it)."""
        return shlex.join([Path(self.argv[0]).name, *self.argv[1:]])

    @property
    def message(self) -> str:
        return self.stderr.strip() or self.stdout.strip() or f"exit status {self.returncode}"


class ScontrolDriver(SlurmDriver):
    """The CLI driver. Arguments override settings (tests use a short timeout)."""

    def __init__(
        self,
        *,
        bin_dir: str | None = None,
        conf: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.bin_dir = settings.SLURM_BIN_DIR if bin_dir is None else bin_dir
        self.conf = settings.SLURM_CONF if conf is None else conf
        self.timeout = float(settings.SLURM_COMMAND_TIMEOUT if timeout is None else timeout)
        # Node names slurmctld confirmed, with the monotonic time it last did (see _require_known).
        self._confirmed_at: dict[str, float] = {}

    # --- reads --------------------------------------------------------------------------------

    def ping(self) -> None:
        result = self._run("scontrol", "ping")
        if result.returncode != 0 or " is UP" not in result.stdout:
            first_line = result.message.splitlines()[0]
            raise SlurmUnavailable(f"slurmctld is not answering: {first_line}")

    def nodes(self, names: Sequence[str] | None = None) -> list[SlurmNodeState]:
        wanted = None if names is None else checked_node_names(names, allow_empty=True)
        every_node = parse_nodes(self._json("sinfo", "--json"))
        self._confirm([node.name for node in every_node])
        return select_nodes(every_node, wanted)

    def jobs(self) -> list[SlurmJob]:
        return parse_jobs(self._json("squeue", "--json"))

    def accounting(self, since: datetime, until: datetime | None = None) -> list[FinishedJob]:
        since_utc = _as_utc(since)
        until_utc = _as_utc(until) if until is not None else None
        # -S selects jobs that existed at any time after `since`, which includes every job that
        # ended in the window; the exact window is applied below on the end time.
        args = ["-P", "-n", "-X", "-a", "-o", SACCT_FORMAT, "-S", _slurm_time(since_utc)]
        if until_utc is not None:
            args += ["-E", _slurm_time(until_utc, round_up=True)]
        result = self._run("sacct", *args)
        if result.returncode != 0:
            raise self._error(result)
        try:
            jobs = parse_sacct(result.stdout, fields=SACCT_FIELDS)
        except InvalidInput as error:
            raise SlurmError(f"{result.command} printed unreadable output: {error}") from error
        # sacct has whole seconds: a job that ended in the same second as `since` is included.
        floor = since_utc.replace(microsecond=0)
        finished = [
            job
            for job in jobs
            if job.end_time is not None
            and job.state not in ACTIVE_JOB_STATES
            and floor <= job.end_time
            and (until_utc is None or job.end_time < until_utc)
        ]
        return sorted(finished, key=lambda job: (job.end_time, _numeric_id(job.job_id)))

    # --- writes -------------------------------------------------------------------------------

    def drain(self, names: Sequence[str], reason: str) -> None:
        hostlist = compress_hostlist(checked_node_names(names))
        reason = checked_reason(reason)
        self._require_known(names, hostlist)  # rejects unknown names before anything changes
        # scontrol strips one '"' from each end of the value: wrap it so it arrives verbatim.
        result = self._run(
            "scontrol", "update", f"NodeName={hostlist}", "State=DRAIN", f'Reason="{reason}"'
        )
        if result.returncode != 0:
            raise self._update_error(names, result)

    def resume(self, names: Sequence[str]) -> None:
        hostlist = compress_hostlist(checked_node_names(names))
        self._require_known(names, hostlist)
        result = self._run("scontrol", "update", f"NodeName={hostlist}", "State=RESUME")
        if result.returncode == 0:
            return
        if INVALID_NODE_STATE not in result.message:
            raise self._update_error(names, result)
        # Slurm 22.05 says this for every named node that was not drained (or has no slurmd)
        # but still clears the drains: what counts is whether any node is still drained.
        still_drained = sorted(
            name for name, flags in self._node_flags(hostlist).items() if "DRAIN" in flags
        )
        if still_drained:
            raise SlurmRejected(
                f"{result.command}: {result.message}; still drained: "
                f"{compress_hostlist(still_drained)}"
            )
        logger.info(
            "resume of %s: %r ignored, no node is drained any more", hostlist, result.message
        )

    def reboot(self, names: Sequence[str], reason: str, next_state: str) -> None:
        hostlist = compress_hostlist(checked_node_names(names))
        reason = checked_reason(reason)
        if next_state not in REBOOT_NEXT_STATES:
            raise SlurmRejected(f"next state {next_state!r} is not one of {REBOOT_NEXT_STATES}")
        self._require_known(names, hostlist)
        # ASAP drains the node so no new job starts on it and reboots it when its jobs end
        # (slurmctld proc_req.c _slurm_rpc_reboot_nodes sets NODE_STATE_REBOOT_REQUESTED and,
        # with ASAP, DRAIN; node_mgr.c marks REBOOT_ISSUED when RebootProgram runs).
        result = self._run(
            "scontrol",
            "reboot",
            "ASAP",
            f"nextstate={next_state.upper()}",
            # Unlike `scontrol update Reason=`, `scontrol reboot reason=` keeps quotes: measured,
            # '"FT-2: ..."' arrived quotes and all. The argv needs none (no shell).
            f"reason={reason}",
            hostlist,
        )
        if result.returncode != 0:
            raise self._error(result)

    def cancel_reboot(self, names: Sequence[str]) -> None:
        hostlist = compress_hostlist(checked_node_names(names))
        self._require_known(names, hostlist)
        result = self._run("scontrol", "cancel_reboot", hostlist)
        if result.returncode == 0:
            return
        if INVALID_NODE_STATE not in result.message:
            raise self._error(result)
        # 22.05 says "Invalid node state specified" (exit 1) when a named node has no reboot
        # requested, yet cancels the others: what counts is what is still pending.
        flags = self._node_flags(hostlist)
        issued = sorted(name for name, words in flags.items() if "REBOOT_ISSUED" in words)
        if issued:
            raise SlurmRejected(
                f"{result.command}: the reboot of {compress_hostlist(issued)} is already issued "
                "(the RebootProgram ran); it cannot be called back"
            )
        still = sorted(name for name, words in flags.items() if "REBOOT_REQUESTED" in words)
        if still:
            raise SlurmRejected(
                f"{result.command}: {result.message}; still requested: {compress_hostlist(still)}"
            )
        logger.info("cancel_reboot of %s: %r, no reboot pending any more", hostlist, result.message)

    # --- reservations (tenants' allocations) ---------------------------------------------------

    def reservations(self) -> list[SlurmReservation]:
        result = self._run("scontrol", "-o", "show", "reservation")
        if result.returncode != 0:
            raise self._error(result)
        return sorted(
            (parse_reservation_line(line) for line in result.stdout.splitlines() if "=" in line),
            key=lambda reservation: reservation.name,
        )

    def create_or_update_reservation(self, reservation: SlurmReservation) -> None:
        name = _checked_word(reservation.name, "reservation name")
        accounts = [_checked_word(account, "Slurm account") for account in reservation.accounts]
        if not accounts:
            raise SlurmRejected(f"reservation {name} names no Slurm account")
        hostlist = compress_hostlist(checked_node_names(reservation.node_names))
        flags = [_checked_word(flag, "reservation flag") for flag in reservation.flags]
        end = (
            f"EndTime={_slurm_time(_as_utc(reservation.end))}"
            if reservation.end is not None
            else "Duration=UNLIMITED"
        )
        existing = self._reservation(name)
        if existing is None:
            args = [
                "create",
                "reservation",
                f"ReservationName={name}",
                f"Accounts={','.join(accounts)}",
                f"Nodes={hostlist}",
                f"StartTime={_slurm_time(_as_utc(reservation.start))}",
                end,
            ]
        else:
            args = [
                "update",
                f"ReservationName={name}",
                f"Accounts={','.join(accounts)}",
                f"Nodes={hostlist}",
                end,
            ]
            # Slurm refuses a new start once the reservation has begun ("already started").
            wanted_start = _as_utc(reservation.start).replace(microsecond=0)
            if existing.start > datetime.now(UTC) and existing.start != wanted_start:
                args.append(f"StartTime={_slurm_time(wanted_start)}")
        if flags:
            args.append(f"Flags={','.join(flags)}")
        result = self._run("scontrol", *args)
        if result.returncode != 0:
            raise self._error(result)

    def delete_reservation(self, name: str) -> None:
        name = _checked_word(name, "reservation name")
        result = self._run("scontrol", "delete", f"ReservationName={name}")
        if result.returncode == 0:
            return
        # 22.05 answers "Requested reservation is invalid" for a missing one: gone is success.
        if _UNREACHABLE.search(result.message) or self._reservation(name) is not None:
            raise self._error(result)
        logger.info("reservation %s was already gone (%s)", name, result.message)

    # --- batch jobs ---------------------------------------------------------------------------

    def submit_batch_job(self, request: BatchJobRequest) -> str:
        (node,) = checked_node_names([request.node_name])
        args = [
            "--parsable",
            f"--job-name={_checked_word(request.job_name, 'job name')}",
            "--nodes=1",
            f"--nodelist={node}",
            f"--time={max(1, int(request.time_limit_minutes))}",
        ]
        if request.account:
            args.append(f"--account={_checked_word(request.account, 'Slurm account')}")
        if request.reservation:
            args.append(f"--reservation={_checked_word(request.reservation, 'reservation name')}")
        if request.output_path:
            args.append(f"--output={request.output_path}")
        # --wrap hands the command to /bin/sh on the node: it is the site's own setting.
        result = self._run("sbatch", *args, "--wrap", request.command)
        job_id = result.stdout.strip().split(";")[0]  # --parsable prints "jobid[;cluster]"
        if result.returncode != 0 or not job_id.isdigit():
            raise self._error(result)
        return job_id

    def batch_job_state(self, job_id: str) -> BatchJobState:
        if not job_id.isdigit():
            raise SlurmRejected(f"not a valid job id: {job_id!r}")
        # slurmctld keeps a finished job for MinJobAge (300 s by default) with its exit code;
        # after that only accounting knows it.
        result = self._run("scontrol", "-o", "show", "job", job_id)
        if result.returncode == 0 and "JobState=" in result.stdout:
            fields = dict(word.split("=", 1) for word in result.stdout.split() if "=" in word)
            return _job_state(job_id, fields["JobState"], fields.get("ExitCode", ""))
        if _UNREACHABLE.search(result.message):
            raise self._error(result)
        accounted = self._run("sacct", "-n", "-P", "-X", "-j", job_id, "--format=State,ExitCode")
        if accounted.returncode != 0:
            raise self._error(accounted)
        line = accounted.stdout.strip().splitlines()[:1]
        if not line:
            raise SlurmRejected(f"Slurm knows no job {job_id}")
        state, _, exit_code = line[0].partition("|")
        return _job_state(job_id, state, exit_code)

    def _reservation(self, name: str) -> SlurmReservation | None:
        """The named reservation as Slurm holds it, None when Slurm has none of that name."""
        result = self._run("scontrol", "-o", "show", "reservation", name)
        if result.returncode != 0:
            if _RESERVATION_NOT_FOUND.search(result.message):
                return None
            raise self._error(result)
        for line in result.stdout.splitlines():
            if "=" in line:
                reservation = parse_reservation_line(line)
                if reservation.name == name:
                    return reservation
        return None

    # --- internals ----------------------------------------------------------------------------

    def _confirm(self, names: Sequence[str]) -> None:
        now = time.monotonic()
        self._confirmed_at.update((name, now) for name in names)

    def _require_known(self, names: Sequence[str], hostlist: str) -> None:
        """Refuse, before anything changes, a request naming a node slurmctld does not know
        (an update naming one still changes the others). A node confirmed within
        SLURM_KNOWN_NODE_SECONDS (by this check or a node sync) is not asked about again: the
        check doubled the commands of every drain, and slurmctld forgets a node only when it is
        reconfigured without it."""
        if len(set(names)) == 1:
            # Nothing else to change: an update of one unknown node is refused as a whole
            # (_update_error says so as this check would). The check cost a drain from the web
            # server a second command whenever its process had not seen the node lately.
            return
        now = time.monotonic()
        window = float(settings.SLURM_KNOWN_NODE_SECONDS)
        if all(now - self._confirmed_at.get(name, -math.inf) < window for name in names):
            return
        self._node_flags(hostlist)

    def _update_error(self, names: Sequence[str], result: CommandResult) -> SlurmError:
        """An update's failure; for one node Slurm lacks, in the words of _require_known."""
        if len(set(names)) == 1 and INVALID_NODE_NAME in result.message:
            return SlurmRejected(
                f"Slurm does not know node(s) {names[0]} ({result.message.strip()}); "
                "nothing was changed"
            )
        return self._error(result)

    def _node_flags(self, hostlist: str) -> dict[str, set[str]]:
        """{name: state words} of the named nodes; SlurmRejected names those Slurm lacks."""
        result = self._run("scontrol", "-o", "show", "node", hostlist)
        flags: dict[str, set[str]] = {}
        unknown: list[str] = []
        for line in result.stdout.splitlines():
            line = line.strip()
            missing = _NODE_NOT_FOUND.match(line)
            if missing:
                unknown.append(missing.group(1))
                continue
            name, state = _NODE_NAME.search(line), _NODE_STATE.search(line)
            if name and state:
                words = state.group(1).split("+")
                flags[name.group(1)] = {word.rstrip("*~#!%$@^-") for word in words}
        self._confirm(list(flags))
        if unknown:
            raise SlurmRejected(
                f"Slurm does not know node(s) {compress_hostlist(unknown)} "
                f"(scontrol: Node {unknown[0]} not found); nothing was changed"
            )
        if result.returncode != 0 or not flags:
            raise self._error(result)
        return flags

    def _json(self, program: str, *args: str) -> dict[str, Any]:
        result = self._run(program, *args)
        if result.returncode != 0:
            raise self._error(result)
        try:
            document = json.loads(result.stdout)
        except json.JSONDecodeError as error:
            raise SlurmError(f"{result.command} printed no JSON: {result.message[:200]}") from error
        try:
            check_errors(document, result.command)
        except SlurmUnavailable as error:
            # Without a controller the document only says "Unspecified error": say why.
            if self._controller_down():
                raise SlurmUnavailable(f"slurmctld is not answering ({error})") from error
            raise
        return document

    def _controller_down(self) -> bool:
        try:
            self.ping()
        except SlurmUnavailable:
            return True
        return False

    def _error(self, result: CommandResult) -> SlurmError:
        """Slurm's own message, as "unreachable" (worth retrying) or "refused" (not)."""
        text = f"{result.command}: {result.message}"
        if _UNREACHABLE.search(result.message):
            return SlurmUnavailable(text)
        return SlurmRejected(text)

    def _executable(self, program: str) -> str:
        return str(Path(self.bin_dir) / program) if self.bin_dir else program

    def _environment(self) -> dict[str, str]:
        environment = {**os.environ, "TZ": "UTC"}
        if self.conf:
            environment["SLURM_CONF"] = self.conf
        return environment

    def _run(self, program: str, *args: str) -> CommandResult:
        argv = (self._executable(program), *args)
        started = time.monotonic()
        try:
            completed = subprocess.run(  # an argv list, never a shell
                argv,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise SlurmUnavailable(
                f"{shlex.join([program, *args[:2]])} did not finish within {self.timeout:g}s "
                "(controller unreachable or overloaded)"
            ) from error
        except OSError as error:
            raise SlurmUnavailable(
                f"cannot run {argv[0]}: {error.strerror or error} "
                "(is the Slurm client installed? see SLURM_BIN_DIR)"
            ) from error
        result = CommandResult(argv, completed.returncode, completed.stdout, completed.stderr)
        logger.info(
            "slurm command: %s -> exit %d in %.3fs",
            result.command,
            result.returncode,
            time.monotonic() - started,
        )
        return result


def parse_reservation_line(line: str) -> SlurmReservation:
    """One line of `scontrol -o show reservation` (times are UTC: the command runs with TZ=UTC)."""
    fields = dict(_KEY_VALUE.findall(line))
    try:
        name = fields["ReservationName"]
        start = datetime.fromisoformat(fields["StartTime"]).replace(tzinfo=UTC)
        end_text = fields.get("EndTime", "")
        end = (
            datetime.fromisoformat(end_text).replace(tzinfo=UTC) if end_text[:1].isdigit() else None
        )
        nodes_text = fields.get("Nodes", "")
        nodes = (
            tuple(expand_hostlist(nodes_text, field="Nodes"))
            if nodes_text and nodes_text != _SLURM_NULL
            else ()
        )
    except (KeyError, ValueError, InvalidInput) as error:
        raise SlurmError(
            f"unreadable reservation from scontrol: {line[:200]!r} ({error})"
        ) from error
    return SlurmReservation(
        name=name,
        accounts=_null_list(fields.get("Accounts", "")),
        node_names=nodes,
        start=start,
        end=end,
        flags=_null_list(fields.get("Flags", "")),
    )


def _job_state(job_id: str, state: str, exit_code: str) -> BatchJobState:
    """scontrol's/sacct's "COMPLETED" and "0:0" (exit status:signal); "CANCELLED by 0" -> the
    first word."""
    state = state.split()[0] if state.strip() else "UNKNOWN"
    code, _, _signal = exit_code.partition(":")
    finished_code = int(code) if code.isdigit() else None
    return BatchJobState(job_id=job_id, state=state, exit_code=finished_code)


def _null_list(text: str) -> tuple[str, ...]:
    if not text or text == _SLURM_NULL:
        return ()
    return tuple(item for item in text.split(",") if item)


def _checked_word(value: str, what: str) -> str:
    if not isinstance(value, str) or not _SLURM_WORD.match(value):
        raise SlurmRejected(f"not a valid {what}: {value!r}")
    return value


def _as_utc(moment: datetime) -> datetime:
    """Naive datetimes are taken as UTC (the portal stores aware UTC times)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _slurm_time(moment: datetime, *, round_up: bool = False) -> str:
    """Slurm's time syntax, in UTC (the commands run with TZ=UTC), to whole seconds."""
    if round_up and moment.microsecond:
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment.replace(microsecond=0, tzinfo=None).isoformat()


def _numeric_id(job_id: str) -> float:
    head = job_id.split("_", 1)[0]
    return int(head) if head.isdigit() else math.inf

"""The Slurm driver interface (DESIGN.md section 4): what the portal asks of a Slurm controller.

Implementations (chosen by dotted path in `settings.SLURM_DRIVER`):
- `jobs.drivers.cli.ScontrolDriver`: sinfo/squeue `--json`, `scontrol -o`, `sacct -P`;
- `jobs.drivers.slurmrestd.SlurmrestdDriver`: slurmrestd v0.0.38 with a JWT;
- `jobs.drivers.simulator.SimulatorDriver`: the embedded demo's cluster, also used by fast tests.
Every implementation passes the same contract tests (tests/jobs/driver_contract.py, subclassed
per driver, e.g. tests/jobs/test_slurm_drivers.py for the two real ones).
Drivers return these dataclasses, never models, and raise only the errors below.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache

from django.conf import settings


class SlurmError(Exception):
    """Base class of everything a driver raises."""


class SlurmUnavailable(SlurmError):
    """The controller could not be reached or timed out: worth retrying later."""


class SlurmRejected(SlurmError):
    """The controller refused the request (unknown node, invalid state): retrying will not help."""


class SlurmNotSupported(SlurmError):
    """This Slurm (or this way of talking to it) cannot do what was asked."""


@dataclass(frozen=True)
class SlurmNodeState:
    """One node as Slurm sees it. `state` is the base state in lower case (idle, allocated,
    mixed, down, unknown, future); `flags` are Slurm's upper-case flags (DRAIN, NOT_RESPONDING,
    COMPLETING, MAINTENANCE, RESERVED, ...)."""

    name: str
    state: str
    flags: tuple[str, ...] = ()
    reason: str = ""
    reason_set_at: datetime | None = None
    reason_set_by: str = ""
    gpus_total: int = 0
    gpus_used: int = 0
    # When slurmd last booted, as slurmctld computed it from slurmd's uptime at registration
    # (None: not registered since slurmctld started). A reboot has ended when this moves past
    # the request.
    boot_time: datetime | None = None

    @property
    def reboot_state(self) -> str:
        """Where a reboot asked of Slurm (`scontrol reboot`) stands: "requested" (sinfo's `@`:
        NODE_STATE_REBOOT_REQUESTED, waiting for the node's jobs to end), "issued" (`^`:
        NODE_STATE_REBOOT_ISSUED, the RebootProgram ran and slurmctld waits for slurmd to
        register with a newer boot time), or "" (none). Slurm 22.05's sinfo(1), NODE STATE
        CODES: "@ The node is pending reboot", "^ The node reboot was issued"; REBOOT_REQUESTED
        "A request to reboot this node has been made, but hasn't been handled yet",
        REBOOT_ISSUED "A reboot request has been sent to the agent configured to handle this
        request". Measured on the test cluster (22.05): `sinfo -o %t/%T` printed
        `drng@`/`draining@` while the node's job ran (scontrol: MIXED+DRAIN+REBOOT_REQUESTED)
        and `boot^`/`reboot^` while it rebooted (DOWN+DRAIN+REBOOT_ISSUED; sinfo --json:
        state "down", state_flags ["DRAIN", "REBOOT_ISSUED"])."""
        if "REBOOT_ISSUED" in self.flags:
            return "issued"
        if "REBOOT_REQUESTED" in self.flags:
            return "requested"
        return ""

    @property
    def display_state(self) -> str:
        """The word sinfo prints: drained / draining / down / not_responding / idle / ..."""
        flags = set(self.flags)
        if "REBOOT_ISSUED" in flags:
            # Slurm shows a node it is rebooting as DOWN+REBOOT_ISSUED; sinfo says "reboot^".
            # Planned work, not a failure: "rebooting", so no ticket opens for it. A node that
            # misses ResumeTimeout loses the flag and is plain DOWN, "reboot timed out".
            return "rebooting"
        if self.state == "down":
            return "down"
        if "DRAIN" in flags:
            busy = self.state in {"allocated", "mixed"} or "COMPLETING" in flags
            return "draining" if busy else "drained"
        if "NOT_RESPONDING" in flags:
            return "not_responding"
        return self.state

    @property
    def is_unhealthy(self) -> bool:
        if "REBOOT_ISSUED" in self.flags:
            return False  # down on purpose while it reboots (display_state)
        return self.state == "down" or "NOT_RESPONDING" in self.flags


@dataclass(frozen=True)
class SlurmJob:
    """A running or pending job (squeue)."""

    job_id: str
    name: str
    user: str
    account: str
    partition: str
    state: str  # RUNNING, PENDING, COMPLETING, ...
    node_names: tuple[str, ...] = ()
    node_count: int = 0
    gpus: int = 0
    submit_time: datetime | None = None
    start_time: datetime | None = None
    time_limit_minutes: int | None = None
    state_reason: str = ""


# The longest text the portal stores for each of a job's text fields (jobs.models.Job uses
# these): a trace reader refuses a longer value by line and field before the database sees it.
JOB_TEXT_LIMITS = {
    "job_id": 32,
    "name": 200,
    "user": 64,
    "account": 64,
    "partition": 64,
    "state": 32,
}


@dataclass(frozen=True)
class FinishedJob:
    """A job that ended, from accounting (sacct). `state` without the "by <uid>" suffix."""

    job_id: str
    name: str
    user: str
    account: str
    partition: str
    state: str  # COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, ...
    exit_code: int
    signal: int
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    elapsed_seconds: int
    node_names: tuple[str, ...] = field(default_factory=tuple)
    gpus: int = 0
    # A trace from another scheduler may give a node count without the names.
    node_count: int | None = None

    @property
    def nodes_held(self) -> int:
        return len(self.node_names) or (self.node_count or 0)

    @property
    def gpu_seconds(self) -> int:
        """GPU-occupied time (paper Observation 1): runtime x allocated GPUs."""
        return self.elapsed_seconds * self.gpus


@dataclass(frozen=True)
class SlurmReservation:
    """A reservation that keeps nodes for accounts (a tenant's allocation). `end` None: open."""

    name: str
    accounts: tuple[str, ...]
    node_names: tuple[str, ...]
    start: datetime
    end: datetime | None = None
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchJobRequest:
    """One batch job on one named node (`sbatch -w node -N1 --wrap command`), e.g. the GPU check
    a repaired node must pass before it goes back into service. `reservation`: run inside it
    (a maintenance reservation keeps every other job off the node meanwhile)."""

    node_name: str
    command: str
    job_name: str
    account: str = ""
    reservation: str = ""
    time_limit_minutes: int = 30
    output_path: str = ""  # a file the portal can read afterwards (shared filesystem); "": none


# Job states after which nothing more happens (squeue/sacct's words).
FINISHED_JOB_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
    }
)


@dataclass(frozen=True)
class BatchJobState:
    """Where a submitted job stands. `exit_code` is known once it has finished."""

    job_id: str
    state: str
    exit_code: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_JOB_STATES

    @property
    def passed(self) -> bool:
        return self.state == "COMPLETED" and self.exit_code == 0


class SlurmDriver(ABC):
    """What the portal needs from Slurm. Node names are plain hostnames (no hostlists)."""

    @abstractmethod
    def ping(self) -> None:
        """Return when the controller answers; raise SlurmUnavailable otherwise."""

    @abstractmethod
    def nodes(self, names: Sequence[str] | None = None) -> list[SlurmNodeState]:
        """Every node (or the named ones), in name order."""

    @abstractmethod
    def drain(self, names: Sequence[str], reason: str) -> None:
        """Drain the nodes with `reason` in one request. Draining a drained node succeeds."""

    @abstractmethod
    def resume(self, names: Sequence[str]) -> None:
        """Return the nodes to service in one request. Resuming an idle node succeeds."""

    def reboot(self, names: Sequence[str], reason: str, next_state: str) -> None:
        """Ask Slurm to reboot the nodes as soon as their jobs end (`scontrol reboot ASAP`),
        leaving them in `next_state` ("resume" or "down") once slurmd registers again.
        Not abstract: a driver that cannot do it says so rather than breaking the others."""
        raise SlurmNotSupported(f"{type(self).__name__} cannot reboot nodes")

    def cancel_reboot(self, names: Sequence[str]) -> None:
        """Withdraw a reboot that has not been issued yet (`scontrol cancel_reboot`): the
        REBOOT_REQUESTED flag and the drain that ASAP added go. Cancelling where nothing is
        requested succeeds; a reboot already issued cannot be called back."""
        raise SlurmNotSupported(f"{type(self).__name__} cannot cancel reboots")

    @abstractmethod
    def jobs(self) -> list[SlurmJob]:
        """Running and pending jobs."""

    @abstractmethod
    def accounting(self, since: datetime, until: datetime | None = None) -> list[FinishedJob]:
        """Jobs that ended in [since, until), oldest end first."""

    # Reservations back tenants' allocations. Not every way of talking to Slurm can
    # manage them (slurmrestd 22.05 cannot), hence defaults that say so rather than abstracts.
    def reservations(self) -> list[SlurmReservation]:
        raise SlurmNotSupported(f"{type(self).__name__} cannot read reservations")

    def create_or_update_reservation(self, reservation: SlurmReservation) -> None:
        """Create the reservation, or make an existing one of that name match it."""
        raise SlurmNotSupported(f"{type(self).__name__} cannot manage reservations")

    def delete_reservation(self, name: str) -> None:
        """Remove the reservation; removing one that does not exist succeeds."""
        raise SlurmNotSupported(f"{type(self).__name__} cannot manage reservations")

    # Not abstract: a driver that cannot submit says so (SlurmNotSupported) rather than fail to
    # load, so that adding these did not oblige every driver at once.
    def submit_batch_job(self, request: BatchJobRequest) -> str:
        """sbatch: returns the job id."""
        raise SlurmNotSupported(f"{type(self).__name__} cannot submit batch jobs")

    def batch_job_state(self, job_id: str) -> BatchJobState:
        """The job's state, from the queue while it is there and from accounting afterwards;
        SlurmRejected for a job id Slurm does not know."""
        raise SlurmNotSupported(f"{type(self).__name__} cannot read a job's state")


@cache
def get_slurm_driver() -> SlurmDriver:
    """The driver named in settings.SLURM_DRIVER, one instance per process."""
    module_name, _, class_name = settings.SLURM_DRIVER.rpartition(".")
    driver_class = getattr(importlib.import_module(module_name), class_name)
    return driver_class()


def reset_slurm_driver() -> None:
    """Forget the cached driver (tests that change settings.SLURM_DRIVER call it)."""
    get_slurm_driver.cache_clear()

"""The simulator driver: a Slurm cluster for the embedded demo and for fast tests.

Where the state lives, and why: in the database (`jobs.models.SimulatedCluster`, one JSON row,
plus `SimulatedFinishedJob` rows for accounting). The demo's web process and every Celery
worker process must see one cluster: a drain queued from the browser is carried out by a worker
and must show in the next node sync, which may run in yet another process. The database is the
one store every process of every mode already shares: SQLite in the embedded demo (where Redis
is absent), PostgreSQL otherwise; it is transactional, so a drain and a concurrent advance of
the clock cannot lose each other's writes (a version column makes the write conditional, which
works on SQLite too), and each test's transaction rolls the cluster back with everything else.

The cluster follows `jobs.drivers.cluster_model`: nodes from the inventory (gpu001-gpu100 when it
is empty), the paper's job mix, seeded and driven by an injectable clock. It keeps reservations
like slurmctld (reserved nodes run only the reservation's accounts), and tests can submit a job
on given nodes (`submit_job`), which is how the driver contract runs against it
(tests/jobs/test_simulator_contract.py).
"""

from __future__ import annotations

import logging
import re
import subprocess
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from jobs.drivers.base import (
    BatchJobRequest,
    BatchJobState,
    FinishedJob,
    SlurmDriver,
    SlurmJob,
    SlurmNodeState,
    SlurmRejected,
    SlurmReservation,
    SlurmUnavailable,
)
from jobs.drivers.cluster_model import GPUS_PER_NODE, ClusterSimulation
from jobs.drivers.validation import checked_node_names, checked_reason

logger = logging.getLogger(__name__)

FALLBACK_NODE_NAMES = tuple(f"gpu{number:03d}" for number in range(1, 101))
DEFAULTS: dict[str, Any] = {
    "seed": 20250301,
    # About 32 jobs a day keep the paper's mix at ~75% of 100 nodes (mean 200k node-seconds).
    "mean_arrival_seconds": 2700.0,
    "mean_failure_seconds": 12 * 3600.0,  # one node stops answering about twice a day
    "max_pending": 40,
    "history_hours": 72.0,  # a fresh cluster starts this far back, so it has a past to show
}
MAX_WRITE_ATTEMPTS = 8
RESERVATION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
RESERVATION_FLAG = re.compile(r"^[A-Z][A-Z_]*$")

_process_lock = threading.Lock()  # threads of one process take turns; processes use `version`


class _LostRace(Exception):
    """Another process wrote the cluster between our read and our write."""


# How long a batch job (the validation run) lasts on the simulation's clock.
BATCH_JOB_SECONDS = 60.0


def _to_datetime(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


class SimulatorDriver(SlurmDriver):
    """A simulated Slurm controller (DESIGN.md section 4), shared through the database.

    Arguments override `settings.SLURM_SIMULATOR` (a dict with the keys of DEFAULTS):
    `cluster` names the simulated cluster (tests and benchmarks use their own), `node_names`
    fixes the nodes instead of following the inventory, `clock` returns the current time.
    """

    def __init__(
        self,
        *,
        cluster: str = "default",
        clock: Callable[[], datetime] | None = None,
        node_names: Sequence[str] | None = None,
        **options: Any,
    ):
        configured = {**DEFAULTS, **getattr(settings, "SLURM_SIMULATOR", {}), **options}
        unknown = set(configured) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown simulator options: {', '.join(sorted(unknown))}")
        self.cluster = cluster
        self.clock = clock or timezone.now
        self.node_names = list(node_names) if node_names is not None else None
        self.options = configured

    # -- the driver interface ----------------------------------------------------------------

    def ping(self) -> None:
        self._run(lambda simulation: None)

    def nodes(self, names: Sequence[str] | None = None) -> list[SlurmNodeState]:
        def read(simulation: ClusterSimulation) -> list[SlurmNodeState]:
            wanted = set(names) if names is not None else None
            reserved = simulation.reserved_accounts(simulation.now)
            return [
                self._node_state(name, node, simulation.state["running"], name in reserved)
                for name, node in simulation.node_rows()
                if wanted is None or name in wanted
            ]

        return self._run(read)

    def drain(self, names: Sequence[str], reason: str) -> None:
        names = checked_node_names(names)
        checked_reason(reason)

        def apply(simulation: ClusterSimulation) -> None:
            self._check_names(simulation, names)
            simulation.drain(names, reason)

        self._run(apply)

    def reboot(self, names: Sequence[str], reason: str, next_state: str) -> None:
        names = checked_node_names(names)
        checked_reason(reason)
        if next_state not in ("resume", "down"):
            raise SlurmRejected(f"next state {next_state!r} is not one of ('resume', 'down')")

        def apply(simulation: ClusterSimulation) -> None:
            self._check_names(simulation, names)
            simulation.request_reboot(names, reason, next_state)

        self._run(apply)

    def cancel_reboot(self, names: Sequence[str]) -> None:
        names = checked_node_names(names)

        def apply(simulation: ClusterSimulation) -> None:
            self._check_names(simulation, names)
            simulation.cancel_reboot(names)

        self._run(apply)

    def resume(self, names: Sequence[str]) -> None:
        names = checked_node_names(names)

        def apply(simulation: ClusterSimulation) -> list[str]:
            self._check_names(simulation, names)
            return simulation.resume(names)

        refused = self._run(apply)
        if refused:
            raise SlurmRejected(
                f"Invalid node state specified: {', '.join(refused)} not responding "
                "(drain cleared, node stays down)"
            )

    def jobs(self) -> list[SlurmJob]:
        def read(simulation: ClusterSimulation) -> list[SlurmJob]:
            running = [self._slurm_job(job, "RUNNING") for job in simulation.running_jobs()]
            pending = [self._slurm_job(job, "PENDING") for job in simulation.pending_jobs()]
            return running + pending

        return self._run(read)

    def accounting(self, since: datetime, until: datetime | None = None) -> list[FinishedJob]:
        from jobs.models import SimulatedFinishedJob

        self._run(lambda simulation: None)  # bring accounting up to the clock
        records = SimulatedFinishedJob.objects.filter(
            cluster__name=self.cluster, end_time__gte=since
        )
        if until is not None:
            records = records.filter(end_time__lt=until)
        return [
            self._finished_job(row.record)
            for row in records.order_by("end_time", "id").only("record")
        ]

    def reservations(self) -> list[SlurmReservation]:
        def read(simulation: ClusterSimulation) -> list[SlurmReservation]:
            return [
                SlurmReservation(
                    name=name,
                    accounts=tuple(reservation["accounts"]),
                    node_names=tuple(reservation["nodes"]),
                    start=_to_datetime(reservation["start"]),
                    end=_to_datetime(reservation["end"]),
                    flags=tuple(reservation["flags"]),
                )
                for name, reservation in sorted(simulation.reservations().items())
            ]

        return self._run(read)

    def create_or_update_reservation(self, reservation: SlurmReservation) -> None:
        """Like `scontrol create/update reservation`: refused (SlurmRejected) for unknown nodes,
        a bad period or name, and, unless it has the IGNORE_JOBS flag, for nodes whose running
        jobs of other accounts would still run when it starts."""
        name = reservation.name
        if not isinstance(name, str) or not RESERVATION_NAME.match(name):
            raise SlurmRejected(f"invalid reservation name {name!r}")
        names = checked_node_names(reservation.node_names)
        accounts = sorted(set(reservation.accounts))
        if not accounts:
            raise SlurmRejected(f"reservation {name}: name at least one account")
        bad = [account for account in accounts if not ACCOUNT_NAME.match(account)]
        if bad:
            raise SlurmRejected(f"reservation {name}: invalid account {', '.join(bad)}")
        flags = sorted(set(reservation.flags))
        bad = [flag for flag in flags if not RESERVATION_FLAG.match(flag)]
        if bad:
            raise SlurmRejected(f"reservation {name}: invalid flag {', '.join(bad)}")
        start = reservation.start.timestamp()
        end = reservation.end.timestamp() if reservation.end is not None else None
        if end is not None and end <= start:
            raise SlurmRejected(f"reservation {name}: the end must be after the start")

        def apply(simulation: ClusterSimulation) -> None:
            self._check_names(simulation, names)
            # The caller computes "now" a moment before the controller sees it: a start already
            # past begins now, as the reservation is meant to be in force.
            begins = max(start, simulation.now)
            if end is not None and end <= simulation.now:
                raise SlurmRejected(f"reservation {name}: its end is in the past")
            if "IGNORE_JOBS" not in flags:
                busy = simulation.busy_for(names, begins, accounts)
                if busy:
                    raise SlurmRejected(
                        f"reservation {name}: Requested nodes are busy ({', '.join(busy)})"
                    )
            wanted = {
                "accounts": accounts,
                "nodes": names,
                "start": begins,
                "end": end,
                "flags": flags,
            }
            current = simulation.reservations().get(name)
            if (
                current is not None
                and current["start"] <= simulation.now
                and start <= simulation.now
            ):
                # Already in force and asked to be in force now: it keeps its original start
                # (a re-sync changes nothing).
                wanted["start"] = current["start"]
            if current != wanted:
                simulation.put_reservation(name, wanted)

        self._run(apply)

    def delete_reservation(self, name: str) -> None:
        self._run(lambda simulation: simulation.delete_reservation(name))

    def submit_batch_job(self, request: BatchJobRequest) -> str:
        """sbatch into the simulation. The simulated node is this host: the command runs here,
        now (bounded by the time limit), and its exit status becomes the job's, which then
        takes BATCH_JOB_SECONDS of the simulation's clock to finish."""
        (node,) = checked_node_names([request.node_name])
        account = request.account or "root"

        def check(simulation: ClusterSimulation) -> None:
            self._check_names(simulation, [node])
            if request.reservation:
                reservation = simulation.reservations().get(request.reservation)
                if reservation is None or node not in reservation["nodes"]:
                    raise SlurmRejected(
                        f"sbatch: error: Requested reservation {request.reservation} "
                        f"does not hold {node}"
                    )

        self._run(check)
        try:
            completed = subprocess.run(  # the site's command, as sbatch --wrap runs it
                ["/bin/sh", "-c", request.command],
                capture_output=True,
                text=True,
                timeout=max(1, int(request.time_limit_minutes)) * 60,
                stdin=subprocess.DEVNULL,
                check=False,
            )
            exit_code, output = completed.returncode, completed.stdout + completed.stderr
        except subprocess.TimeoutExpired:
            exit_code, output = 124, "time limit reached\n"
        if request.output_path:
            with open(request.output_path, "w", encoding="utf-8") as output_file:
                output_file.write(output)
        return self.submit_job(
            nodes=[node],
            gpus_per_node=GPUS_PER_NODE,
            seconds=BATCH_JOB_SECONDS,
            exit_code=max(0, exit_code),
            name=request.job_name,
            account=account,
        )

    def batch_job_state(self, job_id: str) -> BatchJobState:
        from jobs.models import SimulatedFinishedJob

        queued = self._run(lambda simulation: simulation.job_state(job_id))
        if queued:
            return BatchJobState(job_id=job_id, state=queued)
        row = SimulatedFinishedJob.objects.filter(cluster__name=self.cluster, job_id=job_id).first()
        if row is None:
            raise SlurmRejected(f"Slurm knows no job {job_id}")
        return BatchJobState(
            job_id=job_id, state=row.record["state"], exit_code=row.record["exit_code"]
        )

    # -- controls for tests and the demo -----------------------------------------------------

    def submit_job(
        self,
        *,
        nodes: Sequence[str],
        gpus_per_node: int = GPUS_PER_NODE,
        seconds: float,
        exit_code: int = 0,
        name: str = "job",
        account: str = "root",
        user: str = "root",
    ) -> str:
        """Queue a job for exactly `nodes` (sbatch --nodelist); it starts as soon as they are
        free. Returns its job id."""
        names = list(nodes)

        def apply(simulation: ClusterSimulation) -> str:
            self._check_names(simulation, names)
            if not 0 < gpus_per_node <= GPUS_PER_NODE:
                raise SlurmRejected(f"gpus_per_node must be 1 to {GPUS_PER_NODE}")
            return simulation.submit(
                nodes=names,
                gpus_per_node=gpus_per_node,
                seconds=seconds,
                exit_code=exit_code,
                name=name,
                account=account,
                user=user,
            )

        return self._run(apply)

    def cancel_jobs(self, job_ids: Sequence[str]) -> None:
        """scancel: running jobs end CANCELLED, pending ones are dropped, ended ones ignored."""
        self._run(lambda simulation: simulation.cancel(list(job_ids)), check_controller=False)

    def inspect(self, operation: Callable[[ClusterSimulation], Any]) -> Any:
        """Run `operation` on the simulation itself, brought up to the clock, even with the
        controller down (the machine room, not an RPC); changes it makes are saved."""
        return self._run(operation, check_controller=False)

    def fail_node(self, name: str, *, recover_after_seconds: float | None = None) -> None:
        """Make a node stop answering now (down*, "Not responding"), as a dead slurmd does."""

        def apply(simulation: ClusterSimulation) -> None:
            self._check_names(simulation, [name])
            simulation.fail_node(name, simulation.now, recover_after_seconds)

        self._run(apply)

    def recover_node(self, name: str) -> None:
        def apply(simulation: ClusterSimulation) -> None:
            self._check_names(simulation, [name])
            simulation.recover_node(name)

        self._run(apply)

    def set_controller_up(self, up: bool) -> None:
        """Take the simulated slurmctld down (every call raises SlurmUnavailable) or back up."""

        def apply(simulation: ClusterSimulation) -> None:
            simulation.state["controller_up"] = bool(up)
            simulation.changed = True

        self._run(apply, check_controller=False)

    def reset(self) -> None:
        """Forget this simulated cluster; the next call starts a fresh one."""
        from jobs.models import SimulatedCluster

        SimulatedCluster.objects.filter(name=self.cluster).delete()

    # -- persistence -------------------------------------------------------------------------

    def _run(
        self,
        operation: Callable[[ClusterSimulation], Any],
        *,
        check_controller: bool = True,
    ) -> Any:
        """Load the cluster, advance it to the clock, apply `operation`, save if anything
        changed (reads too: time moved on), all in one transaction; retried when another
        process wrote in between."""
        now = self.clock().timestamp()
        node_names = self._current_node_names()
        with _process_lock:
            for _attempt in range(MAX_WRITE_ATTEMPTS):
                try:
                    with transaction.atomic():
                        return self._run_once(operation, now, node_names, check=check_controller)
                except _LostRace:
                    continue
        raise SlurmUnavailable("the simulated controller is busy; try again")

    def _run_once(self, operation, now: float, node_names, *, check: bool):
        from jobs.models import SimulatedCluster, SimulatedFinishedJob

        row = self._load_row(now, node_names)
        simulation = ClusterSimulation(row.state)
        if row.pk is None:
            simulation = self._new_simulation(now, node_names)
        if check and not simulation.state.get("controller_up", True):
            raise SlurmUnavailable("slurm_load_ctl_conf error: Unable to contact slurm controller")
        if node_names is not None:
            simulation.set_node_names(node_names)
        simulation.advance(now)
        self._node_health_check(simulation)
        result = operation(simulation)
        if simulation.changed or row.pk is None:
            if row.pk is None:
                try:
                    with transaction.atomic():
                        row = SimulatedCluster.objects.create(
                            name=self.cluster, state=simulation.state, version=1
                        )
                except IntegrityError:
                    raise _LostRace from None
            else:
                updated = SimulatedCluster.objects.filter(pk=row.pk, version=row.version).update(
                    state=simulation.state, version=F("version") + 1, updated_at=timezone.now()
                )
                if not updated:
                    raise _LostRace
            SimulatedFinishedJob.objects.bulk_create(
                [
                    SimulatedFinishedJob(
                        cluster=row,
                        job_id=record["job_id"],
                        end_time=_to_datetime(record["end"]),
                        record=record,
                    )
                    for record in simulation.finished
                ],
                batch_size=1000,
                ignore_conflicts=True,
            )
        return result

    @staticmethod
    def _node_health_check(simulation: ClusterSimulation) -> None:
        """What a node health check (NHC) does on a real cluster: a node whose rail NIC has lost
        its link is drained with the NIC named. The simulated nodes have no NICs of their own, so
        the link is the far end's: the leaf port the inventory cables the NIC to, as the fabric
        last saw it (a port shut down through the portal, or found down by the counter poll).
        A node an operator already drained keeps the operator's reason."""
        for hostname, reason in rail_links_down().items():
            node = simulation.state["nodes"].get(hostname)
            if node is not None and not node.get("drain"):
                simulation.drain([hostname], reason, by="nhc")

    def _load_row(self, now: float, node_names):
        from jobs.models import SimulatedCluster

        rows = SimulatedCluster.objects.filter(name=self.cluster)
        if transaction.get_connection().features.has_select_for_update:
            rows = rows.select_for_update()
        return rows.first() or SimulatedCluster(name=self.cluster, state={})

    def _new_simulation(self, now: float, node_names) -> ClusterSimulation:
        start = now - timedelta(hours=float(self.options["history_hours"])).total_seconds()
        return ClusterSimulation.new(
            node_names=list(node_names or FALLBACK_NODE_NAMES),
            seed=int(self.options["seed"]),
            start=start,
            mean_arrival_seconds=float(self.options["mean_arrival_seconds"]),
            mean_failure_seconds=float(self.options["mean_failure_seconds"] or 0),
            max_pending=int(self.options["max_pending"]),
        )

    def _current_node_names(self) -> list[str] | None:
        """The nodes to simulate: the fixed list, else the inventory's (None: keep what the
        cluster has, or the fallback names for a new one)."""
        if self.node_names is not None:
            return self.node_names
        from inventory.models import Node

        names = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
        return names or None

    # -- conversions -------------------------------------------------------------------------

    @staticmethod
    def _check_names(simulation: ClusterSimulation, names: list[str]) -> None:
        if not names:
            raise SlurmRejected("no nodes named")
        unknown = simulation.unknown_nodes(names)
        if unknown:
            raise SlurmRejected(f"Invalid node name specified: {', '.join(unknown)}")

    @staticmethod
    def _node_state(name: str, node: dict, running: dict, reserved: bool) -> SlurmNodeState:
        job = running.get(node["job"]) if node["job"] is not None else None
        gpus_used = job.get("gpus_per_node", GPUS_PER_NODE) if job is not None else 0
        rebooting = node.get("reboot_done_at") is not None
        if node["down"] or rebooting:
            base = "down"  # Slurm shows a node it reboots as DOWN+REBOOT_ISSUED
        elif job is not None:
            # An injected job may take part of a node's GPUs (sbatch --gres=gpu:N): mixed.
            base = "allocated" if gpus_used >= GPUS_PER_NODE else "mixed"
        else:
            base = "idle"
        flags = []
        if node["drain"]:
            flags.append("DRAIN")
        if rebooting:
            flags.append("REBOOT_ISSUED")
        elif node.get("reboot_next_state"):
            flags.append("REBOOT_REQUESTED")
        if node["not_responding"]:
            flags.append("NOT_RESPONDING")
        if reserved:
            flags.append("RESERVED")
        return SlurmNodeState(
            name=name,
            state=base,
            flags=tuple(flags),
            reason=node["reason"],
            reason_set_at=_to_datetime(node["reason_set_at"]),
            reason_set_by=node["reason_set_by"],
            gpus_total=GPUS_PER_NODE,
            gpus_used=gpus_used,
            boot_time=_to_datetime(node.get("boot_time")),
        )

    @staticmethod
    def _slurm_job(job: dict, state: str) -> SlurmJob:
        return SlurmJob(
            job_id=job["job_id"],
            name=job["name"],
            user=job["user"],
            account=job["account"],
            partition=job["partition"],
            state=state,
            node_names=tuple(job["nodes"]),
            node_count=job["node_count"],
            gpus=job["gpus"],
            submit_time=_to_datetime(job["submit"]),
            start_time=_to_datetime(job["start"]),
            time_limit_minutes=job["time_limit"],
            state_reason=job.get("reason", ""),
        )

    @staticmethod
    def _finished_job(record: dict) -> FinishedJob:
        return FinishedJob(
            job_id=record["job_id"],
            name=record["name"],
            user=record["user"],
            account=record["account"],
            partition=record["partition"],
            state=record["state"],
            exit_code=record["exit_code"],
            signal=record["signal"],
            submit_time=_to_datetime(record["submit"]),
            start_time=_to_datetime(record["start"]),
            end_time=_to_datetime(record["end"]),
            elapsed_seconds=record["elapsed"],
            node_names=tuple(record["nodes"]),
            gpus=record["gpus"],
        )


def rail_links_down() -> dict[str, str]:
    """{hostname: "NHC: mlx5_4 (rail 3) link down at leaf-p1-r3 Ethernet8"} for every node with
    a rail NIC whose cabled switch port is down, administratively or operationally. One query."""
    from django.db.models import Q

    from inventory.models import NIC
    from inventory.selectors import active_cables

    down = Q(admin_status="down") | Q(oper_status="down")
    rows = (
        active_cables()
        .filter(
            Q(a_nic__role=NIC.Role.RAIL, b_port__in=_ports(down))
            | Q(b_nic__role=NIC.Role.RAIL, a_port__in=_ports(down))
        )
        .values_list(
            "a_nic__node__hostname",
            "a_nic__device",
            "a_nic__rail",
            "b_nic__node__hostname",
            "b_nic__device",
            "b_nic__rail",
            "a_port__switch__hostname",
            "a_port__name",
            "b_port__switch__hostname",
            "b_port__name",
        )
    )
    reasons: dict[str, str] = {}
    for a_host, a_dev, a_rail, b_host, b_dev, b_rail, a_sw, a_port, b_sw, b_port in rows:
        host, device, rail = (a_host, a_dev, a_rail) if a_host else (b_host, b_dev, b_rail)
        switch, port = (b_sw, b_port) if a_host else (a_sw, a_port)
        reasons.setdefault(host, f"NHC: {device} (rail {rail}) link down at {switch} {port}")
    return reasons


def _ports(condition):
    from inventory.models import SwitchPort

    return SwitchPort.objects.filter(condition).values("pk")

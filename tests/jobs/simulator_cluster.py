"""The simulator as the driver contract's hands (tests/jobs/driver_contract.py).

Everything goes through the simulated cluster's own state (`SimulatorDriver.inspect`) or the
simulator's controls (submit_job, cancel_jobs, set_controller_up: what sbatch, scancel and
stopping slurmctld do), never through the driver interface under test. The clock is real time
plus an offset the contract's `wait_until` moves forward, so a job "runs" five seconds in no
time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TypeVar

import pytest
from django.utils import timezone

from jobs.drivers.cluster_model import ClusterSimulation
from jobs.drivers.simulator import SimulatorDriver
from tests.jobs.driver_contract import ContractCluster, ObservedNode

T = TypeVar("T")
CONTRACT_NODES = 10
QUIET = {"history_hours": 0, "mean_failure_seconds": 0, "mean_arrival_seconds": 10**9}


class SteppingClock:
    """Wall-clock time plus an offset: close to `datetime.now()` (the contract compares with
    it), never going backwards, and moved forward by `advance` instead of sleeping."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return timezone.now() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


def make_contract_simulator(clock: SteppingClock, nodes: int = CONTRACT_NODES) -> SimulatorDriver:
    """A quiet simulated cluster of its own (no arrivals, no random failures)."""
    names = [f"gpu{number:03d}" for number in range(1, nodes + 1)]
    return SimulatorDriver(cluster="contract", clock=clock, node_names=names, **QUIET)


class SimulatorCluster(ContractCluster):
    gpus_per_node = 8
    wait_timeout = 120.0  # simulated seconds
    step_seconds = 1.0

    def __init__(self, driver: SimulatorDriver, clock: SteppingClock):
        self.driver = driver
        self.clock = clock

    def node_names(self) -> list[str]:
        return self.driver.inspect(lambda simulation: [name for name, _ in simulation.node_rows()])

    def submit_job(
        self,
        *,
        nodes: Sequence[str],
        gpus_per_node: int,
        seconds: float,
        exit_code: int = 0,
        name: str = "contract",
        account: str = "root",
    ) -> str:
        return self.driver.submit_job(
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            seconds=seconds,
            exit_code=exit_code,
            name=name,
            account=account,
        )

    def job_state(self, job_id: str) -> str:
        """squeue's state while queued; afterwards the state accounting recorded."""
        from jobs.models import SimulatedFinishedJob

        queued = self.driver.inspect(lambda simulation: simulation.job_state(job_id))
        if queued:
            return queued
        record = SimulatedFinishedJob.objects.filter(
            cluster__name=self.driver.cluster, job_id=job_id
        ).first()
        return record.record["state"] if record is not None else ""

    def cancel_jobs(self, job_ids: Sequence[str]) -> None:
        self.driver.cancel_jobs(job_ids)

    def observe_node(self, name: str) -> ObservedNode:
        def read(simulation: ClusterSimulation) -> ObservedNode:
            node = simulation.state["nodes"][name]
            flags = {"DRAIN"} if node["drain"] else set()
            if node["not_responding"]:
                flags.add("NOT_RESPONDING")
            if name in simulation.reserved_accounts(simulation.now):
                flags.add("RESERVED")
            return ObservedNode(frozenset(flags), node["reason"])

        return self.driver.inspect(read)

    def restore_nodes(self, names: Sequence[str]) -> None:
        def undrain(simulation: ClusterSimulation) -> None:
            drained = [name for name in names if simulation.state["nodes"][name]["drain"]]
            if drained:
                simulation.resume(drained)

        self.driver.inspect(undrain)

    @contextmanager
    def controller_down(self) -> Iterator[None]:
        self.driver.set_controller_up(False)
        try:
            yield
        finally:
            self.driver.set_controller_up(True)

    def wait_until(self, predicate: Callable[[], T], what: str, timeout: float | None = None) -> T:
        """Move the simulated clock a second at a time (no sleeping) until `predicate` holds."""
        limit = self.wait_timeout if timeout is None else timeout
        waited = 0.0
        while True:
            value = predicate()
            if value:
                return value
            if waited >= limit:
                pytest.fail(f"timed out waiting for {what} ({limit:g} simulated seconds)")
            self.clock.advance(self.step_seconds)
            waited += self.step_seconds

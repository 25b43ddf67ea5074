"""The contract every Slurm driver passes: one test suite, subclassed per driver.

    class TestMyDriverContract(SlurmDriverContract):
        supports_node_update = True          # False: drain/resume must raise SlurmNotSupported

        @pytest.fixture
        def driver(self, ...): return MyDriver(...)

        @pytest.fixture
        def cluster(self, ...): return MyClusterHands(...)   # a ContractCluster

The driver is only ever checked through its own interface plus a `ContractCluster`: the hands
the contract needs outside the driver (submit a job, read a node's state independently, stop the
controller). tests/jobs/slurm_cluster.py has the real-Slurm one; a simulator provides its own.

What the contract fixes, beyond the docstrings of jobs.drivers.base:
- nodes(names) leaves out names Slurm does not know; drain/resume reject them (SlurmRejected,
  naming them) and change nothing, not even the known nodes of the same request;
- malformed names (hostlist syntax, spaces, quotes) and an empty or multi-line reason are
  SlurmRejected before anything reaches Slurm;
- a drain reason is stored verbatim, shell metacharacters and quotes included;
- with the controller down, ping/nodes/jobs (and drain/resume where supported) raise
  SlurmUnavailable, the one error worth retrying.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest

from jobs.drivers.base import (
    SlurmDriver,
    SlurmNotSupported,
    SlurmRejected,
    SlurmUnavailable,
)

T = TypeVar("T")
UNKNOWN_NODE = "no-such-node-999"
AWKWARD_REASON = """disk; rm -rf / $(reboot) `id` "quoted" 'single' | & > x"""


@dataclass(frozen=True)
class ObservedNode:
    """A node as seen without the driver under test (flags upper case, e.g. {"DRAIN"})."""

    flags: frozenset[str]
    reason: str


class ContractCluster(ABC):
    """What the contract needs from the cluster behind the driver, independent of the driver."""

    gpus_per_node: int = 8
    wait_timeout: float = 60.0

    @abstractmethod
    def node_names(self) -> list[str]:
        """Every node, in name order; the contract needs at least 8 (it uses the first 8)."""

    @abstractmethod
    def submit_job(
        self,
        *,
        nodes: Sequence[str],
        gpus_per_node: int,
        seconds: float,
        exit_code: int = 0,
        name: str = "contract",
    ) -> str:
        """Start a batch job on exactly `nodes` that runs `seconds`, then exits `exit_code`."""

    @abstractmethod
    def job_state(self, job_id: str) -> str:
        """RUNNING, PENDING, COMPLETED, FAILED, ... ("" once the controller forgot the job)."""

    @abstractmethod
    def cancel_jobs(self, job_ids: Sequence[str]) -> None:
        """Cancel jobs a test started (finished ones are ignored)."""

    @abstractmethod
    def observe_node(self, name: str) -> ObservedNode:
        """The node's flags and reason read past the driver (sinfo, the simulator's state)."""

    @abstractmethod
    def restore_nodes(self, names: Sequence[str]) -> None:
        """Return any drained node among `names` to service, past the driver."""

    @abstractmethod
    def controller_down(self) -> AbstractContextManager[None]:
        """A context in which the controller is unreachable; back and ready on exit."""

    def wait_until(self, predicate: Callable[[], T], what: str, timeout: float | None = None) -> T:
        """Poll `predicate` until it is truthy (a simulator may advance its clock instead)."""
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}")
            time.sleep(0.2)


class SlurmDriverReadContract:
    """What every driver must do: reads, and either node updates or an explicit refusal.
    Subclass SlurmDriverContract for a driver that drains and resumes (all of them but
    slurmrestd on 22.05, whose REST API has no node update); override `driver` and `cluster`
    (and `impatient_driver` for a short timeout).

    No `slurm` mark here: marks on a class are inherited and cannot be taken off, and only
    subclasses whose cluster is the real one need it (they mark their module)."""

    supports_node_update: bool = True

    @pytest.fixture
    def driver(self) -> SlurmDriver:
        pytest.fail(f"{type(self).__name__} must override the `driver` fixture")

    @pytest.fixture
    def cluster(self) -> ContractCluster:
        pytest.fail(f"{type(self).__name__} must override the `cluster` fixture")

    @pytest.fixture
    def impatient_driver(self, driver: SlurmDriver) -> SlurmDriver:
        """The driver used while the controller is down: override to give it a short timeout."""
        return driver

    @pytest.fixture
    def nodes(self, cluster: ContractCluster) -> list[str]:
        names = cluster.node_names()
        if len(names) < 8:
            pytest.fail(f"the contract needs at least 8 nodes, the cluster has {len(names)}")
        return names[:8]

    @pytest.fixture(autouse=True)
    def _restore_cluster(self, request, cluster: ContractCluster) -> Iterator[list[str]]:
        """Jobs a test submits (through `submit`) are cancelled and drains undone afterwards."""
        submitted: list[str] = []
        request.node.submitted_jobs = submitted
        yield submitted
        cluster.cancel_jobs(submitted)
        cluster.restore_nodes(cluster.node_names()[:8])

    @pytest.fixture
    def submit(self, request, cluster: ContractCluster) -> Callable[..., str]:
        def submit_job(**kwargs) -> str:
            job_id = cluster.submit_job(**kwargs)
            request.node.submitted_jobs.append(job_id)
            return job_id

        return submit_job

    @staticmethod
    def _state(driver: SlurmDriver, name: str):
        (node,) = driver.nodes([name])
        return node

    # --- reads --------------------------------------------------------------------------------

    def test_ping_answers(self, driver):
        assert driver.ping() is None

    def test_nodes_lists_every_node_once_in_name_order(self, driver, cluster):
        nodes = driver.nodes()

        names = [node.name for node in nodes]
        assert names == sorted(cluster.node_names())
        for node in nodes:
            assert node.gpus_total == cluster.gpus_per_node, node
            assert node.state in {"idle", "allocated", "mixed", "down", "unknown", "future"}, node
            assert all(flag == flag.upper() for flag in node.flags), node

    def test_nodes_filtered_by_name_leaves_out_unknown_names(self, driver, nodes):
        filtered = driver.nodes([nodes[2], nodes[0], UNKNOWN_NODE])

        assert [node.name for node in filtered] == [nodes[0], nodes[2]]
        assert driver.nodes([]) == []

    def test_jobs_sees_a_running_job_with_its_nodes_and_gpus(self, driver, cluster, nodes, submit):
        job_id = submit(nodes=nodes[5:7], gpus_per_node=4, seconds=120, name="contract-jobs")
        cluster.wait_until(lambda: cluster.job_state(job_id) == "RUNNING", f"job {job_id} to run")

        job = next((job for job in driver.jobs() if job.job_id == job_id), None)

        assert job is not None, f"job {job_id} missing from jobs()"
        assert job.state == "RUNNING"
        assert job.name == "contract-jobs"
        assert job.node_names == tuple(nodes[5:7])
        assert job.node_count == 2
        assert job.gpus == 8
        assert job.start_time is not None and job.submit_time is not None
        for name in nodes[5:7]:
            assert self._state(driver, name).gpus_used == 4

    def test_accounting_sees_a_finished_job_with_state_exit_code_and_gpus(
        self, driver, cluster, nodes, submit
    ):
        since = datetime.now(UTC) - timedelta(seconds=2)
        job_id = submit(nodes=nodes[7:8], gpus_per_node=2, seconds=0, exit_code=3, name="exit3")

        def finished():
            return next((job for job in driver.accounting(since) if job.job_id == job_id), None)

        job = cluster.wait_until(finished, f"job {job_id} in accounting")

        assert job.state == "FAILED"
        assert job.exit_code == 3
        assert job.signal == 0
        assert job.gpus == 2
        assert job.node_names == (nodes[7],)
        assert job.name == "exit3"
        assert job.end_time is not None and job.end_time >= since.replace(microsecond=0)
        assert job.start_time is not None and job.submit_time is not None
        assert job.gpu_seconds == job.elapsed_seconds * 2
        # [since, until): a window ending at the job's end leaves it out.
        before_end = driver.accounting(since, until=job.end_time)
        assert job_id not in {other.job_id for other in before_end}
        assert job_id in {
            other.job_id for other in driver.accounting(since, job.end_time + timedelta(seconds=1))
        }

    def test_node_update_is_supported_or_refused_explicitly(self, driver, cluster, nodes):
        if self.supports_node_update:
            driver.drain([nodes[3]], "capability check")
            assert "DRAIN" in cluster.observe_node(nodes[3]).flags
            driver.resume([nodes[3]])
            assert "DRAIN" not in cluster.observe_node(nodes[3]).flags
            return
        with pytest.raises(SlurmNotSupported, match="not supported by this Slurm"):
            driver.drain([nodes[3]], "must not happen")
        with pytest.raises(SlurmNotSupported, match="not supported by this Slurm"):
            driver.resume([nodes[3]])
        observed = cluster.observe_node(nodes[3])
        assert "DRAIN" not in observed.flags and observed.reason == "", observed

    # --- last: the controller goes away for a few seconds -------------------------------------

    def test_controller_down_is_unavailable_then_recovers(self, impatient_driver, cluster, nodes):
        with cluster.controller_down():
            with pytest.raises(SlurmUnavailable):
                impatient_driver.ping()
            with pytest.raises(SlurmUnavailable):
                impatient_driver.nodes()
            with pytest.raises(SlurmUnavailable):
                impatient_driver.jobs()
            if self.supports_node_update:
                with pytest.raises(SlurmUnavailable):
                    impatient_driver.drain([nodes[0]], "controller is down")

        impatient_driver.ping()
        assert len(impatient_driver.nodes()) == len(cluster.node_names())
        assert "DRAIN" not in cluster.observe_node(nodes[0]).flags


class SlurmDriverContract(SlurmDriverReadContract):
    """The full contract: the reads plus drain and resume."""

    supports_node_update = True

    # --- drain and resume ---------------------------------------------------------------------

    def test_drain_stores_the_reason_verbatim(self, driver, cluster, nodes):
        started = datetime.now(UTC) - timedelta(seconds=5)

        driver.drain([nodes[0]], AWKWARD_REASON)

        node = self._state(driver, nodes[0])
        assert "DRAIN" in node.flags
        assert node.display_state == "drained"
        assert node.reason == AWKWARD_REASON
        assert node.reason_set_at is not None and node.reason_set_at >= started
        assert cluster.observe_node(nodes[0]) == ObservedNode(frozenset(node.flags), AWKWARD_REASON)

    def test_drain_of_a_drained_node_succeeds(self, driver, cluster, nodes):
        driver.drain([nodes[1]], "first reason")

        driver.drain([nodes[1], nodes[2]], "second reason")

        for name in nodes[1:3]:
            node = self._state(driver, name)
            assert node.display_state == "drained", node
            assert node.reason == "second reason", node
            assert "DRAIN" in cluster.observe_node(name).flags

    def test_resume_returns_nodes_to_service(self, driver, cluster, nodes):
        driver.drain(nodes[1:3], "maintenance")

        # One request naming drained nodes and an idle one (Slurm 22.05 complains about the
        # idle one but clears the drains: the driver must report success).
        driver.resume(nodes[1:4])

        for name in nodes[1:4]:
            node = self._state(driver, name)
            assert "DRAIN" not in node.flags, node
            assert node.reason == "", node
            observed = cluster.observe_node(name)
            assert "DRAIN" not in observed.flags and observed.reason == "", observed
        driver.resume([nodes[3]])  # resuming an idle node succeeds

    def test_drain_with_a_running_job_goes_draining_then_drained(
        self, driver, cluster, nodes, submit
    ):
        job_id = submit(nodes=nodes[4:5], gpus_per_node=8, seconds=5, name="contract-drain")
        cluster.wait_until(lambda: cluster.job_state(job_id) == "RUNNING", f"job {job_id} to run")

        driver.drain([nodes[4]], "drain behind a running job")

        node = self._state(driver, nodes[4])
        assert node.display_state == "draining", node
        assert node.gpus_used == 8
        assert job_id in {job.job_id for job in driver.jobs()}
        cluster.wait_until(
            lambda: self._state(driver, nodes[4]).display_state == "drained",
            f"{nodes[4]} to become drained once job {job_id} ends",
        )
        assert self._state(driver, nodes[4]).reason == "drain behind a running job"

    def test_unknown_node_is_rejected_and_nothing_changes(self, driver, cluster, nodes):
        with pytest.raises(SlurmRejected, match=UNKNOWN_NODE):
            driver.drain([nodes[0], UNKNOWN_NODE], "typo in the list")
        with pytest.raises(SlurmRejected, match=UNKNOWN_NODE):
            driver.resume([UNKNOWN_NODE])

        assert "DRAIN" not in self._state(driver, nodes[0]).flags
        assert "DRAIN" not in cluster.observe_node(nodes[0]).flags

    @pytest.mark.parametrize(
        ("names", "reason"),
        [
            (["gpu[001-002]"], "hostlist syntax is not a node name"),
            (["gpu001 gpu002"], "space"),
            (['gpu001"'], "quote"),
            (["-gpu001"], "leading dash"),
            ([], "no node at all"),
            (None, "   "),
            (None, "two\nlines"),
        ],
    )
    def test_malformed_requests_are_rejected_before_slurm(
        self, driver, cluster, nodes, names, reason
    ):
        with pytest.raises(SlurmRejected):
            driver.drain([nodes[0]] if names is None else names, reason)

        assert "DRAIN" not in cluster.observe_node(nodes[0]).flags

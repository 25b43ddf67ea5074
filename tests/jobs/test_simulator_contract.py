"""The simulator driver passes the same contract as the real drivers (tests/jobs/
driver_contract.py), with the simulator's own state as the hands and a clock the waits move
forward: no Slurm cluster needed, and it runs in seconds.

Run: .venv/bin/python -m pytest tests/jobs/test_simulator_contract.py -q
"""

from __future__ import annotations

import pytest

from jobs.drivers.simulator import SimulatorDriver
from tests.jobs.driver_contract import SlurmDriverContract
from tests.jobs.simulator_cluster import SimulatorCluster, SteppingClock, make_contract_simulator


class TestSimulatorDriverContract(SlurmDriverContract):
    @pytest.fixture
    def stepping_clock(self) -> SteppingClock:
        return SteppingClock()

    @pytest.fixture
    def driver(self, db, stepping_clock) -> SimulatorDriver:
        return make_contract_simulator(stepping_clock)

    @pytest.fixture
    def cluster(self, driver, stepping_clock) -> SimulatorCluster:
        return SimulatorCluster(driver, stepping_clock)


def test_the_simulator_contract_is_not_marked_as_needing_real_slurm():
    """`-m "not slurm"` (no cluster at hand) must still run the simulator's contract. Pytest
    gathers class marks along the MRO, so none of the classes may carry `slurm`."""
    marks = [
        mark.name
        for klass in TestSimulatorDriverContract.__mro__
        for mark in klass.__dict__.get("pytestmark", [])
    ]
    assert "slurm" not in marks

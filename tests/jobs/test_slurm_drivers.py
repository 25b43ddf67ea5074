"""The driver contract against the real Slurm 22.05 test cluster, for both real drivers.

Run: .venv/bin/python -m pytest tests/jobs/test_slurm_drivers.py -q -m slurm
Needs root and MariaDB (see scripts/slurm-up); starts a 20-node cluster unless one is up.
"""

from __future__ import annotations

import pytest

from jobs.drivers.cli import ScontrolDriver
from jobs.drivers.slurmrestd import SlurmrestdDriver
from tests.jobs import slurm_cluster
from tests.jobs.driver_contract import SlurmDriverContract, SlurmDriverReadContract

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm
pytestmark = pytest.mark.slurm

# Commands answer in milliseconds here; with the controller gone each would retry for ~10 s.
IMPATIENT_TIMEOUT = 2.0


@pytest.fixture(scope="session")
def rest_token(real_slurm) -> str:
    return slurm_cluster.slurmrestd_token(real_slurm.info, username="slurmrest", lifespan=1800)


class TestScontrolDriverContract(SlurmDriverContract):
    @pytest.fixture
    def cluster(self, real_slurm):
        return real_slurm

    @pytest.fixture
    def driver(self, real_slurm):
        return ScontrolDriver(conf=real_slurm.conf, timeout=30)

    @pytest.fixture
    def impatient_driver(self, real_slurm):
        return ScontrolDriver(conf=real_slurm.conf, timeout=IMPATIENT_TIMEOUT)


class TestSlurmrestdDriverContract(SlurmDriverReadContract):
    """Slurm 22.05's REST API (v0.0.38) reads everything but cannot update nodes: the contract
    checks that drain and resume say so (SlurmNotSupported) and touch nothing."""

    supports_node_update = False

    @pytest.fixture
    def cluster(self, real_slurm):
        return real_slurm

    @pytest.fixture
    def driver(self, real_slurm, rest_token):
        return SlurmrestdDriver(
            url=real_slurm.info["slurmrestd_url"], user="slurmrest", token=rest_token, timeout=30
        )

    @pytest.fixture
    def impatient_driver(self, real_slurm, rest_token):
        return SlurmrestdDriver(
            url=real_slurm.info["slurmrestd_url"],
            user="slurmrest",
            token=rest_token,
            timeout=IMPATIENT_TIMEOUT,
        )

"""The driver contract against the real Slurm 22.05 test cluster, for both real drivers.

Run: .venv/bin/python -m pytest tests/jobs/test_slurm_drivers.py -q -m slurm
Needs root and MariaDB (see scripts/slurm-up); starts a 20-node cluster unless one is up.
"""

from __future__ import annotations

import pytest

from inventory.hostlist import compress_hostlist
from jobs.drivers.base import SlurmRejected
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


def _counting(driver: ScontrolDriver) -> list[tuple[str, ...]]:
    """Record each command the driver runs (argv without the executable's directory)."""
    commands: list[tuple[str, ...]] = []
    run = driver._run

    def recorded(program, *args):
        commands.append((program, *args))
        return run(program, *args)

    driver._run = recorded
    return commands


def test_a_drain_of_nodes_slurm_just_confirmed_is_one_command(real_slurm, settings):
    """Issue 28 item 4: the existence check before every update doubled a drain's commands; a
    node slurmctld confirmed within SLURM_KNOWN_NODE_SECONDS is not asked about again, and an
    unknown name is still refused before anything changes."""
    from tests.jobs.slurm_fixtures import sinfo_state_and_reason

    settings.SLURM_KNOWN_NODE_SECONDS = 60
    driver = ScontrolDriver(conf=real_slurm.conf, timeout=30)
    commands = _counting(driver)
    node, other = real_slurm.node_names()[-1], real_slurm.node_names()[-2]
    hostlist = compress_hostlist([node, other])
    try:
        driver.drain([node, other], "first drain checks the names")
        assert [command[:3] for command in commands] == [
            ("scontrol", "-o", "show"), ("scontrol", "update", f"NodeName={hostlist}")]
        commands.clear()
        driver.resume([node, other])
        driver.drain([other, node], "second drain is one command")
        assert [command[1] for command in commands] == ["update", "update"]
        assert sinfo_state_and_reason(real_slurm, node)[1] == "second drain is one command"
        driver.resume([node, other])

        commands.clear()
        with pytest.raises(SlurmRejected, match="does not know node"):
            driver.drain([other, "gpu-not-in-slurm"], "refused as a whole")
        assert [command[1] for command in commands] == ["-o"]  # checked; nothing updated
        assert not sinfo_state_and_reason(real_slurm, other)[0].startswith("drain")

        settings.SLURM_KNOWN_NODE_SECONDS = 0  # confirmed too long ago: asked again
        commands.clear()
        driver.resume([node, other])
        assert [command[1] for command in commands][:1] == ["-o"]
    finally:
        ScontrolDriver(conf=real_slurm.conf, timeout=30).resume([node, other])


def test_a_drain_of_one_node_is_one_command_even_unconfirmed(real_slurm, settings):
    """A web server's driver has rarely seen the node it drains (the node syncs confirm names in
    the worker): one node is never checked first, since an update of one unknown node changes
    nothing, and Slurm's refusal of it reads as the check's."""
    from tests.jobs.slurm_fixtures import sinfo_state_and_reason

    settings.SLURM_KNOWN_NODE_SECONDS = 0  # nothing counts as confirmed
    driver = ScontrolDriver(conf=real_slurm.conf, timeout=30)
    commands = _counting(driver)
    node = real_slurm.node_names()[-3]
    try:
        driver.drain([node], "one node, one command")
        driver.resume([node])
        assert [command[:3] for command in commands] == [
            ("scontrol", "update", f"NodeName={node}")] * 2
        assert not sinfo_state_and_reason(real_slurm, node)[0].startswith("drain")

        commands.clear()
        for operation, args in ((driver.drain, ("typo",)), (driver.resume, ())):
            with pytest.raises(SlurmRejected) as refused:
                operation(["gpu-not-in-slurm"], *args)
            assert str(refused.value) == (
                "Slurm does not know node(s) gpu-not-in-slurm "
                "(slurm_update error: Invalid node name specified); nothing was changed")
        assert [command[1] for command in commands] == ["update", "update"]
    finally:
        ScontrolDriver(conf=real_slurm.conf, timeout=30).resume([node])

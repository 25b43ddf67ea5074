"""Fixtures of the tests that run against the real Slurm test cluster (tests/jobs/slurm_cluster.py):
the controller, the inventory's fleet of its nodes, and what `sinfo` says of one node.

A pytest plugin the test modules load with `pytest_plugins = ["tests.jobs.slurm_fixtures"]`.
`real_slurm` is session-scoped: those tests share the one controller and run one after another
in one xdist worker (the "shared-services" group, tests/conftest.py), so the cluster is started
once and stopped (if this session started it) when the session ends.
"""

from __future__ import annotations

import pytest

from inventory.models import Node
from tests.jobs import slurm_cluster


@pytest.fixture(scope="session")
def real_slurm() -> slurm_cluster.RealSlurmCluster:
    cluster = slurm_cluster.acquire_test_cluster()
    yield cluster
    slurm_cluster.release_test_cluster()


@pytest.fixture
def fleet(transactional_db, real_slurm) -> dict[str, Node]:
    """Inventory rows for every node of the test cluster, by hostname."""
    Node.objects.bulk_create([Node(hostname=name) for name in real_slurm.node_names()])
    return {node.hostname: node for node in Node.objects.all()}


def sinfo_state_and_reason(real_slurm, name: str) -> tuple[str, str]:
    """What an operator sees: `sinfo -N -p <partition> -o '%t|%E'` for one node, read with
    Slurm's own CLI rather than a portal driver. The first line only: a node in several
    partitions would be listed once per partition."""
    out = real_slurm.run(
        "sinfo", "-h", "-N", "-p", real_slurm.info["partition"], "-n", name, "-o", "%t|%E"
    ).stdout
    lines = out.strip().splitlines()
    state, _, reason = (lines[0] if lines else "").partition("|")
    return state, reason

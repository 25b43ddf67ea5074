"""Fixtures of the jobs tests: a simulated Slurm with a clock the test moves, and a recorder
for the node-unhealthy hook. The SAKURAONE fleet lives in tests/jobs/fleet/ only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs import hooks
from jobs.drivers.simulator import SimulatorDriver

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self, start: datetime = START):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs) -> datetime:
        self.now += timedelta(**kwargs)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_simulator(db, clock):
    """make_simulator(nodes=20, **options) -> a SimulatorDriver on its own quiet cluster:
    no history, no random failures, no arrivals unless asked for."""

    def make(nodes: int = 20, **options) -> SimulatorDriver:
        settings = {
            "history_hours": 0,
            "mean_failure_seconds": 0,
            "mean_arrival_seconds": 10**9,
            **options,
        }
        names = [f"gpu{number:03d}" for number in range(1, nodes + 1)]
        driver = SimulatorDriver(cluster="test", clock=clock, node_names=names, **settings)
        driver.ping()  # the cluster starts now, so moving the clock later runs it forward
        return driver

    return make


@pytest.fixture
def unhealthy_calls():
    """Records every notify_node_unhealthy call made while the test runs."""
    calls = []

    def listener(*, node, state, reason):
        calls.append((node.hostname, state, reason))

    hooks.register_node_unhealthy_listener(listener)
    yield calls
    hooks._unhealthy_listeners.remove(listener)

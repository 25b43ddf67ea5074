"""Fleets for the fabric monitor's tests: the SAKURAONE spec, whole or trimmed per pod.

Imported by the test modules (not a conftest, so the fabric tests of other sessions keep their
own). A trimmed fleet keeps every switch, rail and cable rule and only has fewer nodes per pod,
so tests that need the shape of the fabric but not its size stay fast.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.inventory.conftest import SAKURAONE_SPEC_PATH, delete_inventory

__all__ = ["SAKURAONE_SPEC_PATH", "delete_inventory", "fleet_spec", "import_fleet"]


def fleet_spec(nodes_per_pod: int | None = None) -> dict:
    from inventory.topology.spec import spec_from_yaml

    spec = copy.deepcopy(spec_from_yaml(Path(SAKURAONE_SPEC_PATH).read_text(encoding="utf-8")))
    if nodes_per_pod is not None:
        for number, pod in enumerate(spec["pods"]):
            first = number * 50 + 1
            pod["nodes"][0]["range"] = f"gpu[{first:03d}-{first + nodes_per_pod - 1:03d}]"
    return spec


def import_fleet(nodes_per_pod: int | None = None):
    from inventory.topology.importer import import_topology

    delete_inventory()
    return import_topology(fleet_spec(nodes_per_pod))


@pytest.fixture(scope="module")
def small_fleet(django_db_setup, django_db_blocker):
    """All 26 switches and every cable rule, 4 nodes per pod; imported once per module."""
    with django_db_blocker.unblock():
        report = import_fleet(4)
    yield report
    with django_db_blocker.unblock():
        delete_inventory()


@pytest.fixture(scope="module")
def full_fleet(django_db_setup, django_db_blocker):
    """The whole SAKURAONE fleet (100 nodes, 26 switches, 1,664 ports); once per module."""
    with django_db_blocker.unblock():
        report = import_fleet()
    yield report
    with django_db_blocker.unblock():
        delete_inventory()


class FakeClock:
    """Epoch seconds that move only when a test says so, for exact rates."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def emulated(settings):
    """The emulated fabric booted from the current inventory, on a fake clock (`.clock`); the
    portal's FABRIC_DRIVER points at it for the test."""
    import time

    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric

    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    clock = FakeClock(float(int(time.time()) // 60 * 60))
    fabric = build_emulated_fabric(clock=clock)
    fabric.fake_clock = clock
    yield fabric
    reset_emulated_fabric()


def poll_every_minute(fabric, times: int, switches=None):
    """Poll `times` times (every switch, or `switches`: hostnames), the fake clock one minute
    on before each; the last result."""
    from fabric.polling import poll_fabric
    from inventory.models import Switch

    chosen = list(Switch.objects.filter(hostname__in=switches)) if switches else None
    result = None
    for _ in range(times):
        fabric.fake_clock.advance(60)
        result = poll_fabric(switches=chosen)
    return result


def delete_fabric_monitoring() -> None:
    from fabric.models import (
        LldpFinding,
        LldpObservation,
        PortCounterHistory,
        PortCounterLatest,
        SwitchPollState,
    )

    for model in (PortCounterHistory, PortCounterLatest, SwitchPollState, LldpObservation,
                  LldpFinding):
        model.objects.all().delete()


@pytest.fixture(scope="module")
def polled_fleet(django_db_setup, django_db_blocker):
    """The trimmed fleet, emulated and polled three times a minute apart, committed once per
    module (read-only tests share it; a test that changes the emulator undoes it)."""
    import time

    from django.test import override_settings

    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric

    with django_db_blocker.unblock(), override_settings(
        FABRIC_DRIVER="fabric.drivers.emulated.EmulatedDriver"
    ):
        import_fleet(4)
        clock = FakeClock(float(int(time.time()) // 60 * 60))
        fabric = build_emulated_fabric(clock=clock)
        fabric.fake_clock = clock
        fabric.switches["leaf-p1-r0"].set_utilization("Ethernet0", 0.95)
        poll_every_minute(fabric, 3)
        yield fabric
        reset_emulated_fabric()
        delete_fabric_monitoring()
        delete_inventory()

"""Fixtures of the fabric monitor's tests: the SAKURAONE fleet, whole or trimmed per pod, and
the emulated fabric on a fake clock.

A pytest plugin the test modules load with `pytest_plugins = ["tests.fabric.fleet"]` (not a
conftest, so other fabric tests keep their own). A trimmed fleet keeps every switch, rail and
cable rule and only has fewer nodes per pod, so tests that need the shape of the fabric but
not its size stay fast.
"""

from __future__ import annotations

import pytest

from tests.fabric.monitoring_support import (
    FakeClock,
    delete_fabric_monitoring,
    delete_inventory,
    import_fleet,
    poll_every_minute,
)


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

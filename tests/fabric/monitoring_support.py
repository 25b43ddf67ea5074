"""Helpers for the fabric monitor's tests: trimmed SAKURAONE fleets, a fake clock, polling
a minute at a time. Fixtures built on them live in tests/fabric/fleet.py (a pytest plugin the
test modules load with `pytest_plugins`)."""

from __future__ import annotations

import copy
from pathlib import Path

from tests.inventory.conftest import SAKURAONE_SPEC_PATH, delete_inventory

__all__ = ["FakeClock", "delete_fabric_monitoring", "delete_inventory", "fleet_spec",
           "import_fleet", "poll_every_minute"]


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


class FakeClock:
    """Epoch seconds that move only when a test says so, for exact rates."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


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
        SwitchThroughputLatest,
    )

    for model in (PortCounterHistory, PortCounterLatest, SwitchPollState,
                  SwitchThroughputLatest, LldpObservation, LldpFinding):
        model.objects.all().delete()

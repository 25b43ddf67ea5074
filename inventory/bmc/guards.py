"""The seam through which an app above inventory says what a power change would hit.

`inventory` may not import `jobs`; the jobs app registers a guard in its AppConfig.ready() that
names the running jobs on each node. A power-off or reset of a node some guard names is refused
unless the operator forces it with a reason (`inventory.bmc.power`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inventory.models import Node

# nodes -> {hostname: ["job 1234 (alice, physics)", ...]}
PowerGuard = Callable[[list["Node"]], dict[str, list[str]]]

_power_guards: list[PowerGuard] = []


def register_power_guard(guard: PowerGuard) -> None:
    if guard not in _power_guards:
        _power_guards.append(guard)


def power_blockers(nodes: Iterable[Node]) -> dict[str, list[str]]:
    """{hostname: [what it would hit]} for every node some guard names."""
    nodes = list(nodes)
    blockers: dict[str, list[str]] = {}
    for guard in list(_power_guards):
        for hostname, hits in guard(nodes).items():
            blockers.setdefault(hostname, []).extend(hits)
    return blockers

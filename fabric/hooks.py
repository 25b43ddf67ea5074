"""Where fabric findings go: a listener registry the faults app hooks into.

The fabric app calls `notify_fabric_finding(finding)` when LLDP reconciliation first sees a
swapped, mismatched or missing link, and when rail health flags an imbalance. The faults app
registers a listener (in its AppConfig.ready) that opens a ticket: misconfiguration for swapped
cables, NIC/transceiver for a missing link, interconnect switch for a rail imbalance.

Listeners run in the caller's transaction, each inside its own savepoint, so a failing
listener is logged and rolled back alone and never breaks the poll that found the problem.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FabricFinding:
    """One problem in the fabric.

    kind: "swapped", "mismatched", "missing", "unexpected" (LLDP) or "rail_imbalance".
    key: a stable identity, so a listener can de-duplicate repeated reports.
    """

    kind: str
    key: str
    summary: str
    switches: tuple[str, ...] = ()
    ports: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)


FindingListener = Callable[[FabricFinding], None]

_listeners: list[FindingListener] = []


def register_fabric_finding_listener(listener: FindingListener) -> FindingListener:
    """Call `listener(finding)` for every new fabric finding. Usable as a decorator."""
    if listener not in _listeners:
        _listeners.append(listener)
    return listener


def unregister_fabric_finding_listener(listener: FindingListener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def notify_fabric_finding(finding: FabricFinding) -> None:
    for listener in list(_listeners):
        try:
            with transaction.atomic():
                listener(finding)
        except Exception:
            logger.exception("fabric finding listener %r failed on %s", listener, finding.key)

"""Where fabric findings go: a listener registry the faults app hooks into.

The fabric app calls `notify_fabric_finding(finding)` when LLDP reconciliation first sees a
swapped, mismatched or missing link, and when rail health flags an imbalance. The faults app
registers a listener (in its AppConfig.ready) that opens a ticket: misconfiguration for swapped
cables, NIC/transceiver for a missing link, interconnect switch for a rail imbalance.

Signals travel the same way: `notify_fabric_signals([...])` with a `LinkChange` when a
port the portal last saw up goes down or one seen down comes back (from the counter poll, or
from a switch Action reading the port back), and a `SwitchReachability` when a switch stops
answering the poll (FABRIC_UNREACHABLE_AFTER_FAILURES polls in a row) or answers again.

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


@dataclass(frozen=True)
class LinkChange:
    """A port went down (was up) or came back up (was down)."""

    switch: str
    port: str
    admin_up: bool
    oper_up: bool
    action_id: int | None = None  # the portal Action that made the change, when one did

    @property
    def up(self) -> bool:
        return self.admin_up and self.oper_up


@dataclass(frozen=True)
class SwitchReachability:
    switch: str
    reachable: bool
    error: str = ""
    consecutive_failures: int = 0


SignalListener = Callable[[list], None]

_signal_listeners: list[SignalListener] = []


def register_fabric_signal_listener(listener: SignalListener) -> SignalListener:
    """Call `listener(signals)` with the LinkChanges and SwitchReachability changes one poll
    (or one switch Action) saw, together: a leaf's maintenance shuts dozens of ports at once,
    and a listener may want to treat them as one event."""
    if listener not in _signal_listeners:
        _signal_listeners.append(listener)
    return listener


def notify_fabric_signals(signals) -> None:
    """To each listener in its own savepoint: one failing is logged, never breaks the poll or
    the Action that saw the signals."""
    signals = list(signals)
    if not signals:
        return
    for listener in list(_signal_listeners):
        try:
            with transaction.atomic():
                listener(signals)
        except Exception:
            logger.exception("fabric signal listener %r failed on %d signals", listener,
                             len(signals))

"""Seams between the jobs app and the apps that react to Slurm (faults), without importing them.

- Node health: the node-state sync calls `notify_node_unhealthy` when a node turns DOWN or
  NOT_RESPONDING; the faults app registers a listener that opens or updates a ticket.
- Resume guards: before a resume is queued, `resume_blockers` asks every registered guard why a
  node should stay out of service (an open fault ticket, say); the caller needs an explicit
  override to resume such nodes.
Apps register in their AppConfig.ready().
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inventory.models import Node

NodeUnhealthyListener = Callable[..., None]  # (*, node, state, reason) -> None
ResumeGuard = Callable[[list["Node"]], dict[str, str]]  # nodes -> {hostname: why not}

_unhealthy_listeners: list[NodeUnhealthyListener] = []
_resume_guards: list[ResumeGuard] = []


def register_node_unhealthy_listener(listener: NodeUnhealthyListener) -> None:
    if listener not in _unhealthy_listeners:
        _unhealthy_listeners.append(listener)


def notify_node_unhealthy(*, node: Node, state: str, reason: str) -> None:
    """Called inside the sync's transaction, once per transition into an unhealthy state."""
    for listener in list(_unhealthy_listeners):
        listener(node=node, state=state, reason=reason)


def register_resume_guard(guard: ResumeGuard) -> None:
    if guard not in _resume_guards:
        _resume_guards.append(guard)


def resume_blockers(nodes: Iterable[Node]) -> dict[str, str]:
    """{hostname: reason} for every node some guard wants kept out of service."""
    nodes = list(nodes)
    blockers: dict[str, str] = {}
    for guard in list(_resume_guards):
        for hostname, why in guard(nodes).items():
            blockers[hostname] = f"{blockers[hostname]}; {why}" if hostname in blockers else why
    return blockers

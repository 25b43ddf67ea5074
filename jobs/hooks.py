"""Seams between the jobs app and the apps that react to Slurm (faults), without importing them.

- Node health: the node-state sync calls `notify_node_unhealthy` when a node turns DOWN or
  NOT_RESPONDING; the faults app registers a listener that opens or updates a ticket.
- Resume guards: before a resume is queued, `resume_blockers` asks every registered guard why a
  node should stay out of service (an open fault ticket, say); the caller needs an explicit
  override to resume such nodes.
- Signals: the node-state sync calls `notify_slurm_signal` with `HealthCheckDrain`
  when the node health check drains a node, `NodeRecovered` when a node leaves DOWN /
  NOT_RESPONDING or a health-check drain; the accounting import with `JobNodeFail` when a job
  ends NODE_FAIL. Each listener runs in its own savepoint: a failure is logged and rolled back
  alone, never the sync.
- Accounted jobs: the accounting import (sacct sync and trace import alike) calls
  `notify_jobs_accounted` with the pks of the jobs whose final record it just wrote, once per
  batch, inside the batch's transaction; telemetry keeps a row per finished GPU job beside its
  utilisation summary from it. A failing listener fails the batch: a copy that silently missed
  a job would give wrong figures, a failed import is retried.
Apps register in their AppConfig.ready().
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction

if TYPE_CHECKING:
    from inventory.models import Node
    from jobs.models import Job

logger = logging.getLogger(__name__)

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


# LBNL NHC drains with its notes prefixed "NHC:" (mej/nhc, helpers/node-mark-offline:
# LEADER="NHC:", then `scontrol update State=DRAIN Reason="$LEADER $NOTE"`), and resumes only
# nodes whose reason carries that prefix. Sites with another checker add its prefix.
DEFAULT_HEALTH_CHECK_REASON_PREFIXES = ("NHC:",)


def is_health_check_reason(reason: str) -> bool:
    prefixes = getattr(settings, "JOBS_HEALTH_CHECK_REASON_PREFIXES",
                       DEFAULT_HEALTH_CHECK_REASON_PREFIXES)
    return any((reason or "").startswith(prefix) for prefix in prefixes)


@dataclass(frozen=True)
class HealthCheckDrain:
    node: Node
    reason: str


@dataclass(frozen=True)
class NodeRecovered:
    node: Node
    previous_state: str
    state: str
    previous_reason: str


@dataclass(frozen=True)
class JobNodeFail:
    job: Job


SlurmSignalListener = Callable[[object], None]
_signal_listeners: list[SlurmSignalListener] = []


def register_slurm_signal_listener(listener: SlurmSignalListener) -> None:
    if listener not in _signal_listeners:
        _signal_listeners.append(listener)


def notify_slurm_signal(signal) -> None:
    for listener in list(_signal_listeners):
        try:
            with transaction.atomic():
                listener(signal)
        except Exception:
            logger.exception("Slurm signal listener %r failed on %s", listener, signal)


JobsAccountedListener = Callable[[list[int]], None]  # job pks -> None
_accounted_listeners: list[JobsAccountedListener] = []


def register_jobs_accounted_listener(listener: JobsAccountedListener) -> None:
    if listener not in _accounted_listeners:
        _accounted_listeners.append(listener)


def notify_jobs_accounted(job_pks: list[int]) -> None:
    """Called inside the accounting import's transaction with the pks of the jobs it created or
    changed (in bulk, one call per batch)."""
    if not job_pks:
        return
    for listener in list(_accounted_listeners):
        listener(job_pks)

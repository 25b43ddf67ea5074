"""Writes of the jobs app: drain and resume requests become Actions (DESIGN.md section 3)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from inventory.hostlist import compress_hostlist
from inventory.models import Node
from jobs import hooks
from portal.errors import Conflict, InvalidInput
from portal.models import Action
from portal.services.actions import enqueue_action

DRAIN_ACTION = "slurm.drain"
RESUME_ACTION = "slurm.resume"
REBOOT_ACTION = "slurm.reboot"
CANCEL_REBOOT_ACTION = "slurm.cancel_reboot"
# What Slurm does with a node once it is back: `scontrol reboot nextstate=RESUME|DOWN`.
REBOOT_NEXT_STATES = ("resume", "down")
MAX_REASON_LENGTH = 1000


def _node_names(nodes: Sequence[Node]) -> list[str]:
    names = sorted({node.hostname for node in nodes})
    if not names:
        raise InvalidInput({"nodes": ["Name at least one node."]})
    return names


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput({"reason": ["A reason is required: Slurm shows it to everyone."]})
    if len(reason) > MAX_REASON_LENGTH:
        raise InvalidInput({"reason": [f"Use at most {MAX_REASON_LENGTH} characters."]})
    if any(ord(character) < 32 or ord(character) == 127 for character in reason):
        raise InvalidInput({"reason": ["Use one line of printable text."]})
    return reason


def request_drain(
    *,
    nodes: Sequence[Node],
    reason: str,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue one Action that drains all `nodes` in one Slurm call. Returns (action, created)."""
    return _enqueue_for_nodes(DRAIN_ACTION, nodes, reason, requested_by=requested_by, via=via,
                              idempotency_key=idempotency_key)


def _enqueue_for_nodes(kind: str, nodes: Sequence[Node], reason: str, *, requested_by, via: str,
                       idempotency_key: str | None) -> tuple[Action, bool]:
    """One Action of `kind` over `nodes`, targeted at their hostlist, with a checked reason."""
    names = _node_names(nodes)
    return enqueue_action(
        kind=kind,
        target=compress_hostlist(names),
        reason=_clean_reason(reason),
        requested_by=requested_by,
        parameters={"nodes": names},
        idempotency_key=idempotency_key,
        via=via,
    )


def request_resume(
    *,
    nodes: Sequence[Node],
    reason: str,
    requested_by=None,
    override: bool = False,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue one Action that resumes all `nodes`.

    A node some guard wants kept out of service (an open fault ticket) needs `override=True`;
    otherwise the request is refused naming each such node and why.
    """
    names = _node_names(nodes)
    reason = _clean_reason(reason)
    blockers = hooks.resume_blockers(nodes)
    if blockers and not override:
        raise Conflict(
            {"override": [f"{name}: {why}" for name, why in sorted(blockers.items())]},
            blocked_nodes=sorted(blockers),
        )
    return enqueue_action(
        kind=RESUME_ACTION,
        target=compress_hostlist(names),
        reason=reason,
        requested_by=requested_by,
        # What the override set aside, in the guards' words: the audit row and the ticket's
        # timeline (faults links the Action to the node's open ticket) say why it was needed.
        parameters={"nodes": names, "override": bool(blockers) and override,
                    "overridden": [f"{name}: {why}" for name, why in sorted(blockers.items())]
                    if override else []},
        idempotency_key=idempotency_key,
        via=via,
    )


def request_reboot(
    *,
    nodes: Sequence[Node],
    reason: str,
    next_state: str = "resume",
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue one Action that asks Slurm to reboot all `nodes` as soon as their jobs end
    (`scontrol reboot ASAP`), leaving them resumed or down (`next_state`) afterwards."""
    names = _node_names(nodes)
    reason = _clean_reason(reason)
    if next_state not in REBOOT_NEXT_STATES:
        raise InvalidInput({"next_state": [f"Use one of: {', '.join(REBOOT_NEXT_STATES)}."]})
    return enqueue_action(
        kind=REBOOT_ACTION,
        target=compress_hostlist(names),
        reason=reason,
        requested_by=requested_by,
        # The deadline is fixed when asked for (as a leaf maintenance's is): ASAP waits for
        # the nodes' jobs, so it covers their end as well as the boot.
        parameters={
            "nodes": names,
            "next_state": next_state,
            "deadline": (
                timezone.now() + timedelta(seconds=settings.SLURM_REBOOT_DEADLINE_SECONDS)
            ).isoformat(),
        },
        idempotency_key=idempotency_key,
        via=via,
    )


def request_cancel_reboot(
    *,
    nodes: Sequence[Node],
    reason: str,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue one Action that withdraws the reboot Slurm still holds for `nodes` (REBOOT_REQUESTED,
    `scontrol cancel_reboot`): the pending slurm.reboot Action then fails, saying so."""
    return _enqueue_for_nodes(CANCEL_REBOOT_ACTION, nodes, reason, requested_by=requested_by,
                              via=via, idempotency_key=idempotency_key)

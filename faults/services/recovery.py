"""A ticket's recovery actions in one click, the ticket as the reason.

Each step becomes a durable Action through the owning app's service (jobs: drain, resume;
fabric: port shutdown and startup), with the reason "FT-12: <summary>", linked to the ticket and
put on its timeline. Who may do what follows the owning app: responders (admin, operator,
on-call) drain and resume; switch ports are for admins and operators, as on the switch pages.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from faults.models import FaultTicket, TimelineKind
from faults.services.timeline import add_timeline_entry, publish_ticket_event
from faults.workflow import OPEN_STATUSES
from inventory.hostlist import compress_hostlist
from inventory.models import Node
from jobs.services import request_drain, request_resume
from portal.errors import Conflict, InvalidInput
from portal.models import Action
from portal.roles import may

DRAINED_STATES = frozenset({"drained", "draining"})
RECOVERY_STEP_NAMES = ("drain", "resume", "shut_port", "start_port")


@dataclass(frozen=True)
class RecoveryStep:
    step: str
    label: str
    capability: str  # portal/roles.py: who may take the step


def _impact_nodes(ticket: FaultTicket) -> list[Node]:
    """A ticket on a switch (a leaf's maintenance) has no node of its own: the nodes its impact
    named at detection are the ones to bring back."""
    names = [row.get("hostname") for row in (ticket.impact or {}).get("nodes", [])]
    return list(Node.objects.filter(hostname__in=[name for name in names if name])
                .order_by("hostname"))


def recovery_steps(ticket: FaultTicket, *, user=None) -> list[RecoveryStep]:
    """The one-click steps that fit the ticket's components and their current state (and, with
    `user`, that the user's role may take)."""
    steps: list[RecoveryStep] = []
    node = ticket.node
    if node is not None:
        if node.slurm_state in DRAINED_STATES or node.slurm_state == "down":
            steps.append(RecoveryStep("resume", f"Resume {node.hostname}", "resume"))
        else:
            steps.append(RecoveryStep("drain", f"Drain {node.hostname}", "drain"))
    elif ticket.switch_id and ticket.port_id is None:
        drained = [n.hostname for n in _impact_nodes(ticket) if n.slurm_state in DRAINED_STATES]
        if drained:
            steps.append(RecoveryStep("resume", f"Resume {compress_hostlist(drained)}",
                                      "resume"))
    port = ticket.port
    if port is not None:
        where = f"{port.switch.hostname} {port.name}"
        if port.admin_status == "down":
            # While the port is shut, bringing it back is the recovery; the page makes the first
            # step its primary button, and resuming a node whose rail is still cut off is not it.
            steps.insert(0, RecoveryStep("start_port", f"Start up {where}", "act_on_switch"))
        else:
            steps.append(RecoveryStep("shut_port", f"Shut down {where}", "act_on_switch"))
    if user is not None:
        steps = [step for step in steps if may(user, step.capability)]
    return steps


def _reason(ticket: FaultTicket, note: str = "") -> str:
    reason = f"{ticket.reference}: {ticket.summary}"
    if note:
        reason = f"{ticket.reference}: {note} ({ticket.summary})"
    return " ".join(reason.split())[:900]


def request_recovery(*, ticket: FaultTicket, step: str, actor, via: str = "api") -> Action:
    """Queue `step` (recovery_steps) for `ticket` as an Action with the ticket as reason."""
    with transaction.atomic():
        FaultTicket.objects.select_for_update().filter(pk=ticket.pk).exists()  # one at a time
        ticket = FaultTicket.objects.select_related("node", "port__switch").get(pk=ticket.pk)
        offered = {option.step: option for option in recovery_steps(ticket)}
        if step not in offered:
            names = ", ".join(offered) or "none"
            raise InvalidInput({"step": [f"{step!r} does not apply to {ticket.reference} now; "
                                         f"its steps: {names}."]})
        option = offered[step]
        if not may(actor, option.capability):
            raise Conflict({"step": [f"Your role may not {option.label.lower()}."]})
        if ticket.status not in OPEN_STATUSES:
            raise Conflict({"step": [f"{ticket.reference} is {ticket.status}: reopen it first."]})
        if step == "drain":
            action, _ = request_drain(nodes=[ticket.node], reason=_reason(ticket),
                                      requested_by=actor, via=via)
        elif step == "resume":
            nodes = [ticket.node] if ticket.node is not None else [
                node for node in _impact_nodes(ticket) if node.slurm_state in DRAINED_STATES
            ]
            return request_resume_for_ticket(ticket=ticket, nodes=nodes, actor=actor, via=via)
        else:
            from fabric.services import request_port_admin

            action, _ = request_port_admin(
                switch=ticket.port.switch, ports=[ticket.port.name], up=step == "start_port",
                reason=_reason(ticket), requested_by=actor, via=via,
            )
        _record(ticket, action, actor, option.label)
    return action


def request_resume_for_ticket(*, ticket: FaultTicket, nodes: list[Node], actor, note: str = "",
                              via: str = "faults") -> Action:
    """Resume `nodes` for this ticket: its own hold on them is the reason to resume, so only
    other open tickets (or other guards) refuse it (409 naming them)."""
    # The faults resume guard holds a node for every open ticket on it; this ticket's hold is
    # what the resume answers, so the override is given only when no other ticket holds one.
    others = (
        FaultTicket.objects.filter(node__in=nodes, status__in=OPEN_STATUSES)
        .exclude(pk=ticket.pk)
        .select_related("node")
        .order_by("pk")
    )
    if others:
        held = [f"{other.node.hostname}: open fault ticket {other.reference} ({other.status}): "
                f"{other.summary}" for other in others]
        raise Conflict({"override": held},
                       blocked_nodes=sorted({other.node.hostname for other in others}))
    action, _ = request_resume(nodes=nodes, reason=_reason(ticket, note), requested_by=actor,
                               override=True, via=via)
    label = f"Resume {compress_hostlist([node.hostname for node in nodes])}"
    _record(ticket, action, actor, label)
    return action


def _record(ticket: FaultTicket, action: Action, actor, label: str) -> None:
    if not ticket.actions.filter(pk=action.pk).exists():
        ticket.actions.add(action)
    authenticated = getattr(actor, "is_authenticated", False)
    who = actor.get_username() if authenticated else "policy"
    add_timeline_entry(ticket, TimelineKind.AUTOMATIC if not authenticated else TimelineKind.NOTE,
                       f"{label}: Action #{action.pk} queued by {who}, reason \"{action.reason}\".",
                       author=actor, action=action)
    if authenticated and ticket.acknowledged_at is None:
        # Acting on a ticket acknowledges it, as a transition does.
        FaultTicket.objects.filter(pk=ticket.pk).update(
            acknowledged_at=timezone.now(), responder=actor
        )
    publish_ticket_event(ticket, "fault.updated")

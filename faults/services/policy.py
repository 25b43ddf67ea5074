"""The policy at work: a rule's automatic steps carried out on a ticket, its proposals put on the
timeline, each once however often the incident is delivered (the rules: faults.policies)."""

from __future__ import annotations

from faults.models import FaultTicket, TimelineKind
from faults.parsing import Incident
from faults.policies import STEP_DESCRIPTIONS
from faults.selectors import is_repeat_offender
from faults.services.timeline import add_timeline_entry
from jobs.services import request_drain


def apply_policy(ticket: FaultTicket, incident: Incident) -> None:
    """Carry out the rule's automatic steps and put its proposals on the timeline, once each."""
    rule = incident.rule
    reason = f"{ticket.reference}: {rule.title}"
    for step in rule.auto:
        if step == "drain" and ticket.node_id:
            action, _ = request_drain(
                nodes=[ticket.node],
                reason=reason,
                requested_by=None,
                via="faults",
                idempotency_key=f"faults:FT-{ticket.pk}:drain",
            )
            if not ticket.actions.filter(pk=action.pk).exists():
                ticket.actions.add(action)
                add_timeline_entry(
                    ticket,
                    TimelineKind.AUTOMATIC,
                    f"Policy {rule.kind}: drain of {ticket.node.hostname} queued "
                    f"(Action #{action.pk}, reason \"{reason}\").",
                    action=action,
                )
        elif step == "mark_suspect" and ticket.gpu_id and not ticket.gpu_suspect:
            ticket.gpu_suspect = True
            ticket.save(update_fields=["gpu_suspect", "updated_at"])
            add_timeline_entry(
                ticket,
                TimelineKind.AUTOMATIC,
                f"Policy {rule.kind}: GPU{ticket.gpu.index} (serial {ticket.gpu_serial or '?'}) "
                "marked suspect.",
            )
    proposals = list(rule.propose)
    repeats = rule.propose_vendor_on_repeat and "vendor" not in proposals
    if repeats and is_repeat_offender(ticket):
        proposals.append("vendor")
    for step in proposals:
        text = f"Proposed by policy {rule.kind}: {STEP_DESCRIPTIONS[step]}."
        if step == "vendor" and rule.propose_vendor_on_repeat and step not in rule.propose:
            text = f"Proposed by policy {rule.kind}: repeat offender, {STEP_DESCRIPTIONS[step]}."
        if not ticket.timeline.filter(kind=TimelineKind.PROPOSAL, text=text).exists():
            add_timeline_entry(ticket, TimelineKind.PROPOSAL, text)

"""What people (and the policy) do to a ticket: move it along the workflow (faults.workflow),
take it, add a note, reopen it as a new linked ticket."""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.utils import timezone

from faults.models import (
    SUBTYPES,
    Category,
    FaultTicket,
    FaultTransition,
    RecoveryMethod,
    TimelineEntry,
    TimelineKind,
)
from faults.selectors import recovery_evidence
from faults.services.deduplication import open_ticket_by_fingerprint
from faults.services.recovery import resolve_blockers
from faults.services.timeline import MAX_NOTE_LENGTH, add_timeline_entry, publish_ticket_event
from faults.workflow import OPEN_STATUSES, Status, allowed_targets, is_reopenable, reopen_window
from portal.errors import Conflict, InvalidInput
from portal.services.audit import record_change, snapshot


def transition_ticket(
    *,
    ticket: FaultTicket,
    to_status: str,
    actor,
    note: str = "",
    category: str | None = None,
    subtype: str | None = None,
    recovery_method: str | None = None,
    rma_part: str | None = None,
    rma_case_number: str | None = None,
    rma_expected_at: date | None = None,
    confirm: bool = False,
    via: str = "api",
) -> FaultTicket:
    """Move a ticket along the workflow (faults/workflow.py); refused with 409 naming the allowed
    targets. Entering a state stamps its time and records a FaultTransition row.

    Resolving while the ticket's node still drains or runs jobs needs `confirm` (409 naming it):
    a fix is rarely done while the node still works. Verifying clears the suspect-GPU flag: the
    check that the fix held is what the flag waited for."""
    if to_status not in Status.values:
        raise InvalidInput({"to_status": [f"Unknown status {to_status!r}."]})
    note = (note or "").strip()
    if len(note) > MAX_NOTE_LENGTH:
        raise InvalidInput({"note": [f"Use at most {MAX_NOTE_LENGTH} characters."]})
    with transaction.atomic():
        ticket = FaultTicket.objects.select_for_update().get(pk=ticket.pk)
        allowed = allowed_targets(ticket.status)
        if to_status not in allowed:
            # People read this (the page shows it): labels, not enum values; `allowed` keeps the
            # values for API clients.
            names = ", ".join(Status(value).label for value in allowed) or (
                "none (the ticket is closed)")
            raise Conflict(
                {"to_status": [f"{ticket.reference} is {ticket.get_status_display()}: cannot "
                               f"go to {Status(to_status).label}. Allowed: {names}."]},
                allowed=list(allowed),
            )
        if to_status == Status.RESOLVED and not confirm:
            early = resolve_blockers(ticket)
            if early:
                raise Conflict({"confirm": [
                    f"{'; '.join(early)}: resolve {ticket.reference} anyway? Repeat with "
                    "confirm to do it."
                ]})
        evidence = None
        if to_status == Status.RESOLVED and not recovery_method:
            # What was done for the ticket says how it was fixed; a person says it only when
            # nothing done through the portal does.
            evidence = recovery_evidence(ticket)
            if evidence is not None:
                recovery_method = evidence.method
        before = snapshot(ticket)
        changed = _apply_transition_fields(
            ticket, to_status, category=category, subtype=subtype,
            recovery_method=recovery_method, rma_part=rma_part,
            rma_case_number=rma_case_number, rma_expected_at=rma_expected_at,
        )
        now = timezone.now()
        from_status = ticket.status
        ticket.status = to_status
        stamps = {
            Status.TRIAGED: "triaged_at",
            Status.FALSE_POSITIVE: "triaged_at",
            Status.MITIGATING: "mitigated_at",
            Status.RESOLVED: "resolved_at",
            Status.VERIFIED: "verified_at",
            Status.CLOSED: "closed_at",
        }
        stamp = stamps.get(to_status)
        # The first time counts (a ticket mitigated twice was mitigated the first time), except
        # resolution: after a failed verification the fix that held is the one MTTR measures.
        if stamp and (getattr(ticket, stamp) is None or to_status == Status.RESOLVED):
            setattr(ticket, stamp, now)
            changed.append(stamp)
        if to_status == Status.VERIFIED and ticket.gpu_suspect:
            ticket.gpu_suspect = False
            changed.append("gpu_suspect")
        if ticket.acknowledged_at is None:
            ticket.acknowledged_at = now  # acting on a ticket acknowledges it
            changed.append("acknowledged_at")
        if ticket.responder_id is None and getattr(actor, "is_authenticated", False):
            ticket.responder = actor
            changed.append("responder")
        ticket.save(update_fields=[*set(changed), "status", "updated_at"])
        FaultTransition.objects.create(
            ticket=ticket, from_status=from_status, to_status=to_status,
            actor=actor if getattr(actor, "is_authenticated", False) else None, at=now, note=note,
        )
        who = actor.get_username() if getattr(actor, "is_authenticated", False) else "system"
        add_timeline_entry(
            ticket,
            TimelineKind.TRANSITION,
            f"{from_status} → {to_status} by {who}" + (f": {note}" if note else "")
            + (f" (recovery: {ticket.get_recovery_method_display()}, from {evidence.source})"
               if evidence is not None else ""),
            author=actor,
            at=now,
        )
        record_change(actor=actor, operation="update", instance=ticket, before=before,
                      after=snapshot(ticket), note=f"{from_status} -> {to_status}", via=via)
        publish_ticket_event(ticket, "fault.updated")
    return ticket


def _apply_transition_fields(ticket, to_status, **values) -> list[str]:
    """Check what entering `to_status` needs, and set the fields the request brought."""
    errors: dict[str, list[str]] = {}
    changed: list[str] = []
    category, subtype = values["category"], values["subtype"]
    if category is not None:
        if category not in Category.values:
            errors["category"] = [f"Unknown category {category!r}."]
        else:
            ticket.category = category
            changed.append("category")
    if subtype is not None:
        allowed = SUBTYPES.get(ticket.category, ())
        if subtype and subtype not in allowed:
            errors["subtype"] = [
                f"{subtype!r} is not a subtype of {ticket.get_category_display()}; use one of "
                f"{', '.join(allowed) or '(none)'}."
            ]
        else:
            ticket.subtype = subtype
            changed.append("subtype")
    if to_status == Status.TRIAGED and ticket.category == Category.UNCLASSIFIED:
        errors.setdefault("category", []).append("Triage confirms a category: choose one.")
    if values["recovery_method"] is not None:
        if values["recovery_method"] not in RecoveryMethod.values:
            errors["recovery_method"] = [f"Unknown recovery method {values['recovery_method']!r}."]
        else:
            ticket.recovery_method = values["recovery_method"]
            changed.append("recovery_method")
    if to_status == Status.RESOLVED and not ticket.recovery_method:
        errors.setdefault("recovery_method", []).append(
            f"Say how it was fixed: {', '.join(RecoveryMethod.labels)}."
        )
    for name in ("rma_part", "rma_case_number", "rma_expected_at"):
        if values[name] not in (None, ""):
            setattr(ticket, name, values[name].strip() if isinstance(values[name], str)
                    else values[name])
            changed.append(name)
    if to_status == Status.AWAITING_VENDOR:
        for name, label in (("rma_part", "the part"), ("rma_case_number", "the case number")):
            if not getattr(ticket, name):
                errors.setdefault(name, []).append(f"An RMA needs {label}.")
    if errors:
        raise InvalidInput(errors)
    return changed


def acknowledge_ticket(*, ticket: FaultTicket, actor) -> FaultTicket:
    """Take a ticket: the actor becomes the responder; the first acknowledgement is timed."""
    with transaction.atomic():
        ticket = FaultTicket.objects.select_for_update().get(pk=ticket.pk)
        if ticket.status not in OPEN_STATUSES and ticket.status != Status.RESOLVED:
            raise Conflict({"detail": f"{ticket.reference} is {ticket.get_status_display()}; "
                                      "nothing to take."})
        now = timezone.now()
        fields = ["responder", "updated_at"]
        if ticket.acknowledged_at is None:
            ticket.acknowledged_at = now
            fields.append("acknowledged_at")
        ticket.responder = actor
        ticket.save(update_fields=fields)
        add_timeline_entry(ticket, TimelineKind.NOTE, f"Acknowledged by {actor.get_username()}.",
                           author=actor, at=now)
        publish_ticket_event(ticket, "fault.updated")
    return ticket


def add_note(*, ticket: FaultTicket, author, text: str) -> TimelineEntry:
    text = (text or "").strip()
    if not text:
        raise InvalidInput({"text": ["Write something."]})
    if len(text) > MAX_NOTE_LENGTH:
        raise InvalidInput({"text": [f"Use at most {MAX_NOTE_LENGTH} characters."]})
    with transaction.atomic():
        entry = add_timeline_entry(ticket, TimelineKind.NOTE, text, author=author)
        publish_ticket_event(ticket, "fault.updated")
    return entry


def reopen_ticket(*, ticket: FaultTicket, actor, note: str = "") -> FaultTicket:
    """The fault came back soon after it was fixed: a new ticket linked to the old one.

    Chosen over reopening in place so the first ticket's MTTR stays true and the recurrence is
    counted (a repeat offender). Allowed within FAULTS_REOPEN_WINDOW_HOURS of the resolution.
    """
    with transaction.atomic():
        ticket = FaultTicket.objects.select_for_update().get(pk=ticket.pk)
        if not is_reopenable(ticket.status) or ticket.resolved_at is None:
            raise Conflict({"detail": f"{ticket.reference} is {ticket.get_status_display()}; "
                                      "only resolved, "
                                      "verified or closed tickets are reopened."})
        if timezone.now() - ticket.resolved_at > reopen_window():
            raise Conflict({"detail": f"{ticket.reference} was resolved more than "
                                      f"{reopen_window()} ago: open a new ticket instead."})
        if ticket.fingerprint and open_ticket_by_fingerprint(ticket.fingerprint):
            raise Conflict({"detail": "An open ticket for this component and kind exists."})
        reopened = FaultTicket.objects.create(
            category=ticket.category, subtype=ticket.subtype, severity=ticket.severity,
            summary=ticket.summary, fingerprint=ticket.fingerprint, sources=list(ticket.sources),
            node=ticket.node, gpu=ticket.gpu, gpu_serial=ticket.gpu_serial, nic=ticket.nic,
            switch=ticket.switch, port=ticket.port, cable=ticket.cable,
            gpu_suspect=ticket.gpu_suspect, detected_at=timezone.now(), reopened_from=ticket,
            last_event_at=timezone.now(), job_id=ticket.job_id,
        )
        add_timeline_entry(reopened, TimelineKind.EVENT,
                           f"Reopened from {ticket.reference} by {actor.get_username()}"
                           + (f": {note}" if note else "."), author=actor)
        add_timeline_entry(ticket, TimelineKind.NOTE, f"Reopened as {reopened.reference}.",
                           author=actor)
        record_change(actor=actor, operation="create", instance=reopened,
                      after=snapshot(reopened), note=f"reopened from {ticket.reference}")
        publish_ticket_event(reopened, "fault.created")
    return reopened


def auto_resolve(ticket: FaultTicket, *, note: str) -> None:
    """Resolve a ticket nobody has to fix (its alert resolved), through triage when it is new."""
    if ticket.status == Status.NEW:
        ticket = transition_ticket(ticket=ticket, to_status=Status.TRIAGED, actor=None, note=note)
    if Status.RESOLVED in allowed_targets(ticket.status):
        transition_ticket(
            ticket=ticket, to_status=Status.RESOLVED, actor=None, note=note,
            recovery_method=RecoveryMethod.NONE_NEEDED,
        )

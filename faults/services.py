"""Writes of the faults app: intake, de-duplication, policy steps, the workflow, notes.

De-duplication (STYLE.md, after Grafana OnCall): a partial unique constraint allows one open
ticket per fingerprint. A delivery first looks for a ticket it belongs to (under a row lock);
if none, it inserts in a savepoint, and on IntegrityError (a concurrent delivery won the race)
re-reads the winner and attaches to it. Twenty concurrent copies of one event make one ticket.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from faults import parsing
from faults.hooks import impact_snapshot
from faults.parsing import Incident
from faults.models import (
    SUBTYPES,
    Category,
    FaultTicket,
    FaultTransition,
    IntakeRecord,
    RecoveryMethod,
    Severity,
    Source,
    TimelineEntry,
    TimelineKind,
)
from faults.policies import STEP_DESCRIPTIONS, repeat_threshold
from faults.workflow import OPEN_STATUSES, REOPENABLE_STATUSES, Status, allowed_targets
from inventory.models import GPU, Node, Switch
from jobs.services import request_drain
from portal.errors import Conflict, InvalidInput
from portal.realtime import publish
from portal.services.audit import record_change, snapshot
from portal.text_input import (
    NUL,
    nul_character_error,
    nul_character_field,
    without_nul_characters,
)

logger = logging.getLogger(__name__)

FAULTS_GROUP = "faults"
SEVERITY_RANK = {Severity.MINOR: 0, Severity.MAJOR: 1, Severity.CRITICAL: 2}
MAX_NOTE_LENGTH = 5000


def reopen_window() -> timedelta:
    return timedelta(hours=float(getattr(settings, "FAULTS_REOPEN_WINDOW_HOURS", 72)))


# --- raw intake --------------------------------------------------------------------------------


def record_intake(*, channel: str, raw_body: str, submitted_by=None) -> IntakeRecord:
    """Keep a delivery as received, before anything can refuse it (committed on its own when
    called outside a transaction, so a refused payload is still there to inspect).

    PostgreSQL cannot store a NUL character: the body is kept with U+FFFD in its place, and
    the delivery is refused naming the field that held it."""
    payload, errors = _payload_of(raw_body)
    return IntakeRecord.objects.create(
        channel=channel,
        raw_body=without_nul_characters(raw_body),
        payload=payload,
        errors=errors,
        submitted_by=submitted_by if getattr(submitted_by, "is_authenticated", False) else None,
    )


def _payload_of(raw_body: str) -> tuple[object, dict]:
    """(parsed body or None, the refusal when the body holds a NUL character)."""
    try:
        payload = json.loads(raw_body) if raw_body else None
    except ValueError:
        if NUL not in raw_body:
            return None, {}
        # A raw NUL inside a string is a control character strict JSON refuses; read it
        # leniently only to say which field held it.
        try:
            lenient = json.loads(raw_body, strict=False)
        except ValueError:
            lenient = None
        return None, nul_character_error(nul_character_field(lenient) or "")
    field = nul_character_field(payload)
    if field is not None:
        return None, nul_character_error(field)
    return payload, {}


def _refuse(record: IntakeRecord, error: InvalidInput) -> None:
    detail = error.detail if isinstance(error.detail, dict) else {"detail": error.detail}
    IntakeRecord.objects.filter(pk=record.pk).update(accepted=False, errors=detail)


def _parsed_body(record: IntakeRecord):
    if record.errors:
        raise InvalidInput(record.errors)
    if record.payload is None:
        raise InvalidInput({"detail": "The body is not valid JSON."})
    return record.payload


def receive_platform_event(*, raw_body: str, submitted_by=None) -> tuple[FaultTicket, bool]:
    """Platform monitor intake: keep the raw event, validate it, open or attach a ticket."""
    record = record_intake(channel=Source.PLATFORM, raw_body=raw_body, submitted_by=submitted_by)
    try:
        incident = parsing.parse_platform_event(_parsed_body(record))
    except InvalidInput as error:
        _refuse(record, error)
        raise
    with transaction.atomic():
        ticket, created = apply_incident(incident, actor=submitted_by, intake=record)
        IntakeRecord.objects.filter(pk=record.pk).update(accepted=True)
        record.tickets.add(ticket)
    return ticket, created


def receive_alertmanager(*, raw_body: str, submitted_by=None) -> list[dict]:
    """Alertmanager webhook: firing alerts open or attach, resolved ones go on the timeline
    (and resolve the ticket where the kind's rule says so). Returns one line per alert."""
    record = record_intake(
        channel=Source.ALERTMANAGER, raw_body=raw_body, submitted_by=submitted_by
    )
    try:
        deliveries = parsing.parse_alertmanager(_parsed_body(record))
    except InvalidInput as error:
        _refuse(record, error)
        raise
    outcome = []
    with transaction.atomic():
        for delivery in deliveries:
            incident = delivery.incident
            if delivery.status == "firing":
                ticket, created = apply_incident(incident, actor=submitted_by, intake=record)
                outcome.append({"ticket": ticket.pk, "created": created, "status": "firing"})
            else:
                ticket = _record_alert_resolved(delivery, intake=record)
                outcome.append({"ticket": ticket.pk if ticket else None, "status": "resolved"})
            if ticket is not None:
                record.tickets.add(ticket)
        IntakeRecord.objects.filter(pk=record.pk).update(accepted=True)
    return outcome


def submit_user_report(
    *,
    reported_by,
    summary: str,
    node: Node | None = None,
    gpu: GPU | None = None,
    switch: Switch | None = None,
    category: str = "",
    description: str = "",
    detected_at: datetime | None = None,
) -> tuple[FaultTicket, bool]:
    """A person's report (from the form or the API): one ticket per incident, shared with
    whatever the platform already reported about the same component."""
    summary = (summary or "").strip()
    errors: dict[str, list[str]] = {}
    if not summary:
        errors["summary"] = ["Say in one line what is wrong."]
    elif len(summary) > 300:
        errors["summary"] = ["Use at most 300 characters."]
    if category and category not in Category.values:
        errors["category"] = [f"Unknown category {category!r}."]
    if node is None and switch is None:
        errors["node"] = ["Name the node (or the switch) the problem is on."]
    if gpu is not None and node is not None and gpu.node_id != node.pk:
        errors["gpu"] = [f"GPU{gpu.index} is not in {node.hostname}."]
    if errors:
        raise InvalidInput(errors)
    payload = {
        "summary": summary,
        "node": node.hostname if node else None,
        "gpu": gpu.index if gpu else None,
        "switch": switch.hostname if switch else None,
        "category": category,
        "description": description,
    }
    with transaction.atomic():
        record = record_intake(
            channel=Source.USER_REPORT, raw_body=json.dumps(payload), submitted_by=reported_by
        )
        incident = parsing.user_report_incident(
            node=node, gpu=gpu, switch=switch, category=category, summary=summary,
            detected_at=detected_at,
        )
        if description:
            incident.details["message"] = description[:MAX_NOTE_LENGTH]
        ticket, created = apply_incident(incident, actor=reported_by, intake=record)
        IntakeRecord.objects.filter(pk=record.pk).update(accepted=True)
        record.tickets.add(ticket)
    return ticket, created


def on_node_unhealthy(*, node: Node, state: str, reason: str) -> None:
    """The jobs hook: Slurm saw `node` go DOWN or NOT_RESPONDING (inside the sync's transaction).

    Runs in a savepoint: a failure here is logged and must not roll back the node-state sync.
    """
    try:
        with transaction.atomic():
            record = record_intake(
                channel=Source.SLURM,
                raw_body=json.dumps({"node": node.hostname, "state": state, "reason": reason}),
            )
            incident = parsing.slurm_incident(node=node, state=state, reason=reason)
            ticket, _ = apply_incident(incident, actor=None, intake=record)
            IntakeRecord.objects.filter(pk=record.pk).update(accepted=True)
            record.tickets.add(ticket)
    except Exception:
        logger.exception("could not open a fault ticket for %s %s", node.hostname, state)


def on_fabric_finding(finding) -> None:
    """The fabric hook: LLDP found swapped, mismatched or missing links, or rail health found an
    imbalance. Opens (or attaches to) the ticket of that port or leaf; the raw finding is kept."""
    record = record_intake(
        channel=Source.SWITCH,
        raw_body=json.dumps({"kind": finding.kind, "key": finding.key, "summary": finding.summary,
                             "switches": list(finding.switches), "ports": list(finding.ports),
                             "nodes": list(finding.nodes)}),
    )
    incident = parsing.fabric_incident(finding)
    if incident is None:
        return
    ticket, _ = apply_incident(incident, actor=None, intake=record)
    IntakeRecord.objects.filter(pk=record.pk).update(accepted=True)
    record.tickets.add(ticket)


# --- open or attach ----------------------------------------------------------------------------


def apply_incident(
    incident: Incident, *, actor=None, intake: IntakeRecord | None = None
) -> tuple[FaultTicket, bool]:
    """Attach `incident` to its open ticket, or open one. Returns (ticket, created)."""
    with transaction.atomic():
        ticket = _correlated_open_ticket(incident)
        created = False
        if ticket is None:
            try:
                with transaction.atomic():  # a savepoint: losing the race must not doom the caller
                    ticket = _open_ticket(incident, actor=actor, intake=intake)
                    created = True
            except IntegrityError:
                ticket = _open_ticket_by_fingerprint(incident.fingerprint)
                if ticket is None:
                    raise
        if not created:
            _attach(ticket, incident, intake=intake)
        _apply_policy(ticket, incident)
        alert = incident.alert_fingerprint
        if alert and alert not in ticket.alert_fingerprints:
            ticket.alert_fingerprints = [*ticket.alert_fingerprints, alert]
            ticket.save(update_fields=["alert_fingerprints", "updated_at"])
        _publish(ticket, "fault.created" if created else "fault.updated")
    return ticket, created


def _open_tickets():
    return FaultTicket.objects.select_for_update().filter(status__in=OPEN_STATUSES)


def _open_ticket_by_fingerprint(fingerprint: str) -> FaultTicket | None:
    if not fingerprint:
        return None
    return _open_tickets().filter(fingerprint=fingerprint).first()


def _correlated_open_ticket(incident: Incident) -> FaultTicket | None:
    """The open ticket this incident belongs to, locked, or None.

    1. the same fingerprint (component + kind);
    2. a person's report or Slurm's DOWN says little about the cause: any open ticket on the same
       GPU, else on the same node or switch;
    3. a classified event joins an unclassified ticket (a report, a DOWN) on the same node/switch.
    """
    ticket = _open_ticket_by_fingerprint(incident.fingerprint)
    if ticket is not None:
        return ticket
    components = incident.components
    newest_first = ("-detected_at", "-pk")
    if incident.source in (Source.USER_REPORT, Source.SLURM) or (
        incident.category == Category.UNCLASSIFIED
    ):
        if components.gpu is not None:
            ticket = _open_tickets().filter(gpu=components.gpu).order_by(*newest_first).first()
            if ticket is not None:
                return ticket
        if components.node is not None:
            return _open_tickets().filter(node=components.node).order_by(*newest_first).first()
        if components.switch is not None:
            return _open_tickets().filter(switch=components.switch).order_by(*newest_first).first()
        return None
    unclassified = _open_tickets().filter(category=Category.UNCLASSIFIED).order_by(*newest_first)
    if components.node is not None:
        return unclassified.filter(node=components.node).first()
    if components.switch is not None:
        return unclassified.filter(switch=components.switch).first()
    return None


def _open_ticket(incident: Incident, *, actor, intake) -> FaultTicket:
    components = incident.components
    node = components.node or (components.gpu.node if components.gpu else None)
    ticket = FaultTicket.objects.create(
        category=incident.category,
        subtype=incident.subtype,
        severity=incident.severity,
        summary=incident.summary[:300],
        fingerprint=incident.fingerprint,
        sources=[incident.source],
        last_event_at=incident.detected_at,
        node=node,
        gpu=components.gpu,
        gpu_serial=components.gpu.serial if components.gpu else "",
        nic=components.nic,
        switch=components.switch or (components.port.switch if components.port else None),
        port=components.port,
        detected_at=incident.detected_at,
        reopened_from=_recent_ticket_with_fingerprint(incident.fingerprint),
        job_id=components.job,
    )
    _timeline(
        ticket,
        TimelineKind.EVENT,
        f"Opened from {Source(incident.source).label}: {incident.summary}{_details(incident)}",
        source=incident.source,
        author=actor,
        intake=intake,
        at=incident.detected_at,
    )
    if ticket.reopened_from_id:
        _timeline(
            ticket,
            TimelineKind.AUTOMATIC,
            f"Recurrence of {ticket.reopened_from.reference}, resolved within the reopen window.",
        )
    _capture_impact(ticket, incident)
    record_change(actor=actor, operation="create", instance=ticket, after=snapshot(ticket),
                  via="faults")
    return ticket


def _capture_impact(ticket: FaultTicket, incident: Incident) -> None:
    """Keep what the fault hit when it opened (running jobs, tenants, nodes, rails): by the time
    somebody reads the ticket the jobs may have ended or moved."""
    target = incident.details.get("impact_target") or ticket.impact_target
    if not target and incident.details.get("nodes"):
        target = f"hostlist:{incident.details['nodes']}"
    impact = impact_snapshot(target) if target else {}
    if not impact:
        return
    ticket.impact = impact
    ticket.save(update_fields=["impact", "updated_at"])
    _timeline(ticket, TimelineKind.AUTOMATIC,
              f"Impact at detection: {impact.get('summary', {}).get('text', '')}")


def _recent_ticket_with_fingerprint(fingerprint: str) -> FaultTicket | None:
    if not fingerprint:
        return None
    since = timezone.now() - reopen_window()
    return (
        FaultTicket.objects.filter(
            fingerprint=fingerprint, status__in=REOPENABLE_STATUSES, resolved_at__gte=since
        )
        .order_by("-resolved_at")
        .first()
    )


def _details(incident: Incident) -> str:
    shown = [f"{key}={value}" for key, value in incident.details.items()
             if key not in ("message", "impact_target")]
    text = f" ({', '.join(shown)})" if shown else ""
    if incident.details.get("message"):
        text += f" — {incident.details['message']}"
    return text


def _attach(ticket: FaultTicket, incident: Incident, *, intake) -> None:
    """A further delivery for an open ticket: list the channel, count it, learn what it adds."""
    changed = ["event_count", "last_event_at", "updated_at"]
    ticket.event_count += 1
    ticket.last_event_at = max(filter(None, [ticket.last_event_at, incident.detected_at]))
    if incident.source not in ticket.sources:
        ticket.sources = [*ticket.sources, incident.source]
        changed.append("sources")
    if SEVERITY_RANK[incident.severity] > SEVERITY_RANK[ticket.severity]:
        ticket.severity = incident.severity
        changed.append("severity")
    if incident.detected_at < ticket.detected_at:
        # The platform saw it before the user reported it: detection is the earliest sighting.
        ticket.detected_at = incident.detected_at
        changed.append("detected_at")
    components = incident.components
    if components.job and not ticket.job_id:
        ticket.job_id = components.job
        changed.append("job_id")
    if ticket.signal_cleared_at is not None:
        ticket.signal_cleared_at = None  # the signal is back
        changed.append("signal_cleared_at")
    for name in ("gpu", "nic", "switch", "port", "node"):
        if getattr(ticket, f"{name}_id") is None and getattr(components, name) is not None:
            setattr(ticket, name, getattr(components, name))
            changed.append(name)
    if ticket.gpu_id and not ticket.gpu_serial:
        ticket.gpu_serial = ticket.gpu.serial
        changed.append("gpu_serial")
    classifies = (
        ticket.category == Category.UNCLASSIFIED and incident.category != Category.UNCLASSIFIED
    )
    if classifies:
        ticket.category, ticket.subtype = incident.category, incident.subtype
        ticket.summary = incident.summary[:300]
        changed += ["category", "subtype", "summary"]
    ticket.save(update_fields=changed)
    if classifies and incident.fingerprint:
        try:
            with transaction.atomic():
                FaultTicket.objects.filter(pk=ticket.pk).update(fingerprint=incident.fingerprint)
                ticket.fingerprint = incident.fingerprint
        except IntegrityError:
            pass  # another open ticket holds it; this one keeps its own fingerprint
    _timeline(
        ticket,
        TimelineKind.EVENT,
        f"{Source(incident.source).label}: {incident.summary}{_details(incident)}",
        source=incident.source,
        intake=intake,
    )


def _record_alert_resolved(delivery, *, intake) -> FaultTicket | None:
    incident = delivery.incident
    candidates = list(_open_tickets().filter(fingerprint=incident.fingerprint)) if (
        incident.fingerprint
    ) else []
    if incident.alert_fingerprint:
        components = incident.components
        nearby = _open_tickets()
        if components.node is not None:
            candidates += list(nearby.filter(node=components.node))
        elif components.switch is not None:
            candidates += list(nearby.filter(switch=components.switch))
    ticket = next(
        (t for t in candidates if incident.alert_fingerprint in t.alert_fingerprints),
        candidates[0] if candidates and candidates[0].fingerprint == incident.fingerprint else None,
    )
    if ticket is None:
        return None
    ends = delivery.ends_at.isoformat() if delivery.ends_at else "now"
    _timeline(
        ticket,
        TimelineKind.EVENT,
        f"Alertmanager: {incident.details.get('alertname')} resolved at {ends}.",
        source=Source.ALERTMANAGER,
        intake=intake,
    )
    if incident.rule.auto_resolve_when_alert_resolves:
        _auto_resolve(ticket, note=f"Alert {incident.details.get('alertname')} resolved.")
    else:
        _publish(ticket, "fault.updated")
    return ticket


def _auto_resolve(ticket: FaultTicket, *, note: str) -> None:
    if ticket.status == Status.NEW:
        ticket = transition_ticket(ticket=ticket, to_status=Status.TRIAGED, actor=None, note=note)
    if Status.RESOLVED in allowed_targets(ticket.status):
        transition_ticket(
            ticket=ticket, to_status=Status.RESOLVED, actor=None, note=note,
            recovery_method=RecoveryMethod.NONE_NEEDED,
        )


# --- policy ------------------------------------------------------------------------------------


def _apply_policy(ticket: FaultTicket, incident: Incident) -> None:
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
                _timeline(
                    ticket,
                    TimelineKind.AUTOMATIC,
                    f"Policy {rule.kind}: drain of {ticket.node.hostname} queued "
                    f"(Action #{action.pk}, reason \"{reason}\").",
                    action=action,
                )
        elif step == "mark_suspect" and ticket.gpu_id and not ticket.gpu_suspect:
            ticket.gpu_suspect = True
            ticket.save(update_fields=["gpu_suspect", "updated_at"])
            _timeline(
                ticket,
                TimelineKind.AUTOMATIC,
                f"Policy {rule.kind}: GPU{ticket.gpu.index} (serial {ticket.gpu_serial or '?'}) "
                "marked suspect.",
            )
    proposals = list(rule.propose)
    repeats = rule.propose_vendor_on_repeat and "vendor" not in proposals
    if repeats and len(earlier_tickets_for_component(ticket)) >= repeat_threshold():
        proposals.append("vendor")
    for step in proposals:
        text = f"Proposed by policy {rule.kind}: {STEP_DESCRIPTIONS[step]}."
        if step == "vendor" and rule.propose_vendor_on_repeat and step not in rule.propose:
            text = f"Proposed by policy {rule.kind}: repeat offender, {STEP_DESCRIPTIONS[step]}."
        if not ticket.timeline.filter(kind=TimelineKind.PROPOSAL, text=text).exists():
            _timeline(ticket, TimelineKind.PROPOSAL, text)


def earlier_tickets_for_component(ticket: FaultTicket) -> list[FaultTicket]:
    """Tickets before this one on the same GPU serial, or else the same node: repeat offenders."""
    others = FaultTicket.objects.exclude(pk=ticket.pk).filter(detected_at__lte=ticket.detected_at)
    if ticket.gpu_serial:
        return list(others.filter(gpu_serial=ticket.gpu_serial))
    if ticket.node_id:
        return list(others.filter(node_id=ticket.node_id))
    return []


# --- the workflow ------------------------------------------------------------------------------


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
    via: str = "api",
) -> FaultTicket:
    """Move a ticket along the workflow (faults/workflow.py); refused with 409 naming the allowed
    targets. Entering a state stamps its time and records a FaultTransition row."""
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
        _timeline(
            ticket,
            TimelineKind.TRANSITION,
            f"{from_status} → {to_status} by {who}" + (f": {note}" if note else ""),
            author=actor,
            at=now,
        )
        record_change(actor=actor, operation="update", instance=ticket, before=before,
                      after=snapshot(ticket), note=f"{from_status} -> {to_status}", via=via)
        _publish(ticket, "fault.updated")
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
        _timeline(ticket, TimelineKind.NOTE, f"Acknowledged by {actor.get_username()}.",
                  author=actor, at=now)
        _publish(ticket, "fault.updated")
    return ticket


def add_note(*, ticket: FaultTicket, author, text: str) -> TimelineEntry:
    text = (text or "").strip()
    if not text:
        raise InvalidInput({"text": ["Write something."]})
    if len(text) > MAX_NOTE_LENGTH:
        raise InvalidInput({"text": [f"Use at most {MAX_NOTE_LENGTH} characters."]})
    with transaction.atomic():
        entry = _timeline(ticket, TimelineKind.NOTE, text, author=author)
        _publish(ticket, "fault.updated")
    return entry


def reopen_ticket(*, ticket: FaultTicket, actor, note: str = "") -> FaultTicket:
    """The fault came back soon after it was fixed: a new ticket linked to the old one.

    Chosen over reopening in place so the first ticket's MTTR stays true and the recurrence is
    counted (a repeat offender). Allowed within FAULTS_REOPEN_WINDOW_HOURS of the resolution.
    """
    with transaction.atomic():
        ticket = FaultTicket.objects.select_for_update().get(pk=ticket.pk)
        if ticket.status not in REOPENABLE_STATUSES or ticket.resolved_at is None:
            raise Conflict({"detail": f"{ticket.reference} is {ticket.get_status_display()}; "
                                      "only resolved, "
                                      "verified or closed tickets are reopened."})
        if timezone.now() - ticket.resolved_at > reopen_window():
            raise Conflict({"detail": f"{ticket.reference} was resolved more than "
                                      f"{reopen_window()} ago: open a new ticket instead."})
        if ticket.fingerprint and _open_ticket_by_fingerprint(ticket.fingerprint):
            raise Conflict({"detail": "An open ticket for this component and kind exists."})
        reopened = FaultTicket.objects.create(
            category=ticket.category, subtype=ticket.subtype, severity=ticket.severity,
            summary=ticket.summary, fingerprint=ticket.fingerprint, sources=list(ticket.sources),
            node=ticket.node, gpu=ticket.gpu, gpu_serial=ticket.gpu_serial, nic=ticket.nic,
            switch=ticket.switch, port=ticket.port, cable=ticket.cable,
            gpu_suspect=ticket.gpu_suspect, detected_at=timezone.now(), reopened_from=ticket,
            last_event_at=timezone.now(), job_id=ticket.job_id,
        )
        _timeline(reopened, TimelineKind.EVENT,
                  f"Reopened from {ticket.reference} by {actor.get_username()}"
                  + (f": {note}" if note else "."), author=actor)
        _timeline(ticket, TimelineKind.NOTE, f"Reopened as {reopened.reference}.", author=actor)
        record_change(actor=actor, operation="create", instance=reopened,
                      after=snapshot(reopened), note=f"reopened from {ticket.reference}")
        _publish(reopened, "fault.created")
    return reopened


# --- the resume guard --------------------------------------------------------------------------


def open_ticket_resume_blockers(nodes: Sequence[Node]) -> dict[str, str]:
    """The jobs resume guard: a node with an open ticket stays out unless overridden."""
    blockers: dict[str, str] = {}
    tickets = (
        FaultTicket.objects.filter(node__in=list(nodes), status__in=OPEN_STATUSES)
        .select_related("node")
        .order_by("pk")
    )
    for ticket in tickets:
        why = f"open fault ticket {ticket.reference} ({ticket.status}): {ticket.summary}"
        host = ticket.node.hostname
        blockers[host] = f"{blockers[host]}; {why}" if host in blockers else why
    return blockers


# --- helpers -----------------------------------------------------------------------------------


def _timeline(ticket, kind, text, *, author=None, source="", action=None, intake=None, at=None):
    return TimelineEntry.objects.create(
        ticket=ticket,
        kind=kind,
        text=text,
        author=author if getattr(author, "is_authenticated", False) else None,
        source=source,
        action=action,
        intake=intake,
        at=at or timezone.now(),
    )


def ticket_event_payload(ticket: FaultTicket) -> dict:
    return {
        "id": ticket.pk,
        "reference": ticket.reference,
        "status": ticket.status,
        "category": ticket.category,
        "severity": ticket.severity,
        "summary": ticket.summary,
        "node": ticket.node.hostname if ticket.node_id else None,
        "sources": ticket.sources,
        "updated_at": timezone.now(),
    }


def _publish(ticket: FaultTicket, event: str) -> None:
    publish(FAULTS_GROUP, event, ticket_event_payload(ticket))

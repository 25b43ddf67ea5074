"""Intake: every channel's delivery is kept raw first, then parsed (faults.parsing) and opened or
attached (services.deduplication). User reports, platform events, Alertmanager, Slurm's DOWN and
the fabric's findings come in here; fabric and Slurm state changes in services.state_changes."""

from __future__ import annotations

import json
import logging
from datetime import datetime

from django.db import transaction

from faults import parsing
from faults.models import Category, FaultTicket, IntakeRecord, Source, TimelineKind
from faults.services.deduplication import apply_incident, locked_open_tickets
from faults.services.tickets import auto_resolve
from faults.services.timeline import MAX_NOTE_LENGTH, add_timeline_entry, publish_ticket_event
from inventory.models import GPU, Node, Switch
from portal.errors import InvalidInput
from portal.json_input import JSONTooDeep, loads_bounded
from portal.text_input import (
    NUL,
    nul_character_error,
    nul_character_field,
    without_nul_characters,
)

logger = logging.getLogger(__name__)


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
        payload = loads_bounded(raw_body) if raw_body else None
    except JSONTooDeep as too_deep:
        return None, {"detail": str(too_deep)}
    except ValueError:
        if NUL not in raw_body:
            return None, {}
        # A raw NUL inside a string is a control character strict JSON refuses; read it
        # leniently only to say which field held it.
        try:
            lenient = loads_bounded(raw_body, strict=False)
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


def submit_node_event(*, reported_by, event: dict) -> tuple[FaultTicket, bool]:
    """A platform event (XID, ECC, NVLink, NIC or link) a person reports from the node page: the
    raw report is kept, then it is classified and de-duplicated as the platform's own would be,
    so it meets the monitor's ticket for the same GPU."""
    record = record_intake(channel=Source.USER_REPORT, raw_body=json.dumps(event),
                           submitted_by=reported_by)
    try:
        incident = parsing.parse_reported_event(event)
    except InvalidInput as error:
        _refuse(record, error)
        raise
    with transaction.atomic():
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


def _record_alert_resolved(delivery, *, intake) -> FaultTicket | None:
    incident = delivery.incident
    candidates = list(locked_open_tickets().filter(fingerprint=incident.fingerprint)) if (
        incident.fingerprint
    ) else []
    if incident.alert_fingerprint:
        components = incident.components
        nearby = locked_open_tickets()
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
    add_timeline_entry(
        ticket,
        TimelineKind.EVENT,
        f"Alertmanager: {incident.details.get('alertname')} resolved at {ends}.",
        source=Source.ALERTMANAGER,
        intake=intake,
    )
    if incident.rule.auto_resolve_when_alert_resolves:
        auto_resolve(ticket, note=f"Alert {incident.details.get('alertname')} resolved.")
    else:
        publish_ticket_event(ticket, "fault.updated")
    return ticket

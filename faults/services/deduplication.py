"""De-duplication: an incident attaches to the open ticket it belongs to, or opens one.

After Grafana OnCall (STYLE.md): a partial unique constraint allows one open ticket per
fingerprint. A delivery first looks for a ticket it belongs to (under a row lock); if none, it
inserts in a savepoint, and on IntegrityError (a concurrent delivery won the race) re-reads the
winner and attaches to it. Twenty concurrent copies of one event make one ticket.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from faults.hooks import impact_snapshot
from faults.models import Category, FaultTicket, IntakeRecord, Severity, Source, TimelineKind
from faults.parsing import Incident
from faults.services.policy import apply_policy
from faults.services.timeline import add_timeline_entry, publish_ticket_event
from faults.workflow import OPEN_STATUSES, REOPENABLE_STATUSES, reopen_window
from portal.services.audit import record_change, snapshot

SEVERITY_RANK = {Severity.MINOR: 0, Severity.MAJOR: 1, Severity.CRITICAL: 2}


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
                ticket = open_ticket_by_fingerprint(incident.fingerprint)
                if ticket is None:
                    raise
        if not created:
            _attach(ticket, incident, intake=intake)
        apply_policy(ticket, incident)
        alert = incident.alert_fingerprint
        if alert and alert not in ticket.alert_fingerprints:
            ticket.alert_fingerprints = [*ticket.alert_fingerprints, alert]
            ticket.save(update_fields=["alert_fingerprints", "updated_at"])
        publish_ticket_event(ticket, "fault.created" if created else "fault.updated")
    return ticket, created


def locked_open_tickets():
    """Open tickets, each row locked as it is read: the delivery that reads one attaches to it
    before any other can."""
    return FaultTicket.objects.select_for_update().filter(status__in=OPEN_STATUSES)


def open_ticket_by_fingerprint(fingerprint: str) -> FaultTicket | None:
    if not fingerprint:
        return None
    return locked_open_tickets().filter(fingerprint=fingerprint).first()


def _correlated_open_ticket(incident: Incident) -> FaultTicket | None:
    """The open ticket this incident belongs to, locked, or None.

    1. the same fingerprint (component + kind);
    2. a person's report or Slurm's DOWN says little about the cause: any open ticket on the same
       GPU, else on the same node or switch;
    3. a classified event joins an unclassified ticket (a report, a DOWN) on the same node/switch.
    """
    ticket = open_ticket_by_fingerprint(incident.fingerprint)
    if ticket is not None:
        return ticket
    components = incident.components
    newest_first = locked_open_tickets().order_by("-detected_at", "-pk")
    if incident.source in (Source.USER_REPORT, Source.SLURM) or (
        incident.category == Category.UNCLASSIFIED
    ):
        if components.gpu is not None:
            ticket = newest_first.filter(gpu=components.gpu).first()
            if ticket is not None:
                return ticket
        if components.node is not None:
            return newest_first.filter(node=components.node).first()
        if components.switch is not None:
            return newest_first.filter(switch=components.switch).first()
        return None
    unclassified = newest_first.filter(category=Category.UNCLASSIFIED)
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
    add_timeline_entry(
        ticket,
        TimelineKind.EVENT,
        f"Opened from {Source(incident.source).label}: {incident.summary}{_details(incident)}",
        source=incident.source,
        author=actor,
        intake=intake,
        at=incident.detected_at,
    )
    if ticket.reopened_from_id:
        add_timeline_entry(
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
    add_timeline_entry(ticket, TimelineKind.AUTOMATIC,
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
    add_timeline_entry(
        ticket,
        TimelineKind.EVENT,
        f"{Source(incident.source).label}: {incident.summary}{_details(incident)}",
        source=incident.source,
        intake=intake,
    )

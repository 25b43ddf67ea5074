"""What every write on a ticket leaves behind: a timeline entry, and a live event after commit.

The board and the ticket page re-fetch their live regions on `fault.created` / `fault.updated`
in the `faults` group (static/js/faults.js), so each write publishes once it is done.
"""

from __future__ import annotations

from django.utils import timezone

from faults.models import FaultTicket, TimelineEntry
from portal.realtime import publish

FAULTS_GROUP = "faults"
# What a person may write in one go: a note, a transition's note, a report's description.
MAX_NOTE_LENGTH = 5000


def add_timeline_entry(ticket, kind, text, *, author=None, source="", action=None, intake=None,
                                at=None) -> TimelineEntry:
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


def publish_ticket_event(ticket: FaultTicket, event: str) -> None:
    publish(FAULTS_GROUP, event, ticket_event_payload(ticket))

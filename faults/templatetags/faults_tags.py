"""Template tags for pages of other apps that show faults (the node page's panel)."""

from __future__ import annotations

from django import template

from faults import selectors
from portal.roles import may

register = template.Library()


@register.simple_tag(takes_context=True)
def node_fault_panel(context, node) -> dict:
    """Open tickets on `node` and how many it ever had, for users who may see faults."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if node is None or not may(user, "read_faults"):
        return {"visible": False}
    return {
        "visible": True,
        "open": list(selectors.node_open_tickets(user=user, node=node)),
        "total": selectors.ticket_list(user=user).filter(node=node).count(),
        # The policy's repeat rule, asked of the node and the GPUs in its slots.
        "offenders": selectors.repeat_offenders(user=user, node=node),
    }


@register.simple_tag(takes_context=True)
def node_event_form(context, node):
    """The node page's "report an event" form, for those who respond to faults (else None)."""
    from faults.forms import NodeEventForm

    request = context.get("request")
    if node is None or not may(getattr(request, "user", None), "respond_to_faults"):
        return None
    return NodeEventForm(node=node, auto_id=f"node-event-{node.pk}-%s")


@register.filter
def duration_text(value) -> str:
    """A timedelta as people say it: "8 d 3 h", "5 h 20 min", "12 min"."""
    if value is None:
        return ""
    minutes = int(value.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min"

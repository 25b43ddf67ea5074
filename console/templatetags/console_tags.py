"""The impact card for pages of other apps (node, switch, ticket, confirmations)."""

from __future__ import annotations

from django import template

from console.impact import impact_of
from portal.errors import InvalidInput
from portal.roles import may

register = template.Library()


@register.simple_tag(takes_context=True)
def impact_card(context, target: str) -> dict:
    """{"impact": Impact} for `target` as the page's user may see it, or {"error": why}."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if not target or user is None or not getattr(user, "is_authenticated", False):
        return {}
    try:
        impact = impact_of(user=user, target=target)
    except InvalidInput:
        return {}  # a target this user may not name: the page shows no card
    return {"impact": impact, "drain_hostlist": _drain_hostlist(user, impact)}


def _drain_hostlist(user, impact) -> str:
    """The nodes the impact names that are still in service, as a hostlist for the bulk drain
    page, where the user may drain and the card is not already on that page (a hostlist). The
    story of a leaf's maintenance goes from "who this hits" to draining them."""
    from inventory.hostlist import compress_hostlist

    if impact.kind == "hostlist" or not may(user, "drain"):
        return ""
    serving = [row["hostname"] for row in impact.nodes
               if row.get("slurm_state") not in ("drained", "draining", "down")]
    return compress_hostlist(serving) if serving else ""


@register.simple_tag
def impact_target(kind: str, *names) -> str:
    """`kind:name[:name]` from the page's objects, e.g. {% impact_target "port" switch.hostname
    port %}."""
    return ":".join([kind, *(str(name) for name in names if name not in (None, ""))])

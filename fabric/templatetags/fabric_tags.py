"""Formatting of fabric rates for the pages, and the rail throughput of the job page's panel."""

from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

from fabric.port_state import PORT_CONDITIONS, heat_cell_condition
from fabric.port_state import port_condition as _port_condition
from fabric.rail_health import rail_throughput_for_nodes
from fabric.selectors import (
    running_maintenance,
    running_window_of_node,
    running_window_of_switch,
)
from portal.roles import may

register = template.Library()

_UNITS = ("B/s", "kB/s", "MB/s", "GB/s", "TB/s")


@register.filter
def port_cells(cells) -> SafeString:
    """A switch's port cells (fabric.selectors.HeatCell) as list items, joined here rather than
    by a template loop: a scale-125 spine's 8,000 cells through the template engine took most
    of its fragment's 0.45-0.57 s. Every value is escaped (html.escape, quotes included)."""
    items = []
    for cell in cells:
        percent = cell.shown_percent
        load = "" if percent is None else f' data-pct="{percent}"'
        items.append(
            f'<li class="port-cell" data-port="{escape(cell.name)}"'
            f' data-state="{escape(cell.state)}" data-level="{cell.level}"{load}'
            f' data-faces="{escape(cell.faces)}">'
            f"{escape(cell.mark)}</li>"
        )
    return mark_safe("".join(items))  # noqa: S308 - built from escaped values only


def _number(value) -> float | None:
    """A rate, or None for a port never polled (templates hand a missing value over as "")."""
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@register.simple_tag(takes_context=True)
def job_rail_throughput(context, job) -> list:
    """Observation 7 for a running job: per-rail throughput from the leaf ports its rail NICs
    reach. The fabric is cluster data: tenant admins see their job, not the switches."""
    if job.state != "RUNNING" or not may(context["request"].user, "read_fabric"):
        return []
    return rail_throughput_for_nodes(list(job.nodes.all()))


@register.filter
def byte_rate(value) -> str:
    """Bytes per second in decimal units, as the paper reports them (22.6 GB/s)."""
    value = _number(value)
    if value is None:
        return "—"
    unit = 0
    while abs(value) >= 1000 and unit < len(_UNITS) - 1:
        value /= 1000
        unit += 1
    return f"{value:.1f} {_UNITS[unit]}" if unit else f"{value:.0f} B/s"


@register.filter
def event_rate(value) -> str:
    """Frames or packets per second."""
    value = _number(value)
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value / 1000:.1f}k/s"
    return f"{value:.0f}/s" if value >= 10 or value == 0 else f"{value:.1f}/s"


@register.filter
def percent(value) -> str:
    value = _number(value)
    return "—" if value is None else f"{value * 100:.0f}%"


@register.filter
def total(values) -> float | None:
    """Sum of the known values; None (shown n/a) when the switch reports none of them."""
    known = [value for value in values or [] if value is not None]
    return sum(known) if known or not values else None


@register.filter
def counter(value) -> str:
    """A cumulative counter; "n/a" where the switch does not report it, as portstat prints."""
    if value is None:
        return "n/a"
    return "" if value == "" else str(value)


_INTENT_LABELS = {"admin_up": "admin", "speed_mbps": "speed", "fec": "FEC"}


def _intent_value(field: str, value) -> str:
    if field == "admin_up":
        return "up" if value else "down"
    if field == "speed_mbps" and isinstance(value, int):
        return f"{value / 1000:g}G"
    return str(value)


@register.filter
def intent_summary(differences) -> str:
    """`{field: {configured, actual}}` as "speed: configured 40G, running 25G; ..."."""
    return "; ".join(
        f"{_INTENT_LABELS.get(field, field)}: configured "
        f"{_intent_value(field, values.get('configured'))}, running "
        f"{_intent_value(field, values.get('actual'))}"
        for field, values in (differences or {}).items()
    )


@register.filter
def speed(mbps) -> str:
    """Mb/s as intfutil prints it (25G, 2.5G); n/a when unknown."""
    if mbps is None:
        return "n/a"
    if mbps == "":
        return ""
    mbps = int(mbps)
    return f"{mbps}M" if mbps < 1000 else f"{mbps / 1000:g}G"


@register.filter
def port_condition(port) -> str:
    """A condition of fabric.port_state.PORT_CONDITIONS for a heat map cell (state and faces)
    or an inventory port with `counters` and active cables; templates use it as a CSS class
    `port-<condition>` and a word (`|port_condition_label`)."""
    if hasattr(port, "faces"):
        return heat_cell_condition(port.state, port.faces)
    counters = getattr(port, "counters", None)
    cabled = bool(getattr(port, "active_cables_as_a", None) or
                  getattr(port, "active_cables_as_b", None))
    return _port_condition(polled=counters is not None,
                           admin_up=counters.admin_up if counters else False,
                           oper_up=counters.oper_up if counters else False, cabled=cabled)


@register.filter
def port_condition_label(condition: str) -> str:
    return PORT_CONDITIONS.get(condition, condition)


@register.simple_tag
def running_maintenance_window(node):
    """The running maintenance window that covers `node`, if any (the node page's badge)."""
    return running_window_of_node(node.hostname)


@register.simple_tag
def running_switch_maintenance_window(switch):
    """The running maintenance window that covers `switch`, if any (the switch pages' badge)."""
    return running_window_of_switch(switch)


@register.simple_tag
def open_switch_maintenance(switch):
    """The maintenance of `switch` that has not ended, if any: while it runs the switch pages
    link it instead of offering a second "Leaf maintenance…" (one at a time per switch)."""
    return running_maintenance(switch)

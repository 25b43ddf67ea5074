"""Formatting of fabric rates for the pages."""

from django import template

register = template.Library()

_UNITS = ("B/s", "kB/s", "MB/s", "GB/s", "TB/s")


def _number(value) -> float | None:
    """A rate, or None for a port never polled (templates hand a missing value over as "")."""
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


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
def total(values) -> float:
    return sum(values or [])

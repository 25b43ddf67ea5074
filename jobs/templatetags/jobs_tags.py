"""Template helpers for the jobs pages and the node panel other apps include."""

from __future__ import annotations

from django import template

from jobs.selectors import running_jobs_on_node
from portal.roles import may

register = template.Library()

@register.simple_tag(takes_context=True)
def running_jobs_for(context, node):
    """Running jobs on `node` that the page's user may see."""
    request = context.get("request")
    if request is None or not request.user.is_authenticated:
        return []
    return list(running_jobs_on_node(user=request.user, node=node))


@register.simple_tag(takes_context=True)
def may_drain(context) -> bool:
    request = context.get("request")
    return bool(request and may(request.user, "drain"))


@register.simple_tag(takes_context=True)
def may_reboot(context) -> bool:
    request = context.get("request")
    return bool(request and may(request.user, "reboot"))


@register.filter
def duration(seconds) -> str:
    """Seconds as `2d 03:04:05` or `03:04:05`, as squeue shows runtimes."""
    try:
        seconds = int(seconds)
    except (TypeError, ValueError):
        return "—"
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}d {clock}" if days else clock


@register.filter
def gpu_hours(seconds) -> str:
    try:
        return f"{int(seconds) / 3600:,.1f}"
    except (TypeError, ValueError):
        return "—"


@register.filter
def runtime_at(job, now) -> int:
    return job.runtime_seconds(now)

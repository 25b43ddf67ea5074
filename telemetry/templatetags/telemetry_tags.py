"""Telemetry panels on other apps' pages, each one line in a template:

    {% load telemetry_tags %}
    {% job_utilisation_panel job %}                          the job page
    {% observation3_panel since until tenant %}              the analytics page
    {% tenant_efficiency_panel tenant usage.start %}         the tenant's usage

The jobs app sits below telemetry, so its two pages get theirs through panel slots that
telemetry/apps.py fills (portal/ui_panels.py); the console's tenant page loads them itself.

Each asks Prometheus through the selectors (bounded by PROMETHEUS_TIMEOUT) and says "no
telemetry configured" or "Prometheus unreachable" rather than showing zeros.
"""

from __future__ import annotations

from django import template
from django.http import Http404

from jobs.analytics import parse_period
from portal.errors import InvalidInput
from telemetry import selectors

register = template.Library()


@register.inclusion_tag("telemetry/_job_utilisation.html", takes_context=True)
def job_utilisation_panel(context, job):
    try:
        answer = selectors.job_utilisation(user=context["request"].user, job_id=job.job_id)
    except Http404:
        answer = None
    return {"telemetry": answer, "job": job}


@register.inclusion_tag("telemetry/_observation3.html", takes_context=True)
def observation3_panel(context, since="", until="", tenant=""):
    try:
        period = parse_period(str(since or ""), str(until or ""))
        answer = selectors.observation3(
            user=context["request"].user, period=period, tenant_slug=tenant or None
        )
    except InvalidInput:
        answer = None  # the page itself names the bad parameter
    return {"telemetry": answer}


@register.inclusion_tag("telemetry/_tenant_efficiency.html", takes_context=True)
def tenant_efficiency_panel(context, tenant, start):
    answer = selectors.tenant_efficiency(user=context["request"].user, tenant=tenant, start=start)
    return {"telemetry": answer, "start": start}

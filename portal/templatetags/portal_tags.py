"""Template helpers shared by every app's pages."""

import json
import re
from urllib.parse import urlencode

from django import template
from django.core.serializers.json import DjangoJSONEncoder
from django.urls import NoReverseMatch, reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from portal import ui_panels
from portal.context_processors import may_open

register = template.Library()


@register.filter
def pretty_json(value) -> str:
    """JSON as the API shows it (not Python's repr), so live updates and page loads match."""
    return json.dumps(value, cls=DjangoJSONEncoder, indent=2, sort_keys=True)


@register.filter
def panels(slot: str) -> list[str]:
    """The templates higher apps registered for this page's slot (portal/ui_panels.py)."""
    return ui_panels.panels(slot)


# -- links to objects: every reference a page shows is a link, if its reader may open it


@register.simple_tag(takes_context=True)
def object_link(context, url_name: str, *args, label=None, anchor: str = ""):
    """`<a>` to the page `url_name` names, or just the text when the reader's role may not open
    that page (a tenant admin sees a switch's name, not a link to a 403)."""
    text = label if label is not None else (args[-1] if args else url_name)
    try:
        url = reverse(url_name, args=args)
    except NoReverseMatch:
        return conditional_escape(text)
    if not may_open(url, context.get("user_role")):
        return conditional_escape(text)
    return format_html('<a href="{}{}">{}</a>', url, anchor, text)


# An Action's target names a node, a hostlist or a switch first ("gpu[001-016]",
# "leaf-p1-r3 Ethernet8,Ethernet16", "leaf-p1-r3 (drain)"), an LLDP finding's port is
# "leaf-p1-r3:Ethernet8"; "pod p1" names no single object.
_TARGET_OBJECT = re.compile(r"^(?P<object>[A-Za-z0-9][A-Za-z0-9._:\-\[\],]*)(?: (?P<ports>\S+))?")
_SINGLE_PORT = re.compile(r"^Ethernet\d+$")


@register.simple_tag(takes_context=True)
def target_link(context, target: str):
    """An Action's target as a link through the search, which lands on the object itself."""
    match = _TARGET_OBJECT.match(target or "")
    if not match or match["object"] == "pod":
        return conditional_escape(target)
    query = match["object"]
    if match["ports"] and _SINGLE_PORT.match(match["ports"]):
        query = f"{query}:{match['ports']}"
    url = reverse("console:search")
    if not may_open(url, context.get("user_role")):
        return conditional_escape(target)
    return format_html('<a href="{}?{}">{}</a>', url, urlencode({"q": query}), target)


@register.simple_tag(takes_context=True)
def sort_header(context, column: str, label: str, css_class: str = ""):
    """A list's column header that sorts by `column`: a link toggling ascending and descending,
    keeping the page's filters (and going back to page 1), with aria-sort on the sorted one."""
    request = context["request"]
    current = context.get("ordering") or ""
    sorted_here = current.lstrip("-") == column
    descending = current.startswith("-")
    params = request.GET.copy()
    params.pop("page", None)
    params["ordering"] = f"-{column}" if sorted_here and not descending else column
    if sorted_here:
        aria = ' aria-sort="descending"' if descending else ' aria-sort="ascending"'
        arrow = " ▼" if descending else " ▲"
    else:
        aria, arrow = "", ""
    classes = f' class="{conditional_escape(css_class)}"' if css_class else ""
    return format_html(
        '<th scope="col"{}{}><a class="sort-link" href="?{}">{}<span aria-hidden="true">{}</span>'
        "</a></th>",
        mark_safe(classes), mark_safe(aria), params.urlencode(), label, arrow,  # noqa: S308
    )

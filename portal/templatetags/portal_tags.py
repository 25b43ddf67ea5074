"""Template helpers shared by every app's pages."""

import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder

register = template.Library()


@register.filter
def pretty_json(value) -> str:
    """JSON as the API shows it (not Python's repr), so live updates and page loads match."""
    return json.dumps(value, cls=DjangoJSONEncoder, indent=2, sort_keys=True)


@register.filter
def natural_sort(items, attribute: str = ""):
    """`{% for pod in pods|natural_sort:"name" %}`: p2 before p10 (portal.natural_sort)."""
    from portal.natural_sort import natural_sorted

    if attribute:
        return natural_sorted(items, key=lambda item: str(getattr(item, attribute, "") or ""))
    return natural_sorted(items)

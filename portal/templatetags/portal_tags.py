"""Template helpers shared by every app's pages."""

import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder

register = template.Library()


@register.filter
def pretty_json(value) -> str:
    """JSON as the API shows it (not Python's repr), so live updates and page loads match."""
    return json.dumps(value, cls=DjangoJSONEncoder, indent=2, sort_keys=True)

"""Query parameters are read as the OpenAPI schema documents them, in one place for every
operation: filter sets, pagination and the views that read `request.query_params` themselves.

Each of those parses on its own, and each was lenient where the schema is not: django-filter
skips an empty or unreadable value (`?since=`, `?current=maybe`) and reads `0.5` for an integer
filter, and every reader takes the last of a parameter given twice. A client then gets an
answer to a question it did not ask. Here each documented query parameter of the operation is
checked against its schema before the view runs; what the schema calls invalid is a 400 naming
the parameter. A parameter the operation does not document is left to the view.

The schema is the one /api/schema/ serves, generated once per process on first use (about a
second; then some 10 microseconds a request). The check runs as DRF's last permission class,
after authentication and the role's permission, so that a client without the right still gets
401 or 403 first; it refuses with 400, never 403.
"""

from __future__ import annotations

import math
import re
from datetime import date
from functools import lru_cache

from django.http import QueryDict
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission

INTEGER = re.compile(r"^[+-]?[0-9]+$")
DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
HTTP_METHODS = ("get", "put", "post", "patch", "delete", "head", "options")


@lru_cache(maxsize=1)
def documented_operations() -> tuple[tuple[re.Pattern, str, tuple[dict, ...]], ...]:
    """(path pattern, method, query parameters) for each operation of the served schema, the
    paths with fewer parameters first (`/nodes/bulk/` is matched before `/nodes/{id}/`)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = []
    for path, methods in schema.get("paths", {}).items():
        pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")
        for method, operation in methods.items():
            if method not in HTTP_METHODS:
                continue
            parameters = tuple(
                parameter
                for parameter in operation.get("parameters", [])
                if parameter.get("in") == "query"
            )
            operations.append((path.count("{"), pattern, method, parameters))
    operations.sort(key=lambda operation: operation[0])
    return tuple((pattern, method, parameters) for _, pattern, method, parameters in operations)


def documented_query_parameters(path: str, method: str) -> tuple[dict, ...] | None:
    """The query parameters the schema documents for this request; None for no operation."""
    method = method.lower()
    for pattern, operation_method, parameters in documented_operations():
        if operation_method == method and pattern.match(path):
            return parameters
    return None


def refused_query_parameters(query: QueryDict, parameters: tuple[dict, ...]) -> dict:
    """{parameter: [why]} for each documented parameter whose value its schema refuses."""
    errors: dict[str, list[str]] = {}
    for parameter in parameters:
        name = parameter["name"]
        if name not in query:
            continue
        schema = parameter.get("schema") or {}
        values = query.getlist(name)
        if schema.get("type") == "array":
            item_schema = schema.get("items") or {}
        elif len(values) > 1:
            errors[name] = ["Give this parameter once (it takes one value)."]
            continue
        else:
            item_schema = schema
        for value in values:
            problem = value_problem(value, item_schema)
            if problem is not None:
                errors[name] = [problem]
                break
    return errors


def value_problem(value: str, schema: dict) -> str | None:
    """Why `value`, as sent in a query string, is not what `schema` describes; None if it is."""
    kind = schema.get("type")
    if kind == "integer":
        if not INTEGER.match(value):
            return "Use a whole number."
        return _range_problem(int(value), schema)
    if kind == "number":
        try:
            number = float(value)
        except ValueError:
            return "Use a number."
        if not math.isfinite(number):
            return "Use a finite number."
        return _range_problem(number, schema)
    if kind == "boolean":
        return None if value in ("true", "false") else "Use true or false."
    if kind != "string":
        return None
    if "enum" in schema and value not in schema["enum"]:
        shown = ", ".join(str(choice) for choice in schema["enum"] if choice is not None)
        return f"Use one of: {shown}."
    if schema.get("format") == "date":
        try:
            if DATE.match(value):
                date.fromisoformat(value)
                return None
        except ValueError:
            pass
        return "Use a date, YYYY-MM-DD."
    if schema.get("format") == "date-time":
        # Only the empty value: the views' own ISO 8601 readers name a malformed one, and take
        # forms (an offset past 15:59, a lower-case 'z') a stricter reader here would refuse.
        return None if value else "Use an ISO 8601 date and time, e.g. 2026-11-26T22:00:00Z."
    if len(value) < schema.get("minLength", 0):
        return f"Use at least {schema['minLength']} characters."
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"Use at most {schema['maxLength']} characters."
    if "pattern" in schema and not re.search(schema["pattern"], value):
        shown = value if len(value) <= 80 else f"{value[:80]}..."
        return f"{shown!r} does not match the pattern {schema['pattern']}."
    return None


def _range_problem(number: float, schema: dict) -> str | None:
    if schema.get("exclusiveMinimum") is True and number <= schema["minimum"]:
        return f"Use a value of more than {schema['minimum']}."
    if "minimum" in schema and number < schema["minimum"]:
        return f"Use a value of at least {schema['minimum']}."
    if "maximum" in schema and number > schema["maximum"]:
        return f"Use a value of at most {schema['maximum']}."
    return None


class QueryParametersAsDocumented(BasePermission):
    """Not a permission: the last check DRF runs before every API view (settings
    DEFAULT_PERMISSION_CLASSES), refusing query parameters the schema refuses with a 400."""

    def has_permission(self, request, view) -> bool:
        if not request.query_params or getattr(view, "swagger_fake_view", False):
            return True
        parameters = documented_query_parameters(request.path_info, request.method)
        if not parameters:
            return True
        errors = refused_query_parameters(request.query_params, parameters)
        if errors:
            named = ", ".join(errors)
            raise ValidationError({"detail": f"Bad query parameter(s): {named}.", **errors})
        return True

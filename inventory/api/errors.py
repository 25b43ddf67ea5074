"""Database constraint errors turned into messages that name the field."""

from __future__ import annotations

from django.db import IntegrityError
from django.db.models import Model, UniqueConstraint


def integrity_error_fields(model: type[Model], exc: IntegrityError) -> dict[str, list[str]]:
    """{field: [message]} for the constraint `exc` broke, found by the constraint's name."""
    name = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None) or ""
    for constraint in model._meta.constraints:
        if constraint.name == name:
            if isinstance(constraint, UniqueConstraint) and constraint.fields:
                fields = list(constraint.fields)
                message = f"another {model._meta.verbose_name} has the same {', '.join(fields)}"
                return {fields[-1]: [message]}
            return {"non_field_errors": [f"breaks the rule {name}"]}
    for field in model._meta.concrete_fields:
        if field.unique and not field.primary_key and name.endswith(f"_{field.column}_key"):
            return {field.name: [f"another {model._meta.verbose_name} has this {field.name}"]}
    return {"non_field_errors": [f"conflicts with existing data: {exc.__cause__ or exc}"]}

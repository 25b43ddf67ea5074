"""The audit log: one row per change, written in the same transaction as the change."""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.forms.models import model_to_dict

from portal.models import AuditEntry

# Never copied into the audit log, whatever the model.
REDACTED_FIELDS = frozenset({"password", "key_digest", "secret", "credentials"})


def snapshot(instance: models.Model) -> dict[str, Any]:
    """A JSON-safe picture of a model instance's concrete fields, secrets left out."""
    fields = [
        field.name for field in instance._meta.concrete_fields if field.name not in REDACTED_FIELDS
    ]
    data = model_to_dict(instance, fields=fields)
    for field in instance._meta.concrete_fields:
        if field.name in data and field.is_relation:
            data[field.name] = getattr(instance, field.attname)
    return json_safe(data)


def json_safe(value: Any) -> Any:
    """Datetimes, decimals and UUIDs as the strings the API would show."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def record_change(
    *,
    actor,
    operation: str,
    instance: models.Model,
    before: dict | None = None,
    after: dict | None = None,
    note: str = "",
    via: str = "",
) -> AuditEntry:
    """Record a create, update, delete or Action event on `instance` by `actor` (None: system)."""
    meta = instance._meta
    is_user = actor is not None and getattr(actor, "is_authenticated", False)
    return AuditEntry.objects.create(
        actor=actor if is_user else None,
        actor_name=actor.get_username() if is_user else "system",
        operation=operation,
        object_type=f"{meta.app_label}.{meta.model_name}",
        object_id=str(instance.pk),
        object_repr=str(instance)[:200],
        before=json_safe(before) if before is not None else None,
        after=json_safe(after) if after is not None else None,
        note=note,
        via=via,
    )


def record_login_lockout(
    *, username: str, address: str, failures: int, locked_until, via: str = "ui"
) -> AuditEntry:
    """Record that repeated failed logins locked `username` out; the actor is the system.

    The username may name nobody (a guesser's, or a password typed in the wrong field): it is
    then the digest portal.lockout.lockout_username gives, and the entry points at the user
    only when one exists.
    """
    from portal.models import User

    user = User.objects.filter(username=username).first() if username else None
    return AuditEntry.objects.create(
        actor=None,
        actor_name="system",
        operation=AuditEntry.Operation.LOCKOUT,
        object_type="portal.user",
        object_id=str(user.pk) if user else "",
        object_repr=(username or "(no username)")[:200],
        after=json_safe(
            {
                "username": username,
                "address": address,
                "failures": failures,
                "locked_until": locked_until,
            }
        ),
        note=(
            f"{failures} failed logins from {address}; "
            f"locked out until {locked_until:%Y-%m-%d %H:%M:%S} UTC"
        ),
        via=via,
    )


def record_sign_in(*, user, method: str, address: str, via: str = "ui") -> AuditEntry:
    """Record that `user` signed in by `method` (password, directory, proxy), with the role and
    tenant the sign-in left them with."""
    return AuditEntry.objects.create(
        actor=user,
        actor_name=user.get_username(),
        operation=AuditEntry.Operation.LOGIN,
        object_type="portal.user",
        object_id=str(user.pk),
        object_repr=str(user)[:200],
        after=json_safe(
            {
                "method": method,
                "address": address,
                "role": user.role,
                "tenant": user.tenant.slug if user.tenant_id else None,
            }
        ),
        note=f"signed in ({method}) from {address or 'an unknown address'}",
        via=via,
    )


def record_sign_in_refused(
    *, username: str, method: str, address: str, reason: str, via: str = "ui"
) -> AuditEntry:
    """Record that the directory or proxy vouched for `username` but the portal refused them."""
    from portal.models import User

    user = User.objects.filter(username=username).first() if username else None
    return AuditEntry.objects.create(
        actor=None,
        actor_name="system",
        operation=AuditEntry.Operation.REFUSED,
        object_type="portal.user",
        object_id=str(user.pk) if user else "",
        object_repr=(username or "(no username)")[:200],
        after=json_safe({"username": username, "method": method, "address": address}),
        note=f"sign-in ({method}) from {address or 'an unknown address'} refused: {reason}",
        via=via,
    )

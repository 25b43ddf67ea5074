"""Users, roles, tenants and API tokens."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from portal.authentication import digest_token_key
from portal.errors import InvalidInput
from portal.models import AccountSource, APIToken, Role, Tenant, User
from portal.realtime import recheck_sockets
from portal.services.audit import record_change, snapshot

TOKEN_KEY_PREFIX = "gop_"  # noqa: S105 - not a secret: makes keys recognisable to scanners


def ensure_role_groups() -> None:
    """Create the five role groups (also done by a data migration; safe to repeat)."""
    for role in Role:
        Group.objects.get_or_create(name=role.value)


@transaction.atomic
def user_create(
    *,
    username: str,
    role: str,
    tenant: Tenant | None = None,
    email: str = "",
    password: str | None = None,
    created_by=None,
    via: str = "cli",
) -> User:
    """Create a user with exactly one role; tenant admins must name their tenant."""
    if role not in Role.values:
        raise InvalidInput(
            {"role": [f"Unknown role {role!r}; choose one of {', '.join(Role.values)}."]}
        )
    if role == Role.TENANT_ADMIN and tenant is None:
        raise InvalidInput({"tenant": ["A tenant admin must belong to a tenant."]})
    if User.objects.filter(username=username).exists():
        raise InvalidInput({"username": [f"User {username!r} already exists."]})
    user = User(username=username, email=email, tenant=tenant)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.full_clean(exclude=["password"])
    user.save()
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.set([group])
    record_change(
        actor=created_by,
        operation="create",
        instance=user,
        after={**snapshot(user), "role": role},
        via=via,
    )
    return user


@transaction.atomic
def user_apply_directory_grant(
    *, user: User, role: str, tenant: Tenant | None, source: str
) -> User:
    """Give a directory or proxy account the role and tenant its groups map to right now.

    Run at every sign-in, so a group change in the directory takes effect at the next login;
    a change is audited with the before and after.
    """
    if source == AccountSource.LOCAL:
        raise ValueError("local accounts keep the role an administrator gave them")
    before = {**snapshot(user), "role": user.role} if user.pk else None
    user.source = source
    user.tenant = tenant
    user.save()
    user.groups.set([Group.objects.get_or_create(name=role)[0]])
    if hasattr(user, "_role_cache"):
        del user._role_cache
    after = {**snapshot(user), "role": role}
    if before != after:
        # Open websockets drop at once what the new role or tenant may not follow.
        recheck_sockets(user_ids=[user.pk])
        record_change(
            actor=None,
            operation="create" if before is None or before.get("source") != source else "update",
            instance=user,
            before=before,
            after=after,
            note=f"role and tenant from the {AccountSource(source).label.lower()}",
            via="ui",
        )
    return user


def token_max_lifetime() -> timedelta:
    return timedelta(days=settings.API_TOKEN_MAX_LIFETIME_DAYS)


@transaction.atomic
def api_token_create(
    *, user: User, name: str, expires_at: datetime | None = None, via: str = "api"
) -> tuple[APIToken, str]:
    """Create a token and return it with its key; the key is never retrievable again.

    No token outlives API_TOKEN_MAX_LIFETIME_DAYS: without `expires_at` it gets the maximum,
    and a later `expires_at` (or one already past) is refused naming the field.
    """
    if not name or not name.strip():
        raise InvalidInput({"name": ["Say what the token is for."]})
    now = timezone.now()
    latest = now + token_max_lifetime()
    if expires_at is None:
        expires_at = latest
    elif expires_at <= now:
        raise InvalidInput({"expires_at": ["The expiry must be in the future."]})
    elif expires_at > latest:
        raise InvalidInput(
            {
                "expires_at": [
                    f"A token may live at most {settings.API_TOKEN_MAX_LIFETIME_DAYS} days: "
                    f"choose an expiry no later than {latest:%Y-%m-%dT%H:%M:%SZ}."
                ]
            }
        )
    key = TOKEN_KEY_PREFIX + secrets.token_urlsafe(32)
    token = APIToken.objects.create(
        user=user,
        name=name.strip(),
        prefix=key[: len(TOKEN_KEY_PREFIX) + 6],
        key_digest=digest_token_key(key),
        expires_at=expires_at,
    )
    record_change(actor=user, operation="create", instance=token, after=snapshot(token), via=via)
    return token, key


@transaction.atomic
def api_token_revoke(*, token: APIToken, revoked_by, via: str = "api") -> None:
    """Delete the token; the websockets it opened are closed once this commits."""
    before = snapshot(token)
    record_change(actor=revoked_by, operation="delete", instance=token, before=before, via=via)
    recheck_sockets(user_ids=[token.user_id])
    token.delete()

"""API token authentication against hashed keys."""

from __future__ import annotations

import functools
import hashlib
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from portal.roles import Role
from portal.throttling import (
    record_failed_authentication,
    refuse_if_over_failed_authentication_budget,
)

TOKEN_KEYWORDS = ("Token", "Bearer")
# Recording every use would turn each API read into a write; a minute is precise enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def digest_token_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def parse_token_header(header: str) -> str | None:
    parts = header.split()
    if len(parts) == 2 and parts[0] in TOKEN_KEYWORDS:
        return parts[1]
    return None


def working_token_for_key(key: str):
    """The token of this key, with its user, when it is unexpired and its user active; else None."""
    from portal.models import APIToken

    token = _token_with_user_and_role(digest_token_key(key))
    now = timezone.now()
    if token is None or not token.user.is_active:
        return None
    if token.expires_at is not None and token.expires_at <= now:
        return None
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        APIToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def _token_with_user_and_role(digest: str):
    """The token of this digest with its user and the user's tenant, the user's role already
    given (`User.role_given_groups`), in one statement; None when no token has the digest.

    Every API request starts here. The same read through the ORM (select_related, two
    subqueries for the role groups) took 4.6 ms on the CI machine, nearly all of it building
    the SQL; the statement, written once from the models' own metadata, takes under 1 ms."""
    from portal.models import APIToken

    statement, models = _token_statement()
    with connection.cursor() as cursor:
        cursor.execute(statement, [*Role.values, *Role.values, digest])
        row = cursor.fetchone()
    if row is None:
        return None
    instances, values = [], iter(row)
    for model in models:
        # As the ORM reads a row: the backend's and the field's converters (SQLite gives
        # moments as text, JSON as text), then from_db.
        fields = [(field, next(values)) for field in model._meta.concrete_fields]
        if fields[0][1] is None:  # no primary key: the user has no tenant
            instances.append(None)
            continue
        instances.append(
            model.from_db(connection.alias, None, [_read(field, raw) for field, raw in fields])
        )
    token, user, tenant = instances
    type(user)._meta.get_field("tenant").set_cached_value(user, tenant)
    APIToken._meta.get_field("user").set_cached_value(token, user)
    role_group_count, role_group_name = values
    user.role_given_groups([role_group_name] * role_group_count)
    return token


def _read(field, raw):
    if raw is None:
        return None
    column = field.get_col(field.model._meta.db_table)
    for converter in [
        *connection.ops.get_db_converters(column),
        *field.get_db_converters(connection),
    ]:
        raw = converter(raw, column, connection)
    return raw


@functools.cache
def _token_statement() -> tuple[str, tuple]:
    """(SQL, (APIToken, User, Tenant)): their concrete columns in that order, then the count of
    the user's role groups and one role group's name. Parameters: the role names (for each
    of the two), then the digest. Plain SQL that SQLite (the embedded default) reads too."""
    from portal.models import APIToken

    User = get_user_model()
    Tenant = User._meta.get_field("tenant").related_model
    membership = User._meta.get_field("groups").remote_field.through._meta
    quote = connection.ops.quote_name

    def column(model, name: str) -> str:
        meta = model._meta
        return quote((meta.pk if name == "pk" else meta.get_field(name)).column)

    def columns(model, alias: str) -> str:
        return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)

    roles = ", ".join(["%s"] * len(Role.values))
    role_groups = (
        f"FROM {quote(membership.db_table)} m JOIN {quote(Group._meta.db_table)} g "
        f"ON g.{column(Group, 'pk')} = m.{quote(membership.get_field('group').column)} "
        f"WHERE m.{quote(membership.get_field('user').column)} = u.{column(User, 'pk')} "
        f"AND g.{column(Group, 'name')} IN ({roles})"
    )
    # Identifiers come from the models' metadata, quoted; every value is a parameter.
    statement = (
        f"SELECT {columns(APIToken, 't')}, {columns(User, 'u')}, {columns(Tenant, 'n')}, "  # noqa: S608
        f"(SELECT COUNT(*) {role_groups}), "
        f"(SELECT g.{column(Group, 'name')} {role_groups} LIMIT 1) "
        f"FROM {quote(APIToken._meta.db_table)} t "
        f"JOIN {quote(User._meta.db_table)} u "
        f"ON u.{column(User, 'pk')} = t.{column(APIToken, 'user')} "
        f"LEFT JOIN {quote(Tenant._meta.db_table)} n "
        f"ON n.{column(Tenant, 'pk')} = u.{column(User, 'tenant')} "
        f"WHERE t.{column(APIToken, 'key_digest')} = %s"
    )
    return statement, (APIToken, User, Tenant)


def user_for_token_key(key: str):
    """The active user owning this unexpired key, or None."""
    token = working_token_for_key(key)
    return token.user if token is not None else None


class HashedTokenAuthentication(BaseAuthentication):
    """`Authorization: Token <key>` (or `Bearer <key>`), looked up by the key's SHA-256 digest."""

    keyword = "Token"

    def authenticate(self, request):
        header = get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if parts[0] not in TOKEN_KEYWORDS:
            return None
        # An address over its failure budget is refused before its key is looked at, so a
        # guesser learns nothing faster than the budget allows (portal/throttling.py).
        refuse_if_over_failed_authentication_budget(request)
        key = parse_token_header(header)
        if key is None:
            record_failed_authentication(request)
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: use 'Token <key>'."
            )
        user = user_for_token_key(key)
        if user is None:
            record_failed_authentication(request)
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        return (user, key)

    def authenticate_header(self, request):
        return self.keyword

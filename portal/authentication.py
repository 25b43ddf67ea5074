"""API token authentication against hashed keys."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.contrib.auth.models import Group
from django.db.models import Count, OuterRef, Subquery
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

    # The user's role groups come with the token, in the same statement: every API request
    # needs the role, and a query of its own for it was one of the four a small page cost.
    role_groups = Group.objects.filter(user=OuterRef("user_id"), name__in=Role.values).order_by()
    token = (
        APIToken.objects.select_related("user", "user__tenant")
        .annotate(
            role_group_count=Subquery(
                role_groups.values("user").annotate(count=Count("pk")).values("count")
            ),
            role_group_name=Subquery(role_groups.values("name")[:1]),
        )
        .filter(key_digest=digest_token_key(key))
        .first()
    )
    now = timezone.now()
    if token is None or not token.user.is_active:
        return None
    token.user.role_given_groups([token.role_group_name] * (token.role_group_count or 0))
    if token.expires_at is not None and token.expires_at <= now:
        return None
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        APIToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


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

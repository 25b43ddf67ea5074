"""Websocket authentication: the browser's session cookie, or an API token for automation.

A browser always sends Origin on a websocket handshake, and a page on another site can make a
user's browser open one carrying the user's cookies. So a handshake with an Origin is accepted
only from ALLOWED_HOSTS, whatever it authenticates with. A handshake without an Origin is not
from a browser (automation: websockets, curl, a monitoring agent): it must bring an API token,
and cookies are ignored, so nothing a browser holds works without the Origin check.

Token failures count against the same per-address budget as the API's (portal/throttling.py).

A socket outlives its handshake, so the consumer asks `socket_credential()` again at every
re-check (portal/realtime/consumers.py): the credential that opened it must still work.
"""

from __future__ import annotations

from datetime import datetime
from importlib import import_module
from types import SimpleNamespace

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import AllowedHostsOriginValidator, WebsocketDenier
from django.conf import settings
from django.contrib.auth import get_user
from rest_framework.exceptions import Throttled

from portal.authentication import parse_token_header, user_for_token_key, working_token_for_key
from portal.throttling import (
    record_failed_authentication,
    refuse_if_over_failed_authentication_budget,
)


def header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def scope_as_request(scope) -> SimpleNamespace:
    """Just enough of a request for the throttles to find the client's address."""
    client = scope.get("client") or (None, None)
    return SimpleNamespace(
        META={"REMOTE_ADDR": client[0], "HTTP_X_FORWARDED_FOR": header(scope, b"x-forwarded-for")}
    )


# Set in a socket's scope when its token, not a session, authenticated it.
AUTHENTICATED_BY_TOKEN = "portal.authenticated_by_token"  # noqa: S105 - a scope key


def token_user(scope, authorization: str):
    """The user of the token in `authorization`, None if it is not a working token, or raises
    Throttled when the address has failed too often."""
    request = scope_as_request(scope)
    refuse_if_over_failed_authentication_budget(request)
    key = parse_token_header(authorization)
    user = user_for_token_key(key) if key else None
    if user is None:
        record_failed_authentication(request)
    return user


def socket_credential(scope) -> tuple[object | None, datetime | None]:
    """The user that the credential which opened this socket stands for now, and when that
    credential expires (None: not known). The user is None when the credential no longer works:
    the token revoked or expired, the session ended (logout, expiry, password change), or the
    user deactivated or deleted. Reads the database afresh: never the user of the handshake."""
    if scope.get(AUTHENTICATED_BY_TOKEN):
        key = parse_token_header(header(scope, b"authorization") or "")
        token = working_token_for_key(key) if key else None
        return (token.user, token.expires_at) if token is not None else (None, None)
    session_key = getattr(scope.get("session"), "session_key", None)
    if not session_key:
        return None, None
    # A fresh store: the handshake's copy of the session would not see a logout since.
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    # Django's own check for a request: the session's user, its backend, the password hash.
    user = get_user(SimpleNamespace(session=session))
    return (user, None) if user.is_authenticated and user.is_active else (None, None)


class TokenAuthMiddleware(BaseMiddleware):
    """Accepts `Authorization: Token <key>` when the session did not authenticate the user."""

    async def __call__(self, scope, receive, send):
        user = scope.get("user")
        authorization = header(scope, b"authorization")
        if authorization and (user is None or not user.is_authenticated):
            try:
                found = await database_sync_to_async(token_user)(scope, authorization)
            except Throttled:
                return await WebsocketDenier()(scope, receive, send)
            if found is not None:
                scope["user"] = found
                scope[AUTHENTICATED_BY_TOKEN] = True
        return await super().__call__(scope, receive, send)


class BrowserOrAutomationGate:
    """Browsers (with Origin): Origin check, then session or token. Others: token only."""

    def __init__(self, inner):
        self.browser = AllowedHostsOriginValidator(AuthMiddlewareStack(TokenAuthMiddleware(inner)))
        self.automation = TokenAuthMiddleware(inner)

    async def __call__(self, scope, receive, send):
        if header(scope, b"origin") is not None:
            return await self.browser(scope, receive, send)
        if not header(scope, b"authorization"):
            return await WebsocketDenier()(scope, receive, send)
        return await self.automation(scope, receive, send)

"""Websocket authentication: the browser's session cookie, or an API token for automation.

A browser always sends Origin on a websocket handshake, and a page on another site can make a
user's browser open one carrying the user's cookies. So a handshake with an Origin is accepted
only from ALLOWED_HOSTS, whatever it authenticates with. A handshake without an Origin is not
from a browser (automation: websockets, curl, a monitoring agent): it must bring an API token,
and cookies are ignored, so nothing a browser holds works without the Origin check.

Token failures count against the same per-address budget as the API's (portal/throttling.py).
"""

from __future__ import annotations

from types import SimpleNamespace

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import AllowedHostsOriginValidator, WebsocketDenier
from rest_framework.exceptions import Throttled

from portal.authentication import parse_token_header, user_for_token_key
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

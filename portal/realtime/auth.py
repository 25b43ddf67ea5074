"""Websocket authentication: the browser's session cookie, or an API token for automation."""

from __future__ import annotations

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware

from portal.authentication import parse_token_header, user_for_token_key


class TokenAuthMiddleware(BaseMiddleware):
    """Accepts `Authorization: Token <key>` when the session did not authenticate the user."""

    async def __call__(self, scope, receive, send):
        user = scope.get("user")
        if user is None or not user.is_authenticated:
            headers = dict(scope.get("headers", []))
            key = parse_token_header(headers.get(b"authorization", b"").decode("latin-1"))
            if key:
                token_user = await database_sync_to_async(user_for_token_key)(key)
                if token_user is not None:
                    scope["user"] = token_user
        return await super().__call__(scope, receive, send)


def TokenOrSessionAuthMiddleware(inner):
    return AuthMiddlewareStack(TokenAuthMiddleware(inner))

"""The websocket endpoint at /ws/.

Protocol (JSON both ways):
  client -> {"type": "subscribe", "groups": ["cluster", "action.42"]}
  server -> {"type": "subscribed", "groups": [...allowed], "denied": [...refused]}
  client -> {"type": "unsubscribe", "groups": [...]}
  client -> {"type": "ping"}                       server -> {"type": "pong"}
  server -> {"type": "event", "group": ..., "event": ..., "payload": {...}}
  server -> {"type": "error", "detail": ...} for a malformed message
"""

from __future__ import annotations

import json

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from portal.models.accounts import TENANT_DATA_ROLES
from portal.realtime.access import can_subscribe

MAX_GROUPS_PER_CONNECTION = 500


class LiveEventsConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_active:
            await self.close()  # before accept: the handshake is refused with 403
            return
        self.user = user
        self.role = await database_sync_to_async(lambda: user.role)()
        if self.role is None:
            await self.close()
            return
        self.tenant_id = user.tenant_id
        self.groups_joined: set[str] = set()
        await self.accept()
        await self.send_json({"type": "hello", "user": user.get_username(), "role": self.role})

    async def disconnect(self, code):
        for group in getattr(self, "groups_joined", set()):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict) or not isinstance(content.get("type"), str):
            await self.send_json({"type": "error", "detail": "a message is an object with 'type'"})
            return
        kind = content["type"]
        if kind == "ping":
            await self.send_json({"type": "pong"})
        elif kind in ("subscribe", "unsubscribe"):
            groups = content.get("groups")
            if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
                await self.send_json(
                    {"type": "error", "detail": "'groups' must be a list of names"}
                )
                return
            if kind == "subscribe":
                await self.subscribe(groups)
            else:
                await self.unsubscribe(groups)
        else:
            await self.send_json({"type": "error", "detail": f"unknown message type {kind!r}"})

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except (json.JSONDecodeError, TypeError):
            await self.send_json({"type": "error", "detail": "messages must be JSON text"})

    async def subscribe(self, groups: list[str]):
        allowed, denied = [], []
        for group in dict.fromkeys(groups):
            if len(self.groups_joined) >= MAX_GROUPS_PER_CONNECTION:
                denied.append(group)
                continue
            if await database_sync_to_async(can_subscribe)(self.user, group):
                await self.channel_layer.group_add(group, self.channel_name)
                self.groups_joined.add(group)
                allowed.append(group)
            else:
                denied.append(group)
        await self.send_json({"type": "subscribed", "groups": allowed, "denied": denied})

    async def unsubscribe(self, groups: list[str]):
        for group in groups:
            if group in self.groups_joined:
                await self.channel_layer.group_discard(group, self.channel_name)
                self.groups_joined.discard(group)
        await self.send_json({"type": "unsubscribed", "groups": groups})

    async def portal_event(self, message):
        if message["group"] not in self.groups_joined:
            return
        tenant_ids = message.get("tenant_ids")
        private = tenant_ids is not None and self.role not in TENANT_DATA_ROLES
        if private and self.tenant_id not in tenant_ids:
            return
        # The payload is already JSON (encoded once at publish time, not once per client).
        group, event = json.dumps(message["group"]), json.dumps(message["event"])
        await self.send(
            text_data=f'{{"type": "event", "group": {group}, "event": {event}, '
            f'"payload": {message["payload"]}}}'
        )

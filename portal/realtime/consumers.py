"""The websocket endpoint at /ws/.

Protocol (JSON both ways):
  client -> {"type": "subscribe", "groups": ["cluster", "action.42"]}
  server -> {"type": "subscribed", "groups": [...allowed], "denied": [...refused]}
  client -> {"type": "unsubscribe", "groups": [...]}
  client -> {"type": "ping"}                       server -> {"type": "pong"}
  server -> {"type": "event", "group": ..., "event": ..., "payload": {...}}
  server -> {"type": "events", "events": [{"group": ..., "event": ..., "payload": {...}}, ...]}
            (events that arrive within BATCH_WINDOW_SECONDS of the previous frame, in order)
  server -> {"type": "error", "detail": ...} for a malformed message
"""

from __future__ import annotations

import asyncio
import json
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from portal.models.accounts import TENANT_DATA_ROLES, Role
from portal.realtime.access import can_subscribe
from portal.realtime.fanout import local_fanout

MAX_GROUPS_PER_CONNECTION = 500
# An event to an idle connection goes out at once; events arriving while a frame went out less
# than this long ago wait and leave together. Under load (a wall screen following 100 node
# changes a second) that is ~10 frames a second per client instead of 100, which is what lets
# one server process feed hundreds of clients (bench/ws_fanout.py); sparse events lose nothing.
BATCH_WINDOW_SECONDS = 0.1

logger = logging.getLogger(__name__)


# A websocket close code that tells the client the server could not keep it informed and it
# should reconnect (RFC 6455 registry: 1012 "service restart"); live.js then re-reads the page.
FEED_INTERRUPTED_CLOSE_CODE = 1012
# The channel layer could not take a subscription now (1013 "try again later").
SUBSCRIBE_FAILED_CLOSE_CODE = 1013


class LiveEventsConsumer(AsyncJsonWebsocketConsumer):
    # Events reach a connection only through its process's fan-out (deliver()), never through a
    # channel of its own. An alias with no layer configured gives the consumer none (Channels'
    # get_channel_layer() returns None for it), so a websocket makes no channel and keeps no
    # receive on the layer. Before, each connection awaited such a receive that never carried
    # anything, and any error in it (redis-py 8's read timeout on the Redis layer's idle blocking
    # pop, every 5 s) closed the socket with 1011.
    channel_layer_alias = "live-events-have-no-channel-per-connection"

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
        self.pending_events: list[str] = []
        self.batch_window: asyncio.Task | None = None
        self.closing: asyncio.Task | None = None
        await self.accept()
        await self.send_json({"type": "hello", "user": user.get_username(), "role": self.role})

    async def disconnect(self, code):
        window = getattr(self, "batch_window", None)
        if window is not None:
            window.cancel()
        for group in getattr(self, "groups_joined", set()):
            await local_fanout().leave(group, self)

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
                try:
                    await local_fanout().join(group, self)
                except Exception:
                    logger.warning("live events: could not join %s", group, exc_info=True)
                    await self.close(code=SUBSCRIBE_FAILED_CLOSE_CODE)
                    return
                self.groups_joined.add(group)
                allowed.append(group)
            else:
                denied.append(group)
        await self.send_json({"type": "subscribed", "groups": allowed, "denied": denied})

    async def unsubscribe(self, groups: list[str]):
        for group in groups:
            if group in self.groups_joined:
                await local_fanout().leave(group, self)
                self.groups_joined.discard(group)
        await self.send_json({"type": "unsubscribed", "groups": groups})

    def feed_interrupted(self) -> None:
        """Called by the fan-out when its feed from the channel layer broke: events may have
        been lost, so the client should reconnect and re-read."""
        if self.closing is None:
            self.closing = asyncio.ensure_future(self.close(code=FEED_INTERRUPTED_CLOSE_CODE))

    def deliver(self, message: dict) -> None:
        """Called by the process's fan-out for each event of a group this connection follows:
        filter, then buffer; the batch window sends."""
        if message["group"] not in self.groups_joined or self.closing is not None:
            return
        tenant_ids = message.get("tenant_ids")
        if tenant_ids is not None:
            if self.role == Role.TENANT_ADMIN:
                if self.tenant_id not in tenant_ids:
                    return
            elif message.get("tenant_private", True) and self.role not in TENANT_DATA_ROLES:
                return
        # The payload is already JSON (encoded once at publish time, not once per client).
        group, event = json.dumps(message["group"]), json.dumps(message["event"])
        self.pending_events.append(
            f'"group": {group}, "event": {event}, "payload": {message["payload"]}'
        )
        if self.batch_window is None:
            self.batch_window = asyncio.ensure_future(self.send_batches())

    async def send_batches(self):
        """Send what is pending now, then at most one frame per window while events keep coming."""
        try:
            while self.pending_events:
                pending, self.pending_events = self.pending_events, []
                if len(pending) == 1:
                    await self.send(text_data=f'{{"type": "event", {pending[0]}}}')
                else:
                    events = ",".join(f"{{{encoded}}}" for encoded in pending)
                    await self.send(text_data=f'{{"type": "events", "events": [{events}]}}')
                await asyncio.sleep(BATCH_WINDOW_SECONDS)
        finally:
            self.batch_window = None

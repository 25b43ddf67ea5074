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
  server -> {"type": "revoked", "groups": [...], "detail": ...} groups the user may no longer
            follow, left by the server (a role changed, an allocation ended)

A socket is held to the access rule for as long as it is open, not only at subscribe time:
socket_access() (portal/realtime/access.py) is asked again, with the user read afresh through the
credential that opened the socket (portal/realtime/auth.py), at every subscribe; at once when a
service says the user's token, account, role or tenant's allocations changed (a re-check request
to the group "user.<id>", portal/realtime/events.py:recheck_sockets); when the token expires; and
every REALTIME_REAUTH_SECONDS in any case (changes no service announced: a raw update, an
allocation reaching its end). Events that arrive while a check runs wait for its verdict. A
socket whose credential no longer works is closed with 4401, one whose user may follow nothing
with 4403; 1013 when the check could not be made (the database unreachable).
"""

from __future__ import annotations

import asyncio
import json
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import timezone

from portal.json_input import JSONTooDeep, loads_bounded
from portal.realtime.access import (
    CREDENTIALS_ENDED_CLOSE_CODE,
    NOTHING_PERMITTED_CLOSE_CODE,
    SocketAccess,
    socket_access,
)
from portal.realtime.auth import socket_credential
from portal.realtime.events import RECHECK_MESSAGE_TYPE, user_group
from portal.realtime.fanout import local_fanout
from portal.roles import Role, role_may

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
# The channel layer could not take a subscription now, or the database could not say what the
# user may still follow (1013 "try again later").
SUBSCRIBE_FAILED_CLOSE_CODE = 1013
CLOSE_REASONS = {
    CREDENTIALS_ENDED_CLOSE_CODE: "credentials no longer valid",
    NOTHING_PERMITTED_CLOSE_CODE: "nothing permitted",
}
# A re-check due at a token's expiry runs this long after it, so the database agrees it passed.
EXPIRY_MARGIN_SECONDS = 0.05


class LiveEventsConsumer(AsyncJsonWebsocketConsumer):
    # Events reach a connection only through its process's fan-out (deliver()), never through a
    # channel of its own. An alias with no layer configured gives the consumer none (Channels'
    # get_channel_layer() returns None for it), so a websocket makes no channel and keeps no
    # receive on the layer. Before, each connection awaited such a receive that never carried
    # anything, and any error in it (redis-py 8's read timeout on the Redis layer's idle blocking
    # pop, every 5 s) closed the socket with 1011.
    channel_layer_alias = "live-events-have-no-channel-per-connection"

    async def connect(self):
        self.closing: asyncio.Task | None = None
        # The same rule as every later check, with the user read afresh through the credential.
        user, expires_at, access = await database_sync_to_async(self.check_access)([])
        if access.close_code is not None:
            await self.close()  # before accept: the handshake is refused with 403
            return
        self.user, self.role, self.tenant_id = user, user.role, user.tenant_id
        self.credential_expires_at = expires_at
        self.groups_joined: set[str] = set()
        self.pending_events: list[dict] = []
        self.batch_window: asyncio.Task | None = None
        # One check at a time. Events wait while `holding`: a check is under way or requested.
        self.access_lock = asyncio.Lock()
        self.holding = 0
        self.requested_recheck: asyncio.Task | None = None
        self.recheck_requested_again = False
        self.recheck_timer: asyncio.Task | None = None
        self.user_group = user_group(user.pk)
        await self.accept()
        try:
            await local_fanout().join(self.user_group, self)
        except Exception:
            logger.warning("live events: could not follow %s", self.user_group, exc_info=True)
            await self.close(code=SUBSCRIBE_FAILED_CLOSE_CODE)
            return
        self.restart_recheck_timer()
        await self.send_json({"type": "hello", "user": user.get_username(), "role": self.role})

    async def disconnect(self, code):
        for task in (
            getattr(self, "batch_window", None),
            getattr(self, "recheck_timer", None),
            getattr(self, "requested_recheck", None),
        ):
            if task is not None:
                task.cancel()
        for group in list(getattr(self, "groups_joined", ())):  # a re-check may change it
            await local_fanout().leave(group, self)
        if hasattr(self, "user_group"):
            await local_fanout().leave(self.user_group, self)

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
        except JSONTooDeep as too_deep:
            await self.send_json({"type": "error", "detail": str(too_deep)})
        except (json.JSONDecodeError, TypeError):
            await self.send_json({"type": "error", "detail": "messages must be JSON text"})

    @classmethod
    async def decode_json(cls, text_data):
        # Python's decoder recurses per level: a deep frame would end the socket with 1011.
        return loads_bounded(text_data)

    async def subscribe(self, groups: list[str]):
        asked = list(dict.fromkeys(groups))
        async with self.access_lock:  # no re-check between this check and the joins
            new = [group for group in asked if group not in self.groups_joined]
            room = max(0, MAX_GROUPS_PER_CONNECTION - len(self.groups_joined))
            # What it follows is checked again too, by the same rule: a user deactivated a
            # moment ago gets the close, not a subscription.
            access = await self.reauthorise(also=new[:room])
            if access is None:
                return  # closing
            allowed = set(access.allowed)
            for group in new[:room]:
                if group not in allowed:
                    continue
                try:
                    await local_fanout().join(group, self)
                except Exception:
                    logger.warning("live events: could not join %s", group, exc_info=True)
                    await self.close(code=SUBSCRIBE_FAILED_CLOSE_CODE)
                    return
                self.groups_joined.add(group)
        await self.send_json(
            {
                "type": "subscribed",
                "groups": [group for group in asked if group in self.groups_joined],
                "denied": [group for group in asked if group not in self.groups_joined],
            }
        )

    async def unsubscribe(self, groups: list[str]):
        for group in groups:
            if group in self.groups_joined:
                await local_fanout().leave(group, self)
                self.groups_joined.discard(group)
        await self.send_json({"type": "unsubscribed", "groups": groups})

    # -- re-checks ------------------------------------------------------------------------------

    def check_access(self, groups: list[str]):
        """The user the socket's credential stands for now, when that credential expires, and
        what socket_access() says of `groups` for them. In a thread: it reads the database."""
        user, expires_at = socket_credential(self.scope)
        access = socket_access(user, groups)  # reads user.role, cached on `user` from here on
        return user, expires_at, access

    async def reauthorise(self, also: list[str] = ()) -> SocketAccess | None:
        """Check the groups followed (and `also`) again, for the user as they are now; leave
        those no longer allowed and say so, or close. Events arriving meanwhile wait for the
        verdict. Returns None when the socket is closing. Call with access_lock held."""
        self.holding += 1
        try:
            if self.closing is not None:
                return None
            followed = sorted(self.groups_joined)
            try:
                user, expires_at, access = await database_sync_to_async(self.check_access)(
                    [*followed, *also]
                )
            except Exception:
                logger.exception("live events: could not check what a socket may follow")
                self.close_now(SUBSCRIBE_FAILED_CLOSE_CODE, "could not check access")
                return None
            if access.close_code is not None:
                self.close_now(access.close_code, CLOSE_REASONS[access.close_code])
                return None
            self.user, self.role, self.tenant_id = user, user.role, user.tenant_id
            if expires_at != self.credential_expires_at:
                self.credential_expires_at = expires_at
                self.restart_recheck_timer()
            denied = set(access.denied)
            dropped = [group for group in followed if group in denied]
            for group in dropped:
                self.groups_joined.discard(group)  # first: nothing more of it goes out
                await local_fanout().leave(group, self)
            if dropped:
                await self.send_json(
                    {"type": "revoked", "groups": dropped, "detail": "no longer permitted"}
                )
            return access
        finally:
            self.holding -= 1
            self.resume_sending()

    def request_recheck(self) -> None:
        """Re-check soon; the events that arrive from now on wait for it."""
        if self.closing is not None:
            return
        if self.requested_recheck is not None:
            # The change may have committed after the running check read the database.
            self.recheck_requested_again = True
            return
        self.holding += 1
        self.requested_recheck = asyncio.ensure_future(self.run_requested_rechecks())

    async def run_requested_rechecks(self) -> None:
        try:
            while True:
                self.recheck_requested_again = False
                async with self.access_lock:
                    await self.reauthorise()
                if not self.recheck_requested_again or self.closing is not None:
                    break
        finally:
            self.requested_recheck = None
            self.holding -= 1
            self.resume_sending()

    def restart_recheck_timer(self) -> None:
        if self.recheck_timer is not None:
            self.recheck_timer.cancel()
        self.recheck_timer = asyncio.ensure_future(self.recheck_periodically())

    async def recheck_periodically(self) -> None:
        """Every REALTIME_REAUTH_SECONDS, for the changes no service announced (a raw update,
        an allocation reaching its end), and as the token expires."""
        while True:
            delay = settings.REALTIME_REAUTH_SECONDS
            if self.credential_expires_at is not None:
                until_expiry = (self.credential_expires_at - timezone.now()).total_seconds()
                delay = min(delay, max(0.0, until_expiry) + EXPIRY_MARGIN_SECONDS)
            await asyncio.sleep(delay)
            self.request_recheck()

    def close_now(self, code: int, reason: str) -> None:
        if self.closing is None:
            self.pending_events.clear()
            self.closing = asyncio.ensure_future(self.close(code=code, reason=reason))

    def feed_interrupted(self) -> None:
        """Called by the fan-out when its feed from the channel layer broke: events (or a
        re-check request) may have been lost, so the client should reconnect and re-read."""
        if self.closing is None:
            self.closing = asyncio.ensure_future(self.close(code=FEED_INTERRUPTED_CLOSE_CODE))

    def deliver(self, message: dict) -> None:
        """Called by the process's fan-out for each message of a group this connection follows:
        a re-check request, or an event to filter and buffer for the batch window to send."""
        if message.get("type") == RECHECK_MESSAGE_TYPE:
            if message.get("group") == self.user_group:
                self.request_recheck()
            return
        if self.closing is not None or not self.may_receive(message):
            return
        self.pending_events.append(message)
        self.resume_sending()

    def may_receive(self, message: dict) -> bool:
        if message["group"] not in self.groups_joined:
            return False
        tenant_ids = message.get("tenant_ids")
        if tenant_ids is not None:
            if self.role == Role.TENANT_ADMIN:
                return self.tenant_id in tenant_ids
            if message.get("tenant_private", True) and not role_may(self.role, "read_tenant_data"):
                return False
        return True

    def resume_sending(self) -> None:
        if self.pending_events and self.batch_window is None and not self.holding:
            self.batch_window = asyncio.ensure_future(self.send_batches())

    async def send_batches(self):
        """Send what is pending now, then at most one frame per window while events keep coming.
        Each event is filtered again as it leaves: a re-check may have ended its group since."""
        try:
            while self.pending_events and not self.holding and self.closing is None:
                pending, self.pending_events = self.pending_events, []
                encoded = [self.encode(message) for message in pending if self.may_receive(message)]
                if len(encoded) == 1:
                    await self.send(text_data=f'{{"type": "event", {encoded[0]}}}')
                elif encoded:
                    events = ",".join(f"{{{event}}}" for event in encoded)
                    await self.send(text_data=f'{{"type": "events", "events": [{events}]}}')
                await asyncio.sleep(BATCH_WINDOW_SECONDS)
        finally:
            self.batch_window = None

    @staticmethod
    def encode(message: dict) -> str:
        # The payload is already JSON (encoded once at publish time, not once per client).
        group, event = json.dumps(message["group"]), json.dumps(message["event"])
        return f'"group": {group}, "event": {event}, "payload": {message["payload"]}'

"""Process-local fan-out of group events to the websockets this process serves.

Channels would deliver a group message to every member consumer separately: one channel-layer
message and one dispatch per connection per event, which is what limits a single server process
to a few thousand deliveries a second. Here each process joins a group once, with one channel of
its own, and hands every message to its local followers of that group with a plain method call
(`deliver`, which only buffers). 200 wall screens following 100 node changes a second cost 100
channel-layer messages a second instead of 20,000 (bench/ws_fanout.py).

The pump is the process's only receive from the layer (consumers have no channel of their own).
Whatever breaks the feed (Redis restarted, a receive failed, the subscription dropped for a
moment) may lose events, so the fan-out watches it end to end: it sends itself a numbered
heartbeat every HEARTBEAT_SECONDS through the layer, and a heartbeat that never comes back (a
gap in the numbers, or none for HEARTBEAT_DEADLINE_SECONDS) means the followers are told the feed
was interrupted, so that each client reconnects and re-reads what it may have missed.
A group membership may be a lease (the layer's `group_expiry`; the in-memory layer's is a day):
it is renewed while anyone here follows the group, so a long-lived process keeps its groups.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


class Follower(Protocol):
    def deliver(self, message: dict) -> None: ...

    def feed_interrupted(self) -> None: ...


HEARTBEAT_TYPE = "portal.fanout.heartbeat"
HEARTBEAT_SECONDS = 0.5
HEARTBEAT_DEADLINE_SECONDS = 5.0
# Renew each membership this many times per lease, so a few failed renewals lose nothing.
RENEWALS_PER_LEASE = 4
RETRY_AFTER_FAILED_RECEIVE_SECONDS = 1.0


class LocalFanout:
    def __init__(self, layer):
        self.layer = layer
        self.channel: str | None = None
        self.followers: dict[str, set[Follower]] = {}
        self.lock = asyncio.Lock()
        self.heartbeats_sent = 0
        self.heartbeats_back = 0
        # The heartbeats sent before each follower joined: a feed that broke before it came
        # cost it nothing.
        self.heartbeats_before_joining: dict[Follower, int] = {}
        self.tasks: list[asyncio.Task] = []  # pump, heartbeat, lease renewal (kept referenced)

    async def join(self, group: str, follower: Follower) -> None:
        async with self.lock:  # two consumers joining a new group must not both group_add it
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                self.tasks = [
                    asyncio.ensure_future(self.run_pump()),
                    asyncio.ensure_future(self.send_heartbeats()),
                    asyncio.ensure_future(self.renew_leases_forever()),
                ]
            if group not in self.followers:
                await self.layer.group_add(group, self.channel)  # if it fails, nothing changed
                self.followers[group] = set()
            self.followers[group].add(follower)
            self.heartbeats_before_joining.setdefault(follower, self.heartbeats_sent)

    async def leave(self, group: str, follower: Follower) -> None:
        async with self.lock:
            members = self.followers.get(group)
            if members is None:
                return
            members.discard(follower)
            if not any(follower in others for others in self.followers.values()):
                self.heartbeats_before_joining.pop(follower, None)
            if not members:
                del self.followers[group]
                try:
                    await self.layer.group_discard(group, self.channel)
                except Exception:  # a layer that lost it anyway, or a lease that runs out
                    logger.warning("live fan-out: could not leave %s", group, exc_info=True)

    async def run_pump(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("live fan-out: receiving from the channel layer failed")
                self.feed_lost("receiving failed", before_heartbeat=self.heartbeats_sent + 1)
                await asyncio.sleep(RETRY_AFTER_FAILED_RECEIVE_SECONDS)
                # A restarted Redis forgot the memberships: take them again before receiving.
                await self.renew_leases()
                continue
            if message.get("type") == HEARTBEAT_TYPE:
                self.heartbeat_returned(message["number"])
                continue
            for follower in list(self.followers.get(message.get("group"), ())):
                try:
                    follower.deliver(message)
                except Exception:
                    logger.exception("live fan-out: a follower refused an event")

    async def send_heartbeats(self) -> None:
        overdue = HEARTBEAT_DEADLINE_SECONDS / HEARTBEAT_SECONDS
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            if self.heartbeats_sent - self.heartbeats_back > overdue:
                # Every follower that joined before the latest heartbeat went out waited on a
                # dead feed since.
                self.feed_lost(
                    "heartbeats stopped coming back", before_heartbeat=self.heartbeats_sent
                )
                self.heartbeats_back = self.heartbeats_sent  # count afresh from here
            self.heartbeats_sent += 1
            try:
                await self.layer.send(
                    self.channel, {"type": HEARTBEAT_TYPE, "number": self.heartbeats_sent}
                )
            except Exception:  # this number never comes back: the next one shows the gap
                logger.warning("live fan-out: could not send a heartbeat", exc_info=True)

    def heartbeat_returned(self, number: int) -> None:
        if number > self.heartbeats_back + 1:
            lost = f"heartbeats {self.heartbeats_back + 1}-{number - 1} were lost"
            self.feed_lost(lost, before_heartbeat=number)
        self.heartbeats_back = max(self.heartbeats_back, number)

    def feed_lost(self, reason: str, *, before_heartbeat: int) -> None:
        """Interrupt the followers that joined before heartbeat `before_heartbeat` was sent:
        they may have missed events. Those that joined later have seen the feed work since."""
        followers = [
            follower
            for follower, sent_before in self.heartbeats_before_joining.items()
            if sent_before < before_heartbeat
        ]
        if followers:
            logger.warning(
                "live fan-out: %s; %d connections told to re-read", reason, len(followers)
            )
        for follower in followers:
            follower.feed_interrupted()

    async def renew_leases(self) -> None:
        for group in list(self.followers):
            async with self.lock:  # never re-add a group the last follower just left
                if group not in self.followers:
                    continue
                try:
                    await self.layer.group_add(group, self.channel)
                except Exception:
                    logger.warning("live fan-out: could not renew %s", group, exc_info=True)

    async def renew_leases_forever(self) -> None:
        lease_seconds = getattr(self.layer, "group_expiry", 86400)
        while True:
            await asyncio.sleep(lease_seconds / RENEWALS_PER_LEASE)
            await self.renew_leases()


_fanouts: dict[asyncio.AbstractEventLoop, LocalFanout] = {}


def local_fanout() -> LocalFanout:
    """The fan-out of the running event loop (daphne serves every websocket from one loop)."""
    loop = asyncio.get_running_loop()
    fanout = _fanouts.get(loop)
    if fanout is None:
        fanout = _fanouts[loop] = LocalFanout(get_channel_layer())
    return fanout

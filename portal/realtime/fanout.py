"""Process-local fan-out of group events to the websockets this process serves.

Channels would deliver a group message to every member consumer separately: one channel-layer
message and one dispatch per connection per event, which is what limits a single server process
to a few thousand deliveries a second. Here each process joins a group once, with one channel of
its own, and hands every message to its local followers of that group with a plain method call
(`deliver`, which only buffers). 200 wall screens following 100 node changes a second cost 100
channel-layer messages a second instead of 20,000 (bench/ws_fanout.py).

The pump is the process's only receive from the layer (consumers have no channel of their own),
so it must outlive the layer's hiccups: a failed receive is retried, and the followers are told
the feed was interrupted so that each client reconnects and re-reads what it may have missed.
A group membership is a lease (the layer's `group_expiry`) renewed while anyone here follows the
group: a process that lives longer than the lease keeps its groups, one that died loses them.
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


# Renew each membership this many times per lease, so a few failed renewals lose nothing.
RENEWALS_PER_LEASE = 4
RETRY_AFTER_FAILED_RECEIVE_SECONDS = 1.0


class LocalFanout:
    def __init__(self, layer):
        self.layer = layer
        self.channel: str | None = None
        self.followers: dict[str, set[Follower]] = {}
        self.pump: asyncio.Task | None = None
        self.lease_renewal: asyncio.Task | None = None
        self.lock = asyncio.Lock()

    async def join(self, group: str, follower: Follower) -> None:
        async with self.lock:  # two consumers joining a new group must not both group_add it
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                self.pump = asyncio.ensure_future(self.run_pump())
                self.lease_renewal = asyncio.ensure_future(self.renew_leases_forever())
            if group not in self.followers:
                await self.layer.group_add(group, self.channel)  # if it fails, nothing changed
                self.followers[group] = set()
            self.followers[group].add(follower)

    async def leave(self, group: str, follower: Follower) -> None:
        async with self.lock:
            members = self.followers.get(group)
            if members is None:
                return
            members.discard(follower)
            if not members:
                del self.followers[group]
                try:
                    await self.layer.group_discard(group, self.channel)
                except Exception:  # the lease runs out by itself
                    logger.warning("live fan-out: could not leave %s", group, exc_info=True)

    async def run_pump(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("live fan-out: receiving from the channel layer failed")
                self.interrupt_followers()
                await asyncio.sleep(RETRY_AFTER_FAILED_RECEIVE_SECONDS)
                # A restarted Redis forgot the memberships: take them again before receiving.
                await self.renew_leases()
                continue
            for follower in list(self.followers.get(message.get("group"), ())):
                try:
                    follower.deliver(message)
                except Exception:
                    logger.exception("live fan-out: a follower refused an event")

    def interrupt_followers(self) -> None:
        for follower in {follower for members in self.followers.values() for follower in members}:
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

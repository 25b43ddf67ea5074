"""Process-local fan-out of group events to the websockets this process serves.

Channels would deliver a group message to every member consumer separately: one channel-layer
message and one dispatch per connection per event, which is what limits a single server process
to a few thousand deliveries a second. Here each process joins a group once, with one channel of
its own, and hands every message to its local followers of that group with a plain method call
(`deliver`, which only buffers). 200 wall screens following 100 node changes a second cost 100
channel-layer messages a second instead of 20,000 (bench/ws_fanout.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


class Follower(Protocol):
    def deliver(self, message: dict) -> None: ...


class LocalFanout:
    def __init__(self, layer):
        self.layer = layer
        self.channel: str | None = None
        self.followers: dict[str, set[Follower]] = {}
        self.pump: asyncio.Task | None = None
        self.lock = asyncio.Lock()

    async def join(self, group: str, follower: Follower) -> None:
        async with self.lock:  # two consumers joining a new group must not both group_add it
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                self.pump = asyncio.ensure_future(self.run_pump())
            if group not in self.followers:
                self.followers[group] = set()
                await self.layer.group_add(group, self.channel)
            self.followers[group].add(follower)

    async def leave(self, group: str, follower: Follower) -> None:
        async with self.lock:
            members = self.followers.get(group)
            if members is None:
                return
            members.discard(follower)
            if not members:
                del self.followers[group]
                await self.layer.group_discard(group, self.channel)

    async def run_pump(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("live fan-out: receiving from the channel layer failed")
                await asyncio.sleep(1.0)
                continue
            for follower in list(self.followers.get(message.get("group"), ())):
                try:
                    follower.deliver(message)
                except Exception:
                    logger.exception("live fan-out: a follower refused an event")


_fanouts: dict[asyncio.AbstractEventLoop, LocalFanout] = {}


def local_fanout() -> LocalFanout:
    """The fan-out of the running event loop (daphne serves every websocket from one loop)."""
    loop = asyncio.get_running_loop()
    fanout = _fanouts.get(loop)
    if fanout is None:
        fanout = _fanouts[loop] = LocalFanout(get_channel_layer())
    return fanout

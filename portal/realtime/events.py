"""publish(): the one way the server pushes to browsers.

Events leave only when the surrounding transaction commits, so a client never sees a change that
was rolled back and never reads the database before the change is visible there.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
from collections.abc import Iterable

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from redis.exceptions import ConnectionError as RedisConnectionError

from portal.realtime.access import is_valid_group_name

logger = logging.getLogger(__name__)

# Each web process receives it once (portal/realtime/fanout.py) and hands it to its consumers.
CONSUMER_MESSAGE_TYPE = "portal.event"
# "Check again what you may follow", to the sockets of one user (recheck_sockets()).
RECHECK_MESSAGE_TYPE = "portal.recheck"


def publish(
    group: str,
    event: str,
    payload: dict,
    *,
    tenant_ids: Iterable[int] | None = None,
    tenant_private: bool = True,
) -> None:
    """Send `event` with `payload` to `group` once the current transaction commits.

    `tenant_ids` names the tenants the event concerns: a tenant admin receives it only when
    their tenant is listed. With `tenant_private` (the default) it is also tenant data that
    viewers may not see (a job); without, it is cluster data scoped for tenant admins (a node's
    Slurm state), which every cluster-wide role receives. Outside a transaction the event is
    sent at once.
    """
    if not is_valid_group_name(group):
        raise ValueError(f"invalid websocket group name {group!r}")
    message = {
        "type": CONSUMER_MESSAGE_TYPE,
        "group": group,
        "event": event,
        # Round-trip through Django's encoder so datetimes and decimals survive msgpack.
        "payload": DjangoJSONEncoder().encode(payload),
        "tenant_ids": sorted(set(tenant_ids)) if tenant_ids is not None else None,
        "tenant_private": tenant_private,
    }
    transaction.on_commit(lambda: send_now(group, message), robust=True)


def user_group(user_id: int) -> str:
    """The group every websocket of one user follows from its start, for re-check requests
    only: no client may subscribe to it (no access check is registered for "user")."""
    return f"user.{user_id}"


def recheck_sockets(*, user_ids: Iterable[int]) -> None:
    """Once the current transaction commits, have every open websocket of these users check
    again what it may follow (portal/realtime/access.py:socket_access): their token, account,
    role or tenant's allocations changed. A socket holds the events that arrive after this
    request until its check is done, so none the change forbids goes out."""
    for user_id in sorted(set(user_ids)):
        group = user_group(user_id)
        message = {"type": RECHECK_MESSAGE_TYPE, "group": group}
        transaction.on_commit(
            lambda group=group, message=message: send_now(group, message), robust=True
        )


_forward_lock = threading.Lock()
_forward_connection = None


def forward_events(connection) -> None:
    """Send this process's events down `connection` (a multiprocessing pipe) instead of to a
    channel layer: the embedded default's periodic task process (portal/scheduler.py) has no
    layer that reaches a browser; the web process at the other end delivers them."""
    global _forward_connection
    _forward_connection = connection


def send_now(group: str, message: dict) -> None:
    if _forward_connection is not None:
        try:
            with _forward_lock:  # sends from several task threads must not interleave
                _forward_connection.send((group, message))
        except Exception:
            logger.exception("could not forward %s to %s", message.get("event"), group)
        return
    channel_layer = get_channel_layer()
    if channel_layer is None:
        return
    try:
        if isinstance(channel_layer, InMemoryChannelLayer):
            # The in-memory layer lives on the loop that serves the websockets (the embedded
            # demo); async_to_sync from a request thread runs the send there.
            async_to_sync(channel_layer.group_send)(group, message)
        else:
            _publish_through_redis(channel_layer, group, message)
    except Exception:
        # The change is committed; a lost push is repaired by the client's refresh on reconnect.
        logger.exception("could not publish %s to %s", message.get("event"), group)


def _publish_through_redis(channel_layer, group: str, message: dict) -> None:
    _publisher_loop().send(channel_layer, group, message)


class _PublisherLoop:
    """One event loop per process, in a daemon thread, sending the events of synchronous code
    to Redis one after another, in the order they were published.

    channels-redis keeps a connection pool per event loop: async_to_sync made a loop, and so a
    new Redis connection, for every event (~3 ms each, six per Action on the worker's path).
    The publisher does not wait for its send either: a worker claiming an Action, or a request
    queueing one, went on only after two Redis round trips per event (a drain's claim waited on
    two events before it called Slurm). A send that fails is logged, as it was; the change is
    committed and a client's refresh on reconnect repairs a lost push.
    """

    SEND_TIMEOUT_SECONDS = 5.0
    # Past this many unsent events (Redis away for long), new ones are dropped and logged
    # rather than held in memory without bound.
    MAX_PENDING = 10_000

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.pending: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._send_each, name="live-events-publisher",
                                       daemon=True)
        self.thread.start()

    def send(self, channel_layer, group: str, message: dict) -> None:
        if self.pending.qsize() >= self.MAX_PENDING:
            logger.warning("%d live events unsent: dropped %s to %s", self.MAX_PENDING,
                           message.get("event"), group)
            return
        self.pending.put((channel_layer, group, message))

    def wait_until_sent(self, timeout: float) -> bool:
        """Whether every event published so far has been sent (or failed) within `timeout`."""
        # Woken by the publisher's task_done() for the last pending event, not by polling: a
        # request waits here for its Action's "queued" event, and a 5 ms poll was a third of
        # a drain request's time on the CI machine.
        done = self.pending.all_tasks_done
        with done:
            return done.wait_for(lambda: not self.pending.unfinished_tasks, timeout)

    def _send_each(self) -> None:
        asyncio.set_event_loop(self.loop)
        while True:
            channel_layer, group, message = self.pending.get()
            try:
                self.loop.run_until_complete(self._send(channel_layer, group, message))
            except Exception:
                logger.exception("could not publish %s to %s", message.get("event"), group)
            finally:
                self.pending.task_done()

    async def _send(self, channel_layer, group: str, message: dict) -> None:
        timeout = self.SEND_TIMEOUT_SECONDS
        try:
            await asyncio.wait_for(channel_layer.group_send(group, message), timeout)
        except RedisConnectionError:
            # A pooled connection that died with a Redis restart fails once and is dropped;
            # the retry connects afresh. Only a connection error (quick: refused or reset),
            # never a timeout, so a Redis that is down holds up no more sends than before.
            await asyncio.wait_for(channel_layer.group_send(group, message), timeout)


def wait_until_published(timeout: float = 5.0) -> bool:
    """Wait until this process's events so far have left for Redis (at exit, in tests)."""
    if _publisher is None or _publisher.pid != os.getpid():
        return True
    return _publisher.wait_until_sent(timeout)


_publisher: _PublisherLoop | None = None
_publisher_lock = threading.Lock()


def _publisher_loop() -> _PublisherLoop:
    global _publisher
    with _publisher_lock:
        # A forked worker (Celery prefork) inherits the object but not the thread: start anew.
        if _publisher is None or _publisher.pid != os.getpid():
            _publisher = _PublisherLoop()
        return _publisher


# A short-lived process (a management command, a script) sends what it published before it ends.
atexit.register(wait_until_published, 2.0)

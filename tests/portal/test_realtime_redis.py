"""Websockets on the Redis channel layer stay up while idle and receive every event.

These run against the real Redis in REDIS_URL and, for the long test, a real daphne process: the
failure they guard against (redis-py 8's 5 s socket timeout aborting channels-redis's 5 s blocking
pop, which closed every idle socket with 1011) only shows with the real parts and real idle time.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction

from portal.models import Role
from portal.realtime import publish
from portal.services.accounts import api_token_create
from tests.conftest import PortalServerProcess

SUBSCRIBED_SECONDS = 90
# Bursts of events separated by idle gaps, several of them longer than the channel layer's
# blocking pop (5 s): an idle socket is what used to die, a busy one never did.
IDLE_GAPS_SECONDS = [0.5, 7.0, 2.0, 11.0, 1.0, 6.0, 13.0, 0.2, 8.0, 3.0]
BURST_SIZE = 5


@pytest.fixture
def redis_channel_layer(settings):
    """The channel layer's settings under REDIS_URL (the docker-compose deployment's)."""
    if not os.environ.get("REDIS_URL"):
        pytest.fail("these tests need the Redis channel layer: run them with REDIS_URL set")
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"].startswith("channels_redis.")
    return settings.CHANNEL_LAYERS["default"]


def layer_from(settings_entry: dict, **overrides):
    from django.utils.module_loading import import_string

    return import_string(settings_entry["BACKEND"])(**{**settings_entry["CONFIG"], **overrides})


def test_an_idle_receive_waits_quietly_and_still_gets_the_next_message(redis_channel_layer):
    """Nothing for 8 s (longer than redis-py 8's 5 s read timeout and the core layer's 5 s
    blocking pop), then a message: the layer as configured neither fails nor loses it."""
    layer = layer_from(redis_channel_layer)

    async def idle_then_one_message():
        channel = await layer.new_channel()
        receiving = asyncio.ensure_future(layer.receive(channel))
        try:
            await asyncio.sleep(8)
            if receiving.done():
                receiving.result()  # raises what ended it
                return "a message out of nowhere"
            await layer.send(channel, {"type": "after.silence"})
            return await asyncio.wait_for(receiving, 5)
        finally:
            receiving.cancel()
            await layer.flush()  # this layer's own channels and connections

    assert async_to_sync(idle_then_one_message)() == {"type": "after.silence"}


def test_portals_on_other_redis_databases_do_not_hear_each_others_events(redis_channel_layer):
    """Redis pub/sub ignores the database number: the layer's prefix must keep a portal whose
    REDIS_URL names another database (a second portal, or tests beside a demo) apart."""
    import subprocess
    import sys

    here_url = redis_channel_layer["CONFIG"]["hosts"][0]["address"]
    elsewhere_url = here_url.rsplit("/", 1)[0] + "/15"
    # The other portal's layer exactly as its settings build it.
    elsewhere_entry = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import json; from django.conf import settings; "
                "print(json.dumps(settings.CHANNEL_LAYERS['default']))",
            ],
            env={**os.environ, "REDIS_URL": elsewhere_url},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    here, elsewhere = layer_from(redis_channel_layer), layer_from(elsewhere_entry)

    async def publish_elsewhere_then_here():
        channel = await here.new_channel()
        await here.group_add("cluster", channel)
        receiving = asyncio.ensure_future(here.receive(channel))
        try:
            await asyncio.sleep(0.2)  # the subscription is in place
            await elsewhere.group_send("cluster", {"type": "portal.event", "from": "elsewhere"})
            await asyncio.sleep(0.5)
            await here.group_send("cluster", {"type": "portal.event", "from": "here"})
            return await asyncio.wait_for(receiving, 5)
        finally:
            receiving.cancel()
            await here.flush()
            await elsewhere.flush()

    assert async_to_sync(publish_elsewhere_then_here)()["from"] == "here"


class SocketFollowers:
    """Token-authenticated websockets following `cluster`, run on an event loop in a thread."""

    def __init__(self, url: str, token_keys: list[str]):
        self.url = url
        self.token_keys = token_keys
        self.received: list[list[int]] = [[] for _ in token_keys]
        self.closes: list[str] = []
        self.pongs: list[bool] = [False] * len(token_keys)
        self.ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop_requested: asyncio.Event | None = None
        self.thread = threading.Thread(target=self.run, name="socket-followers", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        self.thread.start()
        if not self.ready.wait(30):
            raise RuntimeError(f"sockets did not subscribe: {self.error or self.closes}")

    def stop(self) -> None:
        if self.thread.is_alive():  # else every socket has closed already
            self.loop.call_soon_threadsafe(self.stop_requested.set)
        self.thread.join(30)

    def run(self) -> None:
        try:
            asyncio.run(self.follow_all())
        except BaseException as error:  # reported by the test, not lost in the thread
            self.error = error
            self.ready.set()

    async def follow_all(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop_requested = asyncio.Event()
        subscribed = [asyncio.Event() for _ in self.token_keys]
        followers = [
            asyncio.create_task(self.follow(index, key, subscribed[index]))
            for index, key in enumerate(self.token_keys)
        ]
        await asyncio.gather(*(event.wait() for event in subscribed))
        self.ready.set()
        await asyncio.gather(*followers)

    async def follow(self, index: int, key: str, subscribed: asyncio.Event) -> None:
        import websockets

        async with websockets.connect(
            self.url.replace("http://", "ws://") + "/ws/",
            additional_headers={"Authorization": f"Token {key}"},
            origin=self.url,  # a browser-like client; automation without Origin is auth.py's test
        ) as socket:
            await socket.send(json.dumps({"type": "subscribe", "groups": ["cluster"]}))
            stopping = asyncio.ensure_future(self.stop_requested.wait())
            try:
                while True:
                    receiving = asyncio.ensure_future(socket.recv())
                    await asyncio.wait({receiving, stopping}, return_when=asyncio.FIRST_COMPLETED)
                    if not receiving.done():
                        receiving.cancel()
                        break
                    try:
                        frame = json.loads(receiving.result())
                    except websockets.ConnectionClosed as closed:
                        self.closes.append(f"socket {index}: {closed.rcvd}")
                        return
                    if frame["type"] == "subscribed":
                        assert frame["groups"] == ["cluster"], frame
                        subscribed.set()
                    for event in frame.get("events", [frame] if frame["type"] == "event" else []):
                        self.received[index].append(event["payload"]["number"])
                # Still open after the whole run: it answers a ping.
                await socket.send(json.dumps({"type": "ping"}))
                while json.loads(await asyncio.wait_for(socket.recv(), 5))["type"] != "pong":
                    pass
                self.pongs[index] = True
            finally:
                stopping.cancel()


@pytest.mark.timeout(SUBSCRIBED_SECONDS + 120)
@pytest.mark.django_db(transaction=True)
def test_idle_token_sockets_stay_open_for_90_seconds_and_receive_every_event(
    redis_channel_layer, make_user, settings
):
    users = [make_user(role) for role in (Role.OPERATOR, Role.VIEWER, Role.TENANT_ADMIN)]
    users.append(make_user(Role.ONCALL))
    keys = [api_token_create(user=user, name="idle sockets")[1] for user in users]
    server = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    server.start()
    try:
        followers = SocketFollowers(server.url, keys)
        followers.start()
        sent: list[int] = []
        deadline = time.monotonic() + SUBSCRIBED_SECONDS
        gaps = iter(IDLE_GAPS_SECONDS * 10)
        while time.monotonic() < deadline:
            for _ in range(BURST_SIZE):
                number = len(sent)
                # Published on commit from this process, as a Celery worker does.
                with transaction.atomic():
                    publish("cluster", "node.state", {"number": number, "state": "idle"})
                sent.append(number)
                time.sleep(0.02)
            time.sleep(min(next(gaps), max(0.0, deadline - time.monotonic())))
        arrival_deadline = time.monotonic() + 10
        while time.monotonic() < arrival_deadline and any(
            len(numbers) < len(sent) for numbers in followers.received
        ):
            time.sleep(0.1)
        followers.stop()
    finally:
        server.stop()
    assert followers.error is None, followers.error
    assert followers.closes == [], f"sockets closed: {followers.closes}\n{server.log()[-3000:]}"
    for numbers in followers.received:
        assert numbers == sent  # every event, once, in order
    assert followers.pongs == [True] * len(keys)
    assert "Exception inside application" not in server.log()


class RecordingFollower:
    def __init__(self):
        self.messages: list[dict] = []
        self.interruptions = 0

    def deliver(self, message: dict) -> None:
        self.messages.append(message)

    def feed_interrupted(self) -> None:
        self.interruptions += 1


@pytest.mark.parametrize("backend", ["redis", "in-memory"])
def test_a_process_keeps_its_groups_for_longer_than_the_membership_lease(
    backend, redis_channel_layer
):
    """A wall screen open for days: the process joined `cluster` once, and the layer expires a
    membership `group_expiry` after it was taken (a day by default) unless it is renewed."""
    from channels.layers import InMemoryChannelLayer

    from portal.realtime.fanout import LocalFanout

    lease = 2
    if backend == "redis":  # the configured layer, with a 2 s lease where it has leases
        layer = layer_from(redis_channel_layer, group_expiry=lease)
    else:
        layer = InMemoryChannelLayer(group_expiry=lease)

    async def follow_past_the_lease():
        fanout, follower = LocalFanout(layer), RecordingFollower()
        await fanout.join("lease-test", follower)
        await asyncio.sleep(lease + 1.5)
        await layer.group_send("lease-test", {"type": "portal.event", "group": "lease-test"})
        for _ in range(40):
            if follower.messages:
                break
            await asyncio.sleep(0.05)
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()  # the fan-out's pump and whatever else it runs
        await layer.flush()
        return follower.messages

    assert async_to_sync(follow_past_the_lease)() == [
        {"type": "portal.event", "group": "lease-test"}
    ]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_sockets_are_told_when_redis_goes_away_and_follow_again_once_it_is_back(
    private_redis, redis_channel_layer, make_user, settings
):
    """Redis restarted (memberships and queued messages gone): every follower is closed with
    1012 so that its client reconnects and re-reads, and new subscriptions work once it is back."""
    import copy

    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer
    from channels.testing import WebsocketCommunicator

    from portal.asgi import application

    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    layers["default"]["CONFIG"]["hosts"][0]["address"] = private_redis.url
    settings.CHANNEL_LAYERS = layers  # Channels drops its cached layers on this change
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    _, key = await sync_to_async(api_token_create)(user=operator, name="outage")
    headers = [(b"origin", b"http://127.0.0.1"), (b"authorization", f"Token {key}".encode())]

    async def follow_cluster():
        communicator = WebsocketCommunicator(application, "/ws/", headers=headers)
        connected, _ = await communicator.connect(timeout=5)
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["type"] == "hello"
        await communicator.send_json_to({"type": "subscribe", "groups": ["cluster"]})
        assert (await communicator.receive_json_from(timeout=5))["groups"] == ["cluster"]
        return communicator

    async def an_event_arrives(communicator, number):
        message = {"type": "portal.event", "group": "cluster", "event": "node.state",
                   "payload": json.dumps({"number": number}), "tenant_ids": None}
        await get_channel_layer().group_send("cluster", message)
        frame = await communicator.receive_json_from(timeout=5)
        return frame["payload"] == {"number": number}

    first = await follow_cluster()
    assert await an_event_arrives(first, 1)

    await sync_to_async(private_redis.stop)()
    closed = await first.receive_output(timeout=15)
    assert closed == {"type": "websocket.close", "code": 1012}
    await first.disconnect()

    await sync_to_async(private_redis.start)()  # empty: it forgot every subscription
    # Like live.js: a client told to re-read (1012) connects again; within seconds of Redis's
    # return, a new subscription receives what is published.
    deadline, number, resumed = time.monotonic() + 20, 1, False
    while not resumed and time.monotonic() < deadline:
        number, second = number + 1, None
        try:
            second = await follow_cluster()
            resumed = await an_event_arrives(second, number)
        except Exception:  # refused, told to re-read, or the event fell in the gap: again
            await asyncio.sleep(0.5)
        finally:
            if second is not None:
                await second.disconnect()
    assert resumed, "following never resumed after Redis came back"


def test_the_first_event_after_a_redis_restart_is_published(private_redis, redis_channel_layer,
                                                             settings):
    """A Celery worker's pooled connection died with Redis; the next publish must not be lost
    (the web process's heartbeat cannot notice a publisher's failure)."""
    import copy

    import redis

    from portal.realtime.events import send_now

    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    layers["default"]["CONFIG"]["hosts"][0]["address"] = private_redis.url
    settings.CHANNEL_LAYERS = layers

    def published(number: int) -> bool:
        subscriber = redis.Redis.from_url(private_redis.url).pubsub()
        # The pub/sub layer's name for the group.
        subscriber.subscribe(f"{layers['default']['CONFIG']['prefix']}__group__cluster")
        subscriber.get_message(timeout=2)  # the subscribe confirmation
        send_now("cluster", {"type": "portal.event", "group": "cluster", "number": number})
        message = subscriber.get_message(timeout=3)
        subscriber.close()
        return message is not None and message["type"] == "message"

    assert published(1)
    private_redis.stop()
    private_redis.start()
    assert published(2)

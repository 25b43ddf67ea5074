"""Events leave only on commit; /ws/ refuses strangers and filters what each user may see."""

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction
from django.test import Client

from portal.asgi import application
from portal.models import Role
from portal.realtime import publish, register_group_access
from portal.services.accounts import api_token_create

ORIGIN = (b"origin", b"http://127.0.0.1")


async def listen(group: str) -> str:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return channel


async def next_event(communicator) -> dict:
    """The next event from a connection, unpacking frames that carry several events."""
    pending = communicator.__dict__.setdefault("pending_events", [])
    while not pending:
        frame = await communicator.receive_json_from(timeout=5)
        if frame["type"] == "events":
            pending.extend({"type": "event", **event} for event in frame["events"])
        else:
            pending.append(frame)
    return pending.pop(0)


_receiving: dict[str, asyncio.Future] = {}


async def receive_within(channel: str, timeout: float):
    """The next message on `channel`, or TimeoutError. A receive that timed out is kept, not
    cancelled: Redis pub/sub forgets a channel whose receive was cancelled."""
    receiving = _receiving.pop(channel, None) or asyncio.ensure_future(
        get_channel_layer().receive(channel)
    )
    done, _ = await asyncio.wait({receiving}, timeout=timeout)
    if not done:
        _receiving[channel] = receiving
        raise TimeoutError
    return receiving.result()


async def run_in_transaction_while(check, publish_calls, *, fail: bool = False):
    """Publish inside a transaction held open in a thread, run `check()` before it ends."""
    loop = asyncio.get_running_loop()
    inside, release = asyncio.Event(), threading.Event()

    def transaction_body():
        try:
            with transaction.atomic():
                publish_calls()
                loop.call_soon_threadsafe(inside.set)
                release.wait(10)
                if fail:
                    raise RuntimeError("rolled back")
        finally:
            connection.close()  # this thread's connection would block dropping the test database

    body = asyncio.ensure_future(sync_to_async(transaction_body, thread_sensitive=False)())
    await inside.wait()
    await check()
    release.set()
    if fail:
        with pytest.raises(RuntimeError):
            await body
    else:
        await body


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_no_event_leaves_before_commit():
    channel = await listen("actions")

    async def nothing_yet():
        with pytest.raises(asyncio.TimeoutError):
            await receive_within(channel, 0.5)

    await run_in_transaction_while(
        nothing_yet, lambda: publish("actions", "action.updated", {"id": 1, "status": "queued"})
    )
    message = await receive_within(channel, 3)
    assert message["event"] == "action.updated"
    assert json.loads(message["payload"]) == {"id": 1, "status": "queued"}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_rolled_back_change_never_publishes():
    channel = await listen("actions")

    async def nothing():
        return None

    await run_in_transaction_while(
        nothing, lambda: publish("actions", "action.updated", {"id": 2}), fail=True
    )
    with pytest.raises(asyncio.TimeoutError):
        await receive_within(channel, 0.5)


def test_publish_refuses_invalid_group_names():
    with pytest.raises(ValueError, match="invalid websocket group"):
        publish("bad group name!", "x", {})


# --- the consumer ------------------------------------------------------------------------------


def token_headers(user):
    _, key = api_token_create(user=user, name="ws")
    return [ORIGIN, (b"authorization", f"Token {key}".encode())]


async def connect(headers):
    communicator = WebsocketCommunicator(application, "/ws/", headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    return communicator, connected


async def subscribe(communicator, groups):
    await communicator.send_json_to({"type": "subscribe", "groups": groups})
    return await communicator.receive_json_from(timeout=5)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_anonymous_clients_are_refused():
    communicator, connected = await connect([ORIGIN])
    assert not connected
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_wrong_token_is_refused():
    communicator, connected = await connect([ORIGIN, (b"authorization", b"Token gop_nope")])
    assert not connected
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_foreign_origin_is_refused(make_user):
    user = await sync_to_async(make_user)(Role.OPERATOR)
    headers = await sync_to_async(token_headers)(user)
    headers[0] = (b"origin", b"http://evil.example")
    communicator, connected = await connect(headers)
    assert not connected
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_session_cookie_login_works_for_the_browser(make_user):
    user = await sync_to_async(make_user)(Role.VIEWER)

    def session_cookie():
        browser = Client()
        browser.force_login(user)
        return browser.cookies["sessionid"].value

    cookie = await sync_to_async(session_cookie)()
    communicator, connected = await connect([ORIGIN, (b"cookie", f"sessionid={cookie}".encode())])
    assert connected
    hello = await communicator.receive_json_from(timeout=5)
    assert hello == {"type": "hello", "user": user.username, "role": "viewer"}
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_subscriptions_are_checked_per_group_and_events_arrive(make_user):
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    communicator, connected = await connect(await sync_to_async(token_headers)(operator))
    assert connected
    await communicator.receive_json_from(timeout=5)  # hello
    reply = await subscribe(communicator, ["actions", "no-such-group", "BAD NAME"])
    assert reply == {
        "type": "subscribed",
        "groups": ["actions"],
        "denied": ["no-such-group", "BAD NAME"],
    }
    await sync_to_async(publish)("actions", "action.updated", {"id": 7, "status": "running"})
    event = await next_event(communicator)
    assert event == {
        "type": "event",
        "group": "actions",
        "event": "action.updated",
        "payload": {"id": 7, "status": "running"},
    }
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_tenant_admins_may_not_join_cluster_wide_groups(make_user, tenant_a):
    tenant_admin = await sync_to_async(make_user)(Role.TENANT_ADMIN, tenant_a)
    communicator, connected = await connect(await sync_to_async(token_headers)(tenant_admin))
    assert connected
    await communicator.receive_json_from(timeout=5)
    reply = await subscribe(communicator, ["actions", "action.1", "cluster"])
    assert reply["groups"] == ["cluster"]
    assert reply["denied"] == ["actions", "action.1"]
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_tenant_private_events_reach_only_that_tenant_and_staff(
    make_user, tenant_a, tenant_b
):
    users = {
        "own": await sync_to_async(make_user)(Role.TENANT_ADMIN, tenant_a),
        "other": await sync_to_async(make_user)(Role.TENANT_ADMIN, tenant_b),
        "operator": await sync_to_async(make_user)(Role.OPERATOR),
        "viewer": await sync_to_async(make_user)(Role.VIEWER),
    }
    clients = {}
    for name, user in users.items():
        communicator, connected = await connect(await sync_to_async(token_headers)(user))
        assert connected, name
        await communicator.receive_json_from(timeout=5)
        assert (await subscribe(communicator, ["cluster"]))["groups"] == ["cluster"]
        clients[name] = communicator

    await sync_to_async(publish)(
        "cluster", "node.updated", {"node": "gpu001"}, tenant_ids=[tenant_a.pk]
    )
    await sync_to_async(publish)("cluster", "summary", {"idle": 99})  # public to all

    for name in ("own", "operator"):
        first = await next_event(clients[name])
        assert first["payload"] == {"node": "gpu001"}, name
    for name, communicator in clients.items():
        public = await next_event(communicator)
        assert public["event"] == "summary", name  # the others skipped the private event
        assert not communicator.__dict__.get("pending_events")
        assert await communicator.receive_nothing(timeout=0.3)
        await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_malformed_messages_get_an_error_not_a_disconnect(make_user):
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    communicator, _ = await connect(await sync_to_async(token_headers)(operator))
    await communicator.receive_json_from(timeout=5)
    await communicator.send_to(text_data="{not json")
    assert (await communicator.receive_json_from(timeout=5))["type"] == "error"
    await communicator.send_json_to({"type": "subscribe", "groups": "actions"})
    assert "groups" in (await communicator.receive_json_from(timeout=5))["detail"]
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=5) == {"type": "pong"}
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("depth", [65, 1000, 100_000])
async def test_a_frame_nested_too_deep_gets_an_error_not_a_1011(make_user, depth):
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    communicator, _ = await connect(await sync_to_async(token_headers)(operator))
    await communicator.receive_json_from(timeout=5)
    frame = '{"type": "subscribe", "groups": ' + "[" * depth + "]" * depth + "}"
    await communicator.send_to(text_data=frame)
    reply = await communicator.receive_json_from(timeout=5)
    assert reply["type"] == "error"
    assert reply["detail"].startswith("JSON nested deeper than 64 levels")
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=5) == {"type": "pong"}
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_apps_register_their_own_group_checks(make_user):
    register_group_access("testroom", lambda user, group: group == "testroom.open")
    viewer = await sync_to_async(make_user)(Role.VIEWER)
    communicator, _ = await connect(await sync_to_async(token_headers)(viewer))
    await communicator.receive_json_from(timeout=5)
    reply = await subscribe(communicator, ["testroom.open", "testroom.secret"])
    assert reply["groups"] == ["testroom.open"] and reply["denied"] == ["testroom.secret"]
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_events_close_together_share_a_frame_in_order(make_user):
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    communicator, connected = await connect(await sync_to_async(token_headers)(operator))
    assert connected
    await communicator.receive_json_from(timeout=5)  # hello
    await subscribe(communicator, ["cluster"])
    for number in range(5):
        await sync_to_async(publish)("cluster", "node.state", {"n": number})
    frames = []
    while sum(len(frame.get("events", [frame])) for frame in frames) < 5:
        frames.append(await communicator.receive_json_from(timeout=5))
    events = [event for frame in frames for event in frame.get("events", [frame])]
    assert [event["payload"]["n"] for event in events] == [0, 1, 2, 3, 4]
    assert len(frames) < 5  # batched: fewer frames than events
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_one_process_subscription_serves_many_connections(make_user):
    from portal.realtime.fanout import local_fanout

    operator = await sync_to_async(make_user)(Role.OPERATOR)
    headers = await sync_to_async(token_headers)(operator)
    clients = []
    for _ in range(3):
        communicator, connected = await connect(headers)
        assert connected
        await communicator.receive_json_from(timeout=5)
        await subscribe(communicator, ["cluster"])
        clients.append(communicator)
    assert len(local_fanout().followers["cluster"]) == 3
    await sync_to_async(publish)("cluster", "node.state", {"hostname": "gpu001"})
    for communicator in clients:
        assert (await next_event(communicator))["payload"] == {"hostname": "gpu001"}
    for communicator in clients:
        await communicator.disconnect()
    assert "cluster" not in local_fanout().followers


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_cluster_data_scoped_to_tenants_reaches_viewers_but_only_that_tenant_admin(
    make_user, tenant_a, tenant_b
):
    users = {
        "own": await sync_to_async(make_user)(Role.TENANT_ADMIN, tenant_a),
        "other": await sync_to_async(make_user)(Role.TENANT_ADMIN, tenant_b),
        "viewer": await sync_to_async(make_user)(Role.VIEWER),
        "operator": await sync_to_async(make_user)(Role.OPERATOR),
    }
    clients = {}
    for name, user in users.items():
        communicator, connected = await connect(await sync_to_async(token_headers)(user))
        assert connected, name
        await communicator.receive_json_from(timeout=5)
        await subscribe(communicator, ["cluster"])
        clients[name] = communicator
    await sync_to_async(publish)(
        "cluster",
        "node.state",
        {"hostname": "gpu001", "state": "drained"},
        tenant_ids=[tenant_a.pk],
        tenant_private=False,
    )
    for name in ("own", "viewer", "operator"):
        assert (await next_event(clients[name]))["payload"]["state"] == "drained", name
    assert await clients["other"].receive_nothing(timeout=0.3)
    for communicator in clients.values():
        await communicator.disconnect()

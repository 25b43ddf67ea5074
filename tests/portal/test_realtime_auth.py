"""Who may open /ws/: browsers from our own origin, and automation (no Origin) with a token."""

import json
import os

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as websocket_connect

from portal.asgi import application
from portal.models import Role
from portal.realtime import publish
from portal.services.accounts import api_token_create
from tests.conftest import PortalServerProcess

ORIGIN = (b"origin", b"http://127.0.0.1")


def new_token(user) -> bytes:
    _, key = api_token_create(user=user, name="automation")
    return f"Token {key}".encode()


def session_cookie(user) -> bytes:
    browser = Client()
    browser.force_login(user)
    return f"sessionid={browser.cookies['sessionid'].value}".encode()


async def connect(headers):
    communicator = WebsocketCommunicator(application, "/ws/", headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    return communicator, connected


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_automation_without_origin_follows_events_with_a_token(make_user):
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    token = await sync_to_async(new_token)(operator)
    communicator, connected = await connect([(b"authorization", token)])
    assert connected
    hello = await communicator.receive_json_from(timeout=5)
    assert hello == {"type": "hello", "user": operator.username, "role": "operator"}
    await communicator.send_json_to({"type": "subscribe", "groups": ["actions"]})
    assert (await communicator.receive_json_from(timeout=5))["groups"] == ["actions"]
    await sync_to_async(publish)("actions", "action.updated", {"id": 3, "status": "queued"})
    frame = await communicator.receive_json_from(timeout=5)
    events = frame["events"] if frame["type"] == "events" else [frame]
    assert events[0]["payload"] == {"id": 3, "status": "queued"}
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_without_origin_a_session_cookie_is_not_enough(make_user):
    viewer = await sync_to_async(make_user)(Role.VIEWER)
    cookie = await sync_to_async(session_cookie)(viewer)
    communicator, connected = await connect([(b"cookie", cookie)])
    assert not connected
    # A junk token does not smuggle the cookie in either: without Origin only the token counts.
    communicator, connected = await connect(
        [(b"cookie", cookie), (b"authorization", b"Token gop_junk")]
    )
    assert not connected
    communicator, connected = await connect([(b"cookie", cookie), ORIGIN])
    assert connected  # the browser, from our origin, keeps its session login
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_with_an_origin_it_must_match_whatever_the_credentials(make_user):
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    token = await sync_to_async(new_token)(operator)
    for origin in (b"http://evil.example", b"null", b""):
        _, connected = await connect([(b"origin", origin), (b"authorization", token)])
        assert not connected, origin
    communicator, connected = await connect([ORIGIN, (b"authorization", token)])
    assert connected
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_wrong_tokens_on_the_websocket_spend_the_failed_authentication_budget(
    make_user, settings
):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "failed_auth": "3/min",
        },
    }
    operator = await sync_to_async(make_user)(Role.OPERATOR)
    token = await sync_to_async(new_token)(operator)
    for _ in range(3):
        _, connected = await connect([(b"authorization", b"Token gop_guess")])
        assert not connected
    _, connected = await connect([(b"authorization", token)])
    assert not connected  # over the budget: not even the right token is looked at


@pytest.mark.django_db(transaction=True)
def test_a_real_server_lets_a_websockets_client_follow_events(make_user, settings):
    """daphne, the `websockets` library (which sends no Origin), Redis between the processes."""
    if not os.environ.get("REDIS_URL"):
        pytest.fail("needs REDIS_URL: the server and this test share events through Redis")
    operator = make_user(Role.OPERATOR)
    _, key = api_token_create(user=operator, name="websocket automation")
    server = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    server.start()
    try:
        url = server.url.replace("http://", "ws://") + "/ws/"
        with pytest.raises(InvalidStatus) as refused:
            websocket_connect(url, open_timeout=10)
        assert refused.value.response.status_code == 403
        with websocket_connect(
            url, additional_headers={"Authorization": f"Token {key}"}, open_timeout=10
        ) as socket:
            assert json.loads(socket.recv(timeout=10))["type"] == "hello"
            socket.send(json.dumps({"type": "subscribe", "groups": ["actions"]}))
            assert json.loads(socket.recv(timeout=10))["groups"] == ["actions"]
            publish("actions", "action.updated", {"id": 11, "status": "succeeded"})
            frame = json.loads(socket.recv(timeout=10))
            events = frame["events"] if frame["type"] == "events" else [frame]
            assert events[0]["payload"] == {"id": 11, "status": "succeeded"}
    finally:
        server.stop()

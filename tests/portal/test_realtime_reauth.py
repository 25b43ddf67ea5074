"""An open websocket is held to the access rules as they change, not only as they were when it
subscribed (issue 29 item 2): a revoked or expired token, a deactivated user, a new role or an
ended allocation stops what the user may no longer see at once, and closes the socket (4401:
credentials no longer valid, 4403: nothing permitted) where they may see nothing.

Each runs over a real daphne on the Redis channel layer, the changes made in this process as a
request or a Celery worker makes them. One server only acts on the services' re-check requests
(and a token's expiry): its periodic re-check is an hour away. The other re-checks every second,
for changes no service announces.
"""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as websocket_connect

from inventory.allocations import allocation_end
from inventory.models import Allocation, Node
from portal.models import AccountSource, Role, User
from portal.realtime import publish
from portal.services.accounts import api_token_create, user_apply_directory_grant
from tests.conftest import PortalServerProcess

CREDENTIALS_ENDED = 4401
NOTHING_PERMITTED = 4403
PERIODIC_SECONDS = 1
WAIT_SECONDS = 10  # for anything that should take milliseconds (or PERIODIC_SECONDS)


def start_server(reauth_seconds: float):
    from django.conf import settings

    if not os.environ.get("REDIS_URL"):
        pytest.fail("needs REDIS_URL: the server and this test share events through Redis")
    server = PortalServerProcess(
        settings.DATABASES["default"]["NAME"],
        extra_env={"REALTIME_REAUTH_SECONDS": str(reauth_seconds)},
    )
    server.start()
    return server


@pytest.fixture(scope="module")
def announced_changes_server(django_db_setup, django_db_blocker):
    """A server that re-checks on the services' requests and token expiry only."""
    server = start_server(3600)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def periodic_server(django_db_setup, django_db_blocker):
    server = start_server(PERIODIC_SECONDS)
    yield server
    server.stop()


class LiveSocket:
    """A websockets client on /ws/: automation with a token, or a browser with its session."""

    def __init__(self, server: PortalServerProcess, *, token: str = "", session: str = ""):
        self.server = server
        if token:
            headers = {"Authorization": f"Token {token}"}
        else:
            headers = {"Cookie": f"sessionid={session}"}
        self.socket = websocket_connect(
            server.url.replace("http://", "ws://") + "/ws/",
            additional_headers=headers,
            origin=server.url if session else None,  # browsers send it; automation does not
            open_timeout=WAIT_SECONDS,
        )
        self.frames: list[dict] = []  # every frame received, in order
        self.events: list[dict] = []  # every event, unpacked from "events" frames
        assert self.next_frame()["type"] == "hello"

    def next_frame(self, timeout: float = WAIT_SECONDS) -> dict:
        frame = json.loads(self.socket.recv(timeout=timeout))
        self.frames.append(frame)
        if frame["type"] == "event":
            self.events.append({key: value for key, value in frame.items() if key != "type"})
        elif frame["type"] == "events":
            self.events.extend(frame["events"])
        return frame

    def subscribe(self, groups: list[str]) -> dict:
        self.socket.send(json.dumps({"type": "subscribe", "groups": groups}))
        return self.wait_for(lambda frame: frame["type"] == "subscribed")

    def wait_for(self, condition, timeout: float = WAIT_SECONDS) -> dict:
        """Frames until one meets `condition`; fails naming what came instead."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                frame = self.next_frame(timeout=max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                break
            if condition(frame):
                return frame
        raise AssertionError(f"no such frame within {timeout}s; received {self.frames}")

    def wait_for_event(self, group: str, payload: dict, timeout: float = WAIT_SECONDS) -> None:
        self.wait_for(lambda _: any(self.is_event(e, group, payload) for e in self.events), timeout)

    def got_event(self, group: str, payload: dict) -> bool:
        return any(self.is_event(event, group, payload) for event in self.events)

    @staticmethod
    def is_event(event: dict, group: str, payload: dict) -> bool:
        return event["group"] == group and event["payload"] == payload

    def close_code(self, timeout: float = WAIT_SECONDS) -> int:
        """Read until the server closes the socket; its close code."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                self.next_frame(timeout=max(0.01, deadline - time.monotonic()))
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None
        except TimeoutError:
            pass
        raise AssertionError(f"still open after {timeout}s; received {self.frames}")

    def close(self) -> None:
        self.socket.close()


def publish_now(group: str, event: str, payload: dict, **options) -> None:
    publish(group, event, payload, **options)  # outside a transaction: sent at once


def marker(socket: LiveSocket, number: int) -> None:
    """An event on `cluster`, published after whatever the test published before: once it
    arrived, anything earlier that was going to arrive has (one Redis connection, in order)."""
    publish_now("cluster", "marker", {"marker": number})
    socket.wait_for_event("cluster", {"marker": number})


def admin_browser() -> Client:
    admin = User.objects.create_superuser("portal-admin", password="correct-horse-battery")
    browser = Client()
    browser.force_login(admin)
    return browser


def deactivate_in_the_admin(browser: Client, user: User) -> None:
    """The admin's change form, as an administrator saves it with "Active" unticked."""
    response = browser.post(
        f"/admin/portal/user/{user.pk}/change/",
        {
            "username": user.username,
            "first_name": "",
            "last_name": "",
            "email": "",
            "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
            "groups": list(user.groups.values_list("pk", flat=True)),
            "tenant": "",
            # "is_active" left out: the box is unticked
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    user.refresh_from_db()
    assert not user.is_active


# -- what a socket checks by itself: every subscription, and its token's expiry -----------------


@pytest.mark.django_db(transaction=True)
def test_a_socket_is_closed_when_its_token_expires(announced_changes_server, make_user):
    operator = make_user(Role.OPERATOR)
    token, key = api_token_create(
        user=operator, name="short-lived", expires_at=timezone.now() + timedelta(seconds=2)
    )
    socket = LiveSocket(announced_changes_server, token=key)
    socket.subscribe(["actions"])
    publish_now("actions", "action.updated", {"id": 1})
    socket.wait_for_event("actions", {"id": 1})

    assert socket.close_code() == CREDENTIALS_ENDED
    assert timezone.now() >= token.expires_at


@pytest.mark.django_db(transaction=True)
def test_a_user_deactivated_without_notice_cannot_subscribe_on_an_open_socket(
    announced_changes_server, make_user
):
    """No service announced it (a raw update): the subscription itself checks afresh."""
    operator = make_user(Role.OPERATOR)
    _, key = api_token_create(user=operator, name="automation")
    socket = LiveSocket(announced_changes_server, token=key)
    User.objects.filter(pk=operator.pk).update(is_active=False)

    socket.socket.send(json.dumps({"type": "subscribe", "groups": ["actions", "faults"]}))
    assert socket.close_code() == CREDENTIALS_ENDED
    assert not any(frame["type"] == "subscribed" for frame in socket.frames)


# -- announced changes: the services ask the user's sockets to re-check at once -----------------


@pytest.mark.django_db(transaction=True)
def test_a_revoked_tokens_socket_is_closed_and_receives_nothing_after(
    announced_changes_server, make_user
):
    operator = make_user(Role.OPERATOR)
    token, key = api_token_create(user=operator, name="wall screen")
    socket = LiveSocket(announced_changes_server, token=key)
    assert socket.subscribe(["actions", "cluster"])["groups"] == ["actions", "cluster"]
    publish_now("actions", "action.updated", {"id": 1})
    socket.wait_for_event("actions", {"id": 1})

    owner = APIClient()
    owner.force_authenticate(operator)
    assert owner.delete(f"/api/tokens/{token.pk}/").status_code == 204
    publish_now("actions", "action.updated", {"id": 2})

    assert socket.close_code() == CREDENTIALS_ENDED
    assert not socket.got_event("actions", {"id": 2})


@pytest.mark.django_db(transaction=True)
def test_tokens_deleted_and_the_user_deactivated_in_the_admin_close_their_sockets(
    announced_changes_server, make_user
):
    operator = make_user(Role.OPERATOR)
    _, first_key = api_token_create(user=operator, name="ansible")
    second, second_key = api_token_create(user=operator, name="monitoring")
    following = LiveSocket(announced_changes_server, token=first_key)
    groups = ["actions", "faults", "fabric", "jobs"]
    assert following.subscribe(groups)["groups"] == groups
    idle = LiveSocket(announced_changes_server, token=second_key)  # subscribed to nothing yet
    browser = admin_browser()

    response = browser.post(f"/admin/portal/apitoken/{second.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert idle.close_code() == CREDENTIALS_ENDED

    deactivate_in_the_admin(browser, operator)
    for group in groups:
        publish_now(group, "after.deactivation", {"group": group})
    assert following.close_code() == CREDENTIALS_ENDED
    assert following.events == []


@pytest.mark.django_db(transaction=True)
def test_a_new_role_drops_the_groups_it_may_not_follow_and_keeps_the_socket(
    announced_changes_server, make_user, tenant_a
):
    """A directory account signs in again as a tenant admin: its open socket leaves the
    cluster-wide groups at once and says which; what the new role may follow still arrives."""
    user = make_user(Role.OPERATOR)
    User.objects.filter(pk=user.pk).update(source=AccountSource.DIRECTORY)
    _, key = api_token_create(user=user, name="dashboard")
    socket = LiveSocket(announced_changes_server, token=key)
    groups = ["actions", "faults", "fabric", "jobs", "cluster"]
    assert socket.subscribe(groups)["groups"] == groups

    user_apply_directory_grant(
        user=User.objects.get(pk=user.pk),
        role=Role.TENANT_ADMIN,
        tenant=tenant_a,
        source=AccountSource.DIRECTORY,
    )
    for group in ("actions", "faults", "fabric"):
        publish_now(group, "after.role.change", {"group": group})

    revoked = socket.wait_for(lambda frame: frame["type"] == "revoked")
    assert revoked["groups"] == ["actions", "fabric", "faults"]
    marker(socket, 1)
    assert socket.events == [{"group": "cluster", "event": "marker", "payload": {"marker": 1}}]
    socket.socket.send(json.dumps({"type": "subscribe", "groups": ["actions"]}))
    assert socket.wait_for(lambda frame: frame["type"] == "subscribed")["denied"] == ["actions"]
    socket.close()


def tenant_admin_following_a_node(server, make_user, tenant_a, *, end=None):
    node = Node.objects.create(hostname="gpu001")
    allocation = Allocation.objects.create(
        tenant=tenant_a, start=timezone.now() - timedelta(days=1), end=end
    )
    allocation.nodes.set([node])
    _, key = api_token_create(user=make_user(Role.TENANT_ADMIN, tenant_a), name="tenant board")
    socket = LiveSocket(server, token=key)
    group = f"node.{node.pk}"
    assert socket.subscribe([group, "cluster"])["groups"] == [group, "cluster"]
    publish_now(group, "node.state", {"state": "allocated"})
    socket.wait_for_event(group, {"state": "allocated"})
    return socket, allocation, group


@pytest.mark.django_db(transaction=True)
def test_a_tenant_admin_stops_following_a_node_when_the_allocation_ends(
    announced_changes_server, make_user, tenant_a
):
    socket, allocation, group = tenant_admin_following_a_node(
        announced_changes_server, make_user, tenant_a
    )
    allocation_end(allocation=allocation, ended_by=make_user(Role.OPERATOR))
    drained = {"state": "drained", "reason": "operator: replacing GPU 3, RMA 4411"}
    publish_now(group, "node.state", drained)

    assert socket.wait_for(lambda frame: frame["type"] == "revoked")["groups"] == [group]
    marker(socket, 1)
    assert not socket.got_event(group, drained)
    socket.close()


# -- changes nobody announced: the periodic re-check -----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_raw_deactivation_closes_the_socket_within_the_recheck_interval(
    periodic_server, make_user
):
    operator = make_user(Role.OPERATOR)
    _, key = api_token_create(user=operator, name="automation")
    socket = LiveSocket(periodic_server, token=key)
    socket.subscribe(["actions"])
    User.objects.filter(pk=operator.pk).update(is_active=False)
    changed = time.monotonic()

    assert socket.close_code() == CREDENTIALS_ENDED
    assert time.monotonic() - changed < PERIODIC_SECONDS + 2


@pytest.mark.django_db(transaction=True)
def test_a_user_left_with_no_role_is_closed_with_nothing_permitted(periodic_server, make_user):
    viewer = make_user(Role.VIEWER)
    _, key = api_token_create(user=viewer, name="screen")
    socket = LiveSocket(periodic_server, token=key)
    socket.subscribe(["cluster"])
    viewer.groups.remove(Group.objects.get(name=Role.VIEWER))

    assert socket.close_code() == NOTHING_PERMITTED


@pytest.mark.django_db(transaction=True)
def test_an_allocation_reaching_its_end_stops_the_node_for_its_tenant(
    periodic_server, make_user, tenant_a
):
    socket, allocation, group = tenant_admin_following_a_node(
        periodic_server, make_user, tenant_a, end=timezone.now() + timedelta(seconds=2)
    )
    assert socket.wait_for(lambda frame: frame["type"] == "revoked")["groups"] == [group]
    assert timezone.now() >= allocation.end
    socket.close()


@pytest.mark.django_db(transaction=True)
def test_a_browser_socket_is_closed_once_its_session_ends(periodic_server, make_user):
    operator = make_user(Role.OPERATOR)
    browser = Client()
    browser.force_login(operator)
    socket = LiveSocket(periodic_server, session=browser.cookies["sessionid"].value)
    assert socket.subscribe(["actions"])["groups"] == ["actions"]
    browser.logout()

    assert socket.close_code() == CREDENTIALS_ENDED

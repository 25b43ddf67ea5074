"""A fleet's dashboard stays live (issue 28 item 1): past DASHBOARD_AGGREGATE_ABOVE_NODES the
grid draws a cell per pod or rack, so a node's state event must name the cell that counts it.
A websocket client held open on "cluster" receives the sync's event; moving that cell's counts
by the event's previous and new state gives what the server draws afterwards."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from inventory.models import Node, Pod, Rack
from jobs.sync import sync_node_states
from portal.asgi import application
from portal.models import Role
from portal.node_states import grid_state
from portal.services.accounts import api_token_create
from tests.console.test_dashboard import browser_for

ORIGIN = (b"origin", b"http://127.0.0.1")


def make_fleet():
    for pod_name, racks in {"p1": ["p1-r01", "p1-r02"], "p2": ["p2-r01"]}.items():
        pod = Pod.objects.create(name=pod_name)
        for rack_name in racks:
            Rack.objects.create(name=rack_name, pod=pod)
    places = ["p1-r01", "p1-r01", "p1-r02", "p1-r02", "p2-r01", "p2-r01"]
    for number, rack_name in enumerate(places, start=1):
        rack = Rack.objects.get(name=rack_name)
        Node.objects.create(hostname=f"gpu{number:03d}", pod=rack.pod, rack=rack)


def aggregate_counts(page: str, pod: str, rack: str = "") -> dict[str, int]:
    cell = re.search(
        rf'<a role="listitem" class="aggregate-cell" data-agg-pod="{pod}" '
        rf'data-agg-rack="{rack}".*?</a>', page,
    )
    assert cell, f"no aggregate cell for {pod} {rack}"
    return {state: int(n) for state, n in re.findall(
        r'data-agg-count="(\w+)" data-n="(\d+)"', cell.group(0))}


async def next_node_state(communicator) -> dict:
    while True:
        frame = await communicator.receive_json_from(timeout=5)
        events = frame.get("events", [frame]) if frame.get("type") in ("events", "event") else []
        for event in events:
            if event.get("event") == "node.state":
                return event["payload"]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_node_state_event_moves_the_pod_cell_that_counts_the_node(
    make_user, make_simulator, settings
):
    settings.DASHBOARD_AGGREGATE_ABOVE_NODES = 4  # 6 nodes: drawn as pods
    await sync_to_async(make_fleet)()
    driver = await sync_to_async(make_simulator)(nodes=6)
    await sync_to_async(sync_node_states)(driver=driver)
    browser = await sync_to_async(browser_for)(make_user, Role.OPERATOR)
    before = aggregate_counts((await sync_to_async(browser.get)("/")).content.decode(), "p1")

    operator = await sync_to_async(make_user)(Role.OPERATOR)
    _, key = await sync_to_async(api_token_create)(user=operator, name="ws")
    communicator = WebsocketCommunicator(
        application, "/ws/", headers=[ORIGIN, (b"authorization", f"Token {key}".encode())]
    )
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    await communicator.receive_json_from(timeout=5)  # hello
    await communicator.send_json_to({"type": "subscribe", "groups": ["cluster"]})
    await communicator.receive_json_from(timeout=5)

    await sync_to_async(driver.drain)(["gpu003"], "fan failure")
    await sync_to_async(sync_node_states)(driver=driver)
    payload = await next_node_state(communicator)
    await communicator.disconnect()

    assert (payload["hostname"], payload["pod"], payload["rack"]) == ("gpu003", "p1", "p1-r02")
    # What static/js/cluster.js does with the event: one node out of its old state, into the new.
    moved = dict(before)
    moved[grid_state(payload["previous_state"])] -= 1
    moved[grid_state(payload["state"])] += 1
    after_page = (await sync_to_async(browser.get)("/")).content.decode()
    assert aggregate_counts(after_page, "p1") == moved
    assert moved[grid_state(payload["state"])] == before[grid_state(payload["state"])] + 1
    # The rack level (a pod bigger than the threshold drilled into) is found the same way.
    settings.DASHBOARD_AGGREGATE_ABOVE_NODES = 3
    rack_page = (await sync_to_async(browser.get)("/?pod=p1")).content.decode()
    assert aggregate_counts(rack_page, "p1", "p1-r02")[grid_state(payload["state"])] == 1

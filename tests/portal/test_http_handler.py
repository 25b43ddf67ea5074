"""HTTP through the ASGI application production serves (portal/http_handler.py).

The middleware chain runs as one synchronous call: Django's stock handler hopped between the
event loop and a worker thread at each sync/async boundary of the chain and for each hook of an
async-mode middleware, a dozen hops costing more of the server's time than most API reads.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import requests
from asgiref.sync import SyncToAsync
from asgiref.testing import ApplicationCommunicator

from tests.portal.test_hostile_requests import WebUnitServer

REPO = Path(__file__).resolve().parents[2]
# request_started's receivers, the middleware chain with the view, the response's close.
MOST_THREAD_HOPS_PER_REQUEST = 3


def _get(path: str) -> tuple[dict, bytes, int]:
    """(response start, body, thread hops) of one GET through portal.asgi.application."""
    from portal.asgi import application

    hops = 0
    original = SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        nonlocal hops
        hops += 1
        return await original(self, *args, **kwargs)

    async def exchange():
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": b"", "root_path": "", "headers": [(b"host", b"testserver")],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        communicator = ApplicationCommunicator(application, scope)
        await communicator.send_input({"type": "http.request", "body": b""})
        start = await communicator.receive_output(timeout=10)
        body = b""
        while True:
            message = await communicator.receive_output(timeout=10)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await communicator.wait(timeout=10)
        return start, body

    SyncToAsync.__call__ = counted
    try:
        start, body = asyncio.run(exchange())
    finally:
        SyncToAsync.__call__ = original
    return start, body, hops


@pytest.mark.django_db(transaction=True)
def test_a_request_crosses_to_the_views_thread_at_most_three_times():
    start, body, hops = _get("/healthz")
    assert start["status"] == 200
    assert body == b'{"status": "ok"}'
    assert hops <= MOST_THREAD_HOPS_PER_REQUEST, hops  # Django's own handler: 15 here


@pytest.mark.django_db(transaction=True)
def test_the_sync_chain_still_answers_a_missing_api_path_as_json():
    start, body, _ = _get("/api/no-such-endpoint/")
    assert start["status"] == 404
    assert b"No API endpoint at /api/no-such-endpoint/" in body


@pytest.fixture(scope="module")
def web_server(django_db_setup, django_db_blocker):
    from django.conf import settings

    server = WebUnitServer(settings.DATABASES["default"])
    yield server
    server.stop()


def test_the_deployed_server_streams_a_static_file_whole(web_server):
    # WhiteNoise answers with a FileResponse, which Django's handler sends in chunks.
    expected = (REPO / "static" / "css" / "portal.css").read_bytes()
    response = requests.get(f"{web_server.url}/static/css/portal.css", timeout=10)
    assert response.status_code == 200
    assert response.content == expected


def test_the_deployed_server_runs_views_and_their_errors(web_server):
    session = requests.Session()
    assert session.get(f"{web_server.url}/healthz", timeout=10).json() == {"status": "ok"}
    unauthenticated = session.get(f"{web_server.url}/api/inventory/nodes/", timeout=10)
    assert unauthenticated.status_code in (401, 403)
    assert "credentials" in unauthenticated.json()["detail"].lower()
    login = session.get(f"{web_server.url}/login/", timeout=10)
    assert login.status_code == 200
    assert "csrftoken" in session.cookies  # the CSRF middleware ran on the way out

"""Small helpers several test modules share: free ports, polling, a private redis-server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(predicate, timeout: float, message: str, poll: float = 0.1):
    """Poll until `predicate()` is truthy and return its value; fail naming `message`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


class PrivateRedis:
    """A redis-server of the test's own on a free port, stopped and started again on that port;
    tests stop this one, never the shared Redis.

    No persistence, like a Redis that lost its memory: messages queued when it stops are gone,
    which is the harder case for the outbox (the sweeper must find them).
    """

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            [
                shutil.which("redis-server"),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        try:
            wait_for(self._answers(client), 10, f"redis-server on port {self.port}", poll=0.05)
        finally:
            client.close()

    @staticmethod
    def _answers(client):
        def ping() -> bool:
            try:
                return bool(client.ping())
            except Exception:
                return False

        return ping

    def stop(self) -> None:
        """SIGKILL: the server vanishes at once, as in a crash or a lost host."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def outside_the_browser_loop(task, timeout: float = 120) -> None:
    """Run ORM work (`task`) in a thread of its own and re-raise what it raised: Playwright's
    event loop in the test's thread would make the publish on commit refuse to run
    (async_to_sync inside a running loop)."""
    from django.db import connection

    failures = []

    def run():
        try:
            task()
        except Exception as error:  # surfaced in the test's thread below
            failures.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=timeout)
    assert not failures, failures


def sign_in_page(page, server_url: str, user) -> None:
    """Give a Playwright page `user`'s session on the live server, without the login form."""
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    page.context.add_cookies([{
        "name": settings.SESSION_COOKIE_NAME,
        "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
        "url": server_url,
    }])

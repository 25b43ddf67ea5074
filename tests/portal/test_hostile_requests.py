"""Hostile bodies and URLs against the web server production runs (issue 29, finding 7).

The server is started with the web unit's own ExecStart (deploy/systemd/portal-web.service,
which docker-compose.yml runs too), so these hold for the program that is deployed, not for
Django's test client alone: Twisted under daphne answered a malformed multipart body itself.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import requests

from tests.portal.test_systemd_units import INSTALL_DIR, SERVICES, UNITS, directives

REPO = Path(__file__).resolve().parents[2]
MALFORMED_MULTIPART = {"Content-Type": "multipart/form-data"}  # no boundary: unparseable


class WebUnitServer:
    """The web unit's command, from this checkout, on a free port, against the test database."""

    def __init__(self, database: dict):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        command = shlex.split(directives(UNITS / SERVICES["web"])["ExecStart"][0])
        command = [part.replace(INSTALL_DIR, str(REPO)) for part in command]
        command[0] = sys.executable if Path(command[0]).name == "python" else command[0]
        command[command.index("--port") + 1] = str(self.port)
        log_fd, log_name = tempfile.mkstemp(prefix="portal-web-", suffix=".log")
        self.log_path = Path(log_name)
        self.process = subprocess.Popen(
            command,
            cwd=REPO,
            env={
                **os.environ,
                "DATABASE_URL": f"postgresql://{database['USER']}@{database['HOST']}:"
                f"{database['PORT']}/{database['NAME']}",
                "PYTHONUNBUFFERED": "1",
            },
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        os.close(log_fd)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log()
            try:
                urllib.request.urlopen(f"{self.url}/healthz", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"web server not ready:\n{self.log()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=10)
        self.log_path.unlink()


@pytest.fixture(scope="module")
def web_server(django_db_setup, django_db_blocker):
    from django.conf import settings

    server = WebUnitServer(settings.DATABASES["default"])
    yield server
    server.stop()


@pytest.mark.parametrize("path", ["/healthz", "/api/tenants/", "/login/"])
def test_a_malformed_multipart_body_is_a_json_400_naming_the_body(web_server, path):
    response = requests.post(
        f"{web_server.url}{path}", data=b"garbage", headers=MALFORMED_MULTIPART, timeout=10
    )
    assert response.status_code == 400, (response.status_code, response.text)
    assert response.headers["Content-Type"] == "application/json"
    assert "multipart/form-data body cannot be read" in response.json()["body"][0]


@pytest.mark.parametrize(
    ("path", "body", "content_type"),
    [
        ("/login/", b"username=" + b"x" * 3_000_000, "application/x-www-form-urlencoded"),
        ("/healthz", b'{"a": "' + b"x" * 3_000_000 + b'"}', "application/json"),
        ("/api/tenants/", b'{"a": "' + b"x" * 3_000_000 + b'"}', "application/json"),
    ],
    # Short ids: pytest puts the test's id in PYTEST_CURRENT_TEST, and a 3 MB id made the
    # environment too long to start the next server process (E2BIG).
    ids=["login-form", "healthz-json", "api-json"],
)
def test_an_oversized_body_is_a_json_413_on_every_path(web_server, path, body, content_type):
    response = requests.post(
        f"{web_server.url}{path}", data=body, headers={"Content-Type": content_type}, timeout=10
    )
    assert response.status_code == 413, (response.status_code, response.text[:300])
    assert "bytes this portal reads" in response.json()["detail"]


def test_a_token_in_the_url_is_kept_out_of_the_access_log(web_server):
    secret = "0123456789abcdef-in-the-url"
    requests.get(f"{web_server.url}/api/me/?token={secret}&api_key={secret}&page=2", timeout=10)
    time.sleep(0.3)
    lines = [line for line in web_server.log().splitlines() if "/api/me/" in line]
    assert lines, web_server.log()[-2000:]
    assert secret not in web_server.log()
    assert "/api/me/?token=[redacted]&api_key=[redacted]&page=2" in lines[-1]

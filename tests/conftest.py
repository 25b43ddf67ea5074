"""Fixtures shared by every app's tests: users per role, API clients, real Redis, real workers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from portal.models import Role, Tenant
from portal.services.accounts import api_token_create, user_create

# Tests that share the one Slurm controller, or stop a real service, run in one xdist worker,
# one after another (`make test` runs three workers: tests/xdist_env.py).
SERIAL_MARKERS = ("slurm", "chaos")


def pytest_itemcollected(item):
    # At collection, before any pytest_collection_modifyitems: xdist reads the groups there.
    if any(item.get_closest_marker(name) for name in SERIAL_MARKERS):
        item.add_marker(pytest.mark.xdist_group("shared-services"))


@pytest.fixture(scope="session", autouse=True)
def clean_redis_database():
    """Tests own the Redis database in REDIS_URL: start from an empty one."""
    url = os.environ.get("REDIS_URL")
    if url:
        import redis

        client = redis.Redis.from_url(url)
        client.flushdb()
        client.close()


@pytest.fixture(scope="session")
def database_after_migrations(django_db_setup, django_db_blocker):
    """Facts about the freshly migrated test database, read before any test can flush it."""
    from django.contrib.auth.models import Group

    with django_db_blocker.unblock():
        return {"groups": set(Group.objects.values_list("name", flat=True))}


@pytest.fixture(scope="session", autouse=True)
def end_stray_database_sessions(django_db_setup, django_db_blocker):
    """Threads of websocket and browser tests leave connections open; end them on teardown so
    the test database can be dropped."""
    yield
    from django.db import connection

    test_name = connection.settings_dict.get("TEST", {}).get("NAME")
    if connection.vendor != "postgresql" or connection.settings_dict["NAME"] != test_name:
        return  # no test database was set up in this session
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A drain or resume the test queued may be running on this process's Action runner
    (portal/services/actions.py): it finishes, and the runner's connections close, before the
    test's fixtures end (a transactional test's database is emptied then; a late write would
    land in the next test's)."""
    yield
    from portal.services.actions import stop_action_runner

    stop_action_runner()


@pytest.fixture(autouse=True)
def full_api_throttle_budgets():
    """Throttle budgets are per client address and every test client is 127.0.0.1 (or has no
    address: channels' WebsocketCommunicator): each test starts with full budgets, as a fresh
    client would (portal/throttling.py)."""
    from portal.throttling import UNKNOWN_ADDRESS, forget_client_address

    forget_client_address("127.0.0.1")
    forget_client_address(UNKNOWN_ADDRESS)


@pytest.fixture(autouse=True)
def fresh_readiness():
    """The dashboard's and /metrics' readiness is kept a few seconds per process
    (portal/health.py): each test sees its own world's, not an earlier test's."""
    from portal.health import forget_recent_readiness

    forget_recent_readiness()


@pytest.fixture(autouse=True)
def fast_password_hashing(request, settings):
    """PBKDF2 at production strength costs a second per user on this machine; tests need none.

    Browser tests log in to a separate server process that verifies with the production
    hashers, so their users keep them.
    """
    if request.node.get_closest_marker("browser"):
        return
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def private_redis():
    """A redis-server of the test's own (tests/support.py) that it may stop and start; the
    shared Redis stays up."""
    from tests.support import PrivateRedis

    server = PrivateRedis()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def tenant_a(db) -> Tenant:
    return Tenant.objects.create(
        name="Tenant A", slug="tenant-a", slurm_account="tenant-a", evpn_vni=10200
    )


@pytest.fixture
def tenant_b(db) -> Tenant:
    return Tenant.objects.create(
        name="Tenant B", slug="tenant-b", slurm_account="tenant-b", evpn_vni=10300
    )


@pytest.fixture
def make_user(db, tenant_a):
    """make_user(role, tenant=None, username=None) -> a user with that role and a password."""
    counter = {"n": 0}

    def make(role: str, tenant: Tenant | None = None, username: str | None = None):
        counter["n"] += 1
        if role == Role.TENANT_ADMIN and tenant is None:
            tenant = tenant_a
        return user_create(
            username=username or f"{role}-{counter['n']}",
            role=role,
            tenant=tenant,
            password="correct-horse-battery",
        )

    return make


@pytest.fixture
def api_as(make_user):
    """api_as(role) -> an APIClient authenticated with a real hashed API token of that role."""

    def client_for(role: str, tenant: Tenant | None = None) -> APIClient:
        user = make_user(role, tenant=tenant)
        _, key = api_token_create(user=user, name="tests")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        client.user = user
        return client

    return client_for


@pytest.fixture
def operator_api(api_as) -> APIClient:
    return api_as(Role.OPERATOR)


class CeleryWorkerProcess:
    """A real `celery worker` process against the test database and the test Redis."""

    QUEUES = "default,actions,periodic"

    def __init__(self, database_name: str, extra_env: dict[str, str] | None = None):
        self.database_name = database_name
        self.extra_env = extra_env or {}
        self.process = None
        self.log_path = None

    def start(self, name: str = "worker1") -> None:
        import subprocess
        import sys
        import tempfile
        from pathlib import Path

        from django.conf import settings

        database = settings.DATABASES["default"]
        env = {
            **os.environ,
            "DATABASE_URL": (
                f"postgresql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
                f"{self.database_name}"
            ),
            "ACTION_HANDLER_MODULES": "tests.portal.action_handlers",
            "ACTION_RETRY_BASE_SECONDS": "0.2",
            "ACTION_RETRY_MAX_SECONDS": "1",
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }
        log_fd, log_name = tempfile.mkstemp(prefix=f"celery-{name}-", suffix=".log")
        self.log_path = Path(log_name)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "portal",
                "worker",
                "-Q",
                self.QUEUES,
                "--pool",
                "prefork",
                "--concurrency",
                "1",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"{name}@%h",
                "--loglevel",
                "INFO",
            ],
            env=env,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        os.close(log_fd)  # the child has its own copy
        self.wait_until_ready()

    def wait_until_ready(self, timeout: float = 90) -> None:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited early:\n{self.log()}")
            if " ready." in self.log():
                return
            time.sleep(0.1)
        raise RuntimeError(f"celery worker not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def kill(self) -> None:
        """SIGKILL the whole process group: no chance to ack, finish or clean up."""
        import signal

        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        import signal

        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except Exception:
                self.kill()


@pytest.fixture
def celery_worker_process(transactional_db, settings):
    """Start a real worker for the test and stop it afterwards; needs REDIS_URL and PostgreSQL."""
    if not os.environ.get("REDIS_URL") or settings.DATABASES["default"]["ENGINE"].endswith(
        "sqlite3"
    ):
        pytest.fail("worker tests need DATABASE_URL (PostgreSQL) and REDIS_URL: run `make test`")
    from portal.celery import app

    app.control.purge()  # messages left by earlier tests refer to rows that no longer exist
    # The test's Actions are the worker's to run, drains included: a test configures its worker
    # (a Slurm driver, a cluster) as this process is not, so this process runs none of them
    # where it queued them (tests/portal/test_actions_runner.py covers that).
    settings.ACTION_RUNNER_THREADS = 0
    worker = CeleryWorkerProcess(settings.DATABASES["default"]["NAME"])
    yield worker
    worker.stop()


class PortalServerProcess:
    """The real ASGI server (daphne via `manage.py rundemo`) against the test database."""

    def __init__(self, database_name: str, extra_env: dict[str, str] | None = None):
        self.database_name = database_name
        self.extra_env = extra_env or {}
        self.process = None
        self.port = None
        self.log_path = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        import socket
        import subprocess
        import sys
        import tempfile
        from pathlib import Path

        from django.conf import settings

        if self.port is None:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        database = settings.DATABASES["default"]
        env = {
            **os.environ,
            "DATABASE_URL": (
                f"postgresql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
                f"{self.database_name}"
            ),
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }
        log_fd, log_name = tempfile.mkstemp(prefix="portal-server-", suffix=".log")
        self.log_path = Path(log_name)
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "rundemo", "--port", str(self.port)],
            cwd=Path(__file__).resolve().parents[1],
            env=env,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        os.close(log_fd)
        self.wait_until_ready()

    def wait_until_ready(self, timeout: float = 60) -> None:
        import time
        import urllib.request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"portal server exited:\n{self.log()}")
            try:
                urllib.request.urlopen(f"{self.url}/healthz", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"portal server not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def stop(self) -> None:
        import signal

        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except Exception:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


@pytest.fixture
def portal_server(celery_worker_process, settings):
    """A running portal (HTTP + websockets) with a real worker behind it."""
    celery_worker_process.start()
    server = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    server.start()
    yield server
    server.stop()


@pytest.fixture
def portal_server_without_worker(settings):
    """A running portal (HTTP + websockets) alone, for what needs no Action run."""
    server = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    server.start()
    yield server
    server.stop()


ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser_page(monkeypatch):
    """A Playwright page in Debian's Chromium; screenshots go to test-artifacts/."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread, which makes Django refuse ORM
    # calls; they are still plain blocking calls here, so the guard does not apply.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "1")

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_FLAGS
        )
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        yield page
        browser.close()

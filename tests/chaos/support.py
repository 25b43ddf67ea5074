"""Helpers of the chaos tests: faults injected into real parts (a private Redis the test stops,
workers it SIGKILLs, the portal's PostgreSQL sessions it terminates, the Slurm controller it
stops).

Every test here starts its own processes (web, worker, beat) with the environment of the fault
it needs and stops them by PID; the shared Redis and PostgreSQL are never stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from portal.models import Action, ActionAttempt
from tests.conftest import CeleryWorkerProcess, PortalServerProcess

REPO_ROOT = Path(__file__).resolve().parents[2]

# Beat schedules everything; only the sweeper matters here, the rest is pushed out of the way.
QUIET_BEATS = {
    "JOBS_NODE_SYNC_INTERVAL": "3600",
    "JOBS_LIVE_SYNC_INTERVAL": "3600",
    "JOBS_ACCOUNTING_INTERVAL": "3600",
    "FABRIC_POLL_INTERVAL": "3600",
    "FABRIC_LLDP_INTERVAL": "3600",
}


class CeleryBeatProcess:
    """A real `celery beat`: it sends the sweeper every ACTION_SWEEP_INTERVAL seconds."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.process: subprocess.Popen | None = None
        self.directory = Path(tempfile.mkdtemp(prefix="celery-beat-"))

    def start(self) -> None:
        log = (self.directory / "beat.log").open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "portal",
                "beat",
                "--schedule",
                str(self.directory / "schedule"),
                "--loglevel",
                "INFO",
            ],
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **QUIET_BEATS, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)


class RequestingProcess:
    """A process of the portal that queues drains and, as a web server does, runs them itself
    right after their commit (portal/services/actions.py, _ActionRunner); SIGKILLed by tests."""

    SCRIPT = (
        "import sys, time, django; django.setup()\n"
        "from inventory.models import Node\n"
        "from jobs.services import request_drain\n"
        "for line in sys.stdin:\n"
        "    name, reason = line.rstrip('\\n').split('\\t')\n"
        "    action, _ = request_drain(nodes=[Node.objects.get(hostname=name)], reason=reason)\n"
        "    print(action.pk, flush=True)\n"
        "time.sleep(3600)\n"
    )

    def __init__(self, env: dict[str, str]):
        self.log_path = Path(tempfile.mkstemp(prefix="requester-", suffix=".log")[1])
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", self.SCRIPT],
                cwd=REPO_ROOT,
                env={**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings",
                     "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "INFO", **env},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
            )

    def drain(self, node: str, reason: str) -> int:
        """Queue a drain of `node` there; its Action's id once request_drain() returned."""
        self.process.stdin.write(f"{node}\t{reason}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the requesting process ended:\n{self.log()}")
        return int(answer)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@dataclass
class Stack:
    """The deployment's processes for one test: web (daphne), worker, beat."""

    database_name: str
    env: dict[str, str]
    workers: list[CeleryWorkerProcess] = field(default_factory=list)
    server: PortalServerProcess | None = None
    beat: CeleryBeatProcess | None = None
    requesters: list[RequestingProcess] = field(default_factory=list)

    def start_requester(self) -> RequestingProcess:
        from django.conf import settings

        database = settings.DATABASES["default"]
        requester = RequestingProcess({
            "DATABASE_URL": (f"postgresql://{database['USER']}@{database['HOST']}:"
                             f"{database['PORT']}/{self.database_name}"),
            **self.env,
        })
        self.requesters.append(requester)
        return requester

    def start_worker(self, name: str = "worker1") -> CeleryWorkerProcess:
        worker = CeleryWorkerProcess(self.database_name, extra_env=dict(self.env))
        worker.start(name)
        self.workers.append(worker)
        return worker

    def start_server(self, monkeypatch) -> PortalServerProcess:
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)  # PortalServerProcess passes os.environ on
        self.server = PortalServerProcess(self.database_name)
        self.server.start()
        return self.server

    def start_beat(self) -> CeleryBeatProcess:
        from django.conf import settings

        database = settings.DATABASES["default"]
        self.beat = CeleryBeatProcess(
            {
                "DATABASE_URL": (
                    f"postgresql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
                    f"{self.database_name}"
                ),
                **self.env,
            }
        )
        self.beat.start()
        return self.beat

    def stop(self) -> None:
        for requester in self.requesters:
            requester.kill()
        if self.beat:
            self.beat.stop()
        if self.server:
            self.server.stop()
        for worker in self.workers:
            worker.stop()


@dataclass
class Reply:
    status: int
    body: dict | str
    seconds: float


def http(
    method: str,
    url: str,
    token: str | None = None,
    payload=None,
    timeout: float = 30,
    session_key: str | None = None,
) -> Reply:
    """One request as a client would make it (token or browser session); the time includes
    connecting."""
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if session_key:
        request.add_header("Cookie", f"sessionid={session_key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Token {token}")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    seconds = time.monotonic() - started
    try:
        body = json.loads(raw)
    except ValueError:
        body = raw.decode(errors="replace")
    return Reply(status, body, seconds)


def session_cookie_for(user) -> str:
    """A logged-in browser session, as the login form would have made it."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile: p99 of 20 samples is the largest."""
    import math

    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


@dataclass
class Tally:
    """One line of the chaos table: fault, Actions sent, done, lost, done twice."""

    fault: str
    sent: int
    done: int
    lost: int
    done_twice: int

    def line(self) -> str:
        return (
            f"CHAOS | {self.fault} | sent {self.sent} | done {self.done} | lost {self.lost} | "
            f"done twice {self.done_twice}"
        )


def tally(fault: str, action_ids: list[int]) -> Tally:
    """Done: succeeded. Lost: not succeeded. Done twice: more than one attempt that got as far as
    a recorded success (a handler run whose result was kept), or more than one claim that was
    not abandoned by a dead worker."""
    actions = {action.pk: action for action in Action.objects.filter(pk__in=action_ids)}
    done = sum(1 for pk in action_ids if pk in actions and actions[pk].status == "succeeded")
    twice = 0
    for pk in action_ids:
        outcomes = list(
            ActionAttempt.objects.filter(action_id=pk).values_list("outcome", flat=True)
        )
        if outcomes.count(ActionAttempt.Outcome.SUCCEEDED) > 1:
            twice += 1
    result = Tally(fault, len(action_ids), done, len(action_ids) - done, twice)
    print(result.line())
    return result

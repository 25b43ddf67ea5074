"""The production shape, without a Docker engine: migrate, web, worker and beat started exactly
as docker-compose.yml's commands say, with its environment (the service hosts `postgres` and
`redis` mapped to this machine's test database and a test Redis database, container paths to a
scratch directory) and DEPLOYMENT=production, driving the real Slurm test cluster through the
CLI driver and the SONiC emulator over real SSH.

It proves what an administrator's deployment would do: the switches are polled over SSH, a
drain sent through the API reaches slurmctld, and /readyz (the web's health check) turns 503
naming Slurm when slurmctld stops. The commands and the environment are read from the compose
file with PyYAML, so this test follows the file.

Needs root, MariaDB, PostgreSQL and Redis, like `make test`.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from inventory.models import Node
from portal.models import Role
from portal.services.accounts import api_token_create
from tests.chaos.support import http
from tests.deploy.compose import (
    PRODUCTION,
    REPO_ROOT,
    TEST_PACING,
    command_argv,
    dotenv_variables,
    healthcheck_argv,
    load_compose,
    service_environment,
    with_loopback_services,
)
from tests.jobs import slurm_cluster
from tests.jobs.slurm_fixtures import sinfo_state_and_reason
from tests.support import free_port, wait_for

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.worker,
    pytest.mark.emulator,
    pytest.mark.django_db(transaction=True),
]

CONTAINER_ROOT = "/app/"
SERVICES = ("web", "worker", "beat")


def host_path(value: str, scratch: Path) -> str:
    if value.startswith(CONTAINER_ROOT):
        return str(scratch / value.removeprefix("/"))
    return value


class ComposeProcess:
    """One service's command, run as the container would run it; stopped by its group's PID."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logs: Path):
        self.name, self.argv, self.env = name, argv, env
        self.log_path = logs / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> ComposeProcess:
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                self.argv,
                cwd=REPO_ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if not self.alive():
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def production_environment(service: dict, real_slurm, fabric, scratch: Path) -> dict[str, str]:
    """The environment compose gives `service`, mapped onto this machine."""
    environment = service_environment(service, dotenv_variables())
    environment = {name: host_path(value, scratch) for name, value in environment.items()}
    environment.update(
        {
            **with_loopback_services(environment),
            **PRODUCTION,
            # The mounted secrets and slurm.conf: here, the test cluster's and the emulator's.
            "SLURM_CONF": real_slurm.conf,
            **fabric.settings,
            **TEST_PACING,
        }
    )
    return {
        # What a container has besides its environment: a PATH with the image's programs.
        "PATH": f"{REPO_ROOT / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch),
        "LANG": "C.UTF-8",
        "HOSTNAME": socket.gethostname(),
        "PYTHONUNBUFFERED": "1",
        **environment,
    }


def service_argv(service: dict, scratch: Path, web_port: int) -> list[str]:
    return [host_path(arg, scratch) for arg in command_argv(service, web_port)]


def healthcheck(service: dict, env: dict[str, str], web_port: int) -> subprocess.CompletedProcess:
    """The service's compose health check, run in its environment."""
    return subprocess.run(
        healthcheck_argv(service, web_port),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_compose_services_drain_through_real_slurm_and_readiness_names_a_stopped_controller(
    real_slurm, emulated_switches, make_user, tmp_path
):
    compose = load_compose()
    scratch = tmp_path / "container"
    (scratch / "app" / "var").mkdir(parents=True)
    services = compose["services"]
    envs = {
        name: production_environment(services[name], real_slurm, emulated_switches, scratch)
        for name in ("migrate", *SERVICES)
    }
    node = real_slurm.node_names()[-1]
    Node.objects.bulk_create([Node(hostname=name) for name in real_slurm.node_names()])
    _, token = api_token_create(user=make_user(Role.OPERATOR), name="production-shape")
    from portal.celery import app

    app.control.purge()  # the test Redis database may hold an earlier test's messages
    web_port = free_port()

    migrate = subprocess.run(
        service_argv(services["migrate"], scratch, web_port),
        cwd=REPO_ROOT,
        env=envs["migrate"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr

    processes = {
        name: ComposeProcess(
            name, service_argv(services[name], scratch, web_port), envs[name], tmp_path
        )
        for name in SERVICES
    }
    web_url = f"http://127.0.0.1:{web_port}"
    try:
        for process in processes.values():
            process.start()

        def serving() -> bool:
            for process in processes.values():
                assert process.alive(), f"{process.name} exited:\n{process.log()}"
            try:
                return http("GET", web_url + "/healthz", timeout=2).status == 200
            except OSError:
                return False

        wait_for(serving, 60, "daphne to serve /healthz")
        wait_for(lambda: " ready." in processes["worker"].log(), 60, "the worker to be ready")

        # The beat-scheduled poll reaches both switches over SSH: readiness says the fabric
        # answers (never-polled switches would only be "waiting" right after start).
        def fabric_ok():
            reply = http("GET", web_url + "/readyz", timeout=10)
            return reply if reply.body["checks"].get("fabric") == "ok" else None

        try:
            ready = wait_for(fabric_ok, 30, "the switches' first poll over SSH")
        except AssertionError:
            pytest.fail(f"{http('GET', web_url + '/readyz').body}\n{processes['worker'].log()}")
        assert ready.status == 200, ready.body
        assert ready.body["checks"]["slurm"] == "ok"
        for name in ("web", "worker"):
            check = healthcheck(services[name], envs[name], web_port)
            assert check.returncode == 0, f"{name} health check: {check.stdout}{check.stderr}"

        # A drain through the API, with a token, reaches slurmctld through the worker's scontrol.
        reason = f"production shape {secrets.token_hex(3)}"
        reply = http(
            "POST",
            web_url + "/api/jobs/nodes/drain",
            token,
            {"hostlist": node, "reason": reason},
        )
        assert reply.status == 202, reply.body
        wait_for(
            lambda: sinfo_state_and_reason(real_slurm, node) == ("drain", reason),
            30,
            f"slurmctld to show {node} drained with the API's reason",
        )

        # slurmctld stops: /readyz (the web's health check) says so within its short timeout.
        slurm_cluster.stop_controller()
        try:
            down = http("GET", web_url + "/readyz", timeout=15)
            assert down.status == 503, down.body
            assert "slurm" in down.body["down"], down.body
            assert down.body["checks"]["slurm"].startswith("slurm controller unreachable")
            assert down.seconds < 6, down.seconds
            assert healthcheck(services["web"], envs["web"], web_port).returncode != 0
            worker_check = healthcheck(services["worker"], envs["worker"], web_port)
            assert worker_check.returncode != 0, worker_check.stdout + worker_check.stderr
            assert "slurm: slurm controller unreachable" in worker_check.stderr
        finally:
            slurm_cluster.start_controller()
        wait_for(
            lambda: http("GET", web_url + "/readyz", timeout=15).status == 200,
            30,
            "readiness once slurmctld is back",
        )
    finally:
        for process in processes.values():
            process.stop()
        if slurm_cluster.controller_running():
            real_slurm.restore_nodes([node])

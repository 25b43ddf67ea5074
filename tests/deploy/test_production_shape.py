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

import json
import os
import re
import secrets
import signal
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import yaml

from fabric.drivers.emulated import specs_from_inventory
from inventory.models import Node, Switch
from portal.models import Role
from portal.services.accounts import api_token_create
from tests.chaos.support import QUIET_BEATS, http
from tests.fabric.driver_contract import EMULATOR_LOGIN, EmulatorThread, write_credentials
from tests.jobs import slurm_cluster
from tests.support import free_port, wait_for

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.worker,
    pytest.mark.emulator,
    pytest.mark.django_db(transaction=True),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
ENV_EXAMPLE = REPO_ROOT / ".env.example"
CONTAINER_ROOT = "/app/"
SERVICES = ("web", "worker", "beat")
# What the production shape must drive; if the compose file names these, it must agree.
PRODUCTION = {"DEPLOYMENT": "production", "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver"}
SWITCHES = ("spine01", "spine02")
POLL_SECONDS = 2

# --- reading docker-compose.yml as `docker compose` would ----------------------------------------

_VARIABLE = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_]\w*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|\$(?P<bare>[A-Za-z_]\w*)"
)


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's interpolation: $$, ${X}, ${X:-default}, ${X-default}, ${X:?error}, ${X?error}."""

    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("name") or match.group("bare")
        op, arg = match.group("op"), match.group("arg") or ""
        current = variables.get(name)
        if op in (":-", "-"):
            unset = not current if op == ":-" else current is None
            return arg if unset else current
        if op in (":?", "?") and (current is None or (op == ":?" and not current)):
            raise AssertionError(f"docker-compose.yml requires {name} ({arg}): give the test one")
        return current or ""

    return _VARIABLE.sub(replace, str(value))


def read_dotenv(path: Path) -> dict[str, str]:
    values = {}
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                name, _, value = line.removeprefix("export ").partition("=")
                values[name.strip()] = value.strip().strip("'\"")
    return values


def service_environment(service: dict, variables: dict[str, str]) -> dict[str, str]:
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.partition("=")[::2] for item in environment)
    return {name: interpolate(value, variables) for name, value in environment.items()}


# --- mapping the compose network onto this machine --------------------------------------------


def loopback_database_url(compose_url: str) -> str:
    """postgres:5432/portal -> the test database on 127.0.0.1 (pytest-django's test_* copy)."""
    from django.conf import settings

    assert urlsplit(compose_url).hostname == "postgres", compose_url
    database = settings.DATABASES["default"]
    login = database["USER"] + (f":{database['PASSWORD']}" if database["PASSWORD"] else "")
    return f"postgresql://{login}@{database['HOST']}:{database['PORT']}/{database['NAME']}"


def loopback_redis_url(compose_url: str) -> str:
    """redis:6379/0 -> the test run's Redis database (never another session's)."""
    assert urlsplit(compose_url).hostname == "redis", compose_url
    test_redis = urlsplit(os.environ["REDIS_URL"])
    return urlunsplit(test_redis._replace(path=test_redis.path or "/0"))


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


# --- the parts the deployment drives -----------------------------------------------------------


@pytest.fixture(scope="module")
def real_slurm():
    cluster = slurm_cluster.acquire_test_cluster()
    yield cluster
    slurm_cluster.release_test_cluster()


@pytest.fixture
def emulated_switches(transactional_db, tmp_path):
    """The inventory's switches served by the SONiC emulator over SSH on loopback, and the
    secrets a site mounts for them: a credentials store and known_hosts (no trust on first
    use)."""
    Switch.objects.bulk_create(
        [
            Switch(hostname=name, role=Switch.Role.SPINE, credentials_ref="sonic/admin")
            for name in SWITCHES
        ]
    )
    keys = tmp_path / "emulator-keys"
    keys.mkdir()
    fabric = EmulatorThread(specs_from_inventory(), keys)
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    known_hosts = secrets_dir / "known_hosts"
    known_hosts.write_text(fabric.known_hosts())
    credentials = write_credentials(
        secrets_dir / "fabric-credentials.json", {"sonic/admin": EMULATOR_LOGIN}
    )
    fabric.settings = {
        "FABRIC_DRIVER": "fabric.drivers.ssh.SonicSshDriver",
        "FABRIC_SWITCH_ENDPOINTS": json.dumps(
            {name: f"127.0.0.1:{fabric.port_of(name)}" for name in SWITCHES}
        ),
        "FABRIC_CREDENTIALS_FILE": str(credentials),
        "FABRIC_KNOWN_HOSTS_FILE": str(known_hosts),
    }
    yield fabric
    fabric.stop()


def production_environment(service: dict, real_slurm, fabric, scratch: Path) -> dict[str, str]:
    """The environment compose gives `service`, mapped onto this machine."""
    dotenv = {
        **read_dotenv(ENV_EXAMPLE),  # placeholders of whatever else the file requires
        "POSTGRES_PASSWORD": "not-used-the-test-database-has-its-own",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CSRF_TRUSTED_ORIGINS": "http://127.0.0.1",
    }
    environment = service_environment(service, dotenv)
    for name, value in PRODUCTION.items():
        if name in environment:
            assert environment[name] == value, f"docker-compose.yml sets {name}={environment[name]}"
    environment = {name: host_path(value, scratch) for name, value in environment.items()}
    environment.update(
        {
            "DATABASE_URL": loopback_database_url(environment["DATABASE_URL"]),
            "REDIS_URL": loopback_redis_url(environment["REDIS_URL"]),
            **PRODUCTION,
            # The mounted secrets and slurm.conf: here, the test cluster's and the emulator's.
            "SLURM_CONF": real_slurm.conf,
            **fabric.settings,
            # Test pacing: poll the switches every 2 s, the other periodic syncs out of the way,
            # and a Slurm command that gives up after 5 s.
            **QUIET_BEATS,
            "FABRIC_POLL_INTERVAL": str(POLL_SECONDS),
            # Stale after 10 missed polls, not 3: a loaded test machine may delay one.
            "FABRIC_READINESS_STALE_SECONDS": str(10 * POLL_SECONDS),
            "SLURM_COMMAND_TIMEOUT": "5",
            "FABRIC_SSH_CONNECT_TIMEOUT": "3",
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


def service_argv(service: dict, env: dict[str, str], scratch: Path, web_port: int) -> list[str]:
    argv = [host_path(interpolate(arg, env), scratch) for arg in service["command"]]
    if "--port" in argv:  # the published port 8000 is someone else's here
        argv[argv.index("--port") + 1] = str(web_port)
    return argv


def healthcheck(service: dict, env: dict[str, str], web_port: int) -> subprocess.CompletedProcess:
    """The service's compose health check, run in its environment (CMD-SHELL through sh)."""
    kind, *test = service["healthcheck"]["test"]
    test = [interpolate(part, {}).replace(":8000/", f":{web_port}/") for part in test]
    argv = ["/bin/sh", "-c", test[0]] if kind == "CMD-SHELL" else test
    return subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=30)


def sinfo_state_and_reason(real_slurm, name: str) -> tuple[str, str]:
    out = real_slurm.run("sinfo", "-h", "-N", "-n", name, "-o", "%t|%E").stdout
    state, _, reason = out.strip().splitlines()[0].partition("|")
    return state, reason


def test_compose_services_drain_through_real_slurm_and_readiness_names_a_stopped_controller(
    real_slurm, emulated_switches, make_user, tmp_path
):
    compose = yaml.safe_load(COMPOSE_FILE.read_text())
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
        service_argv(services["migrate"], envs["migrate"], scratch, web_port),
        cwd=REPO_ROOT,
        env=envs["migrate"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr

    processes = {
        name: ComposeProcess(
            name, service_argv(services[name], envs[name], scratch, web_port), envs[name], tmp_path
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

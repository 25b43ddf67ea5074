"""The production shape from the project's image: docker-compose.yml's munge, migrate, web,
worker and beat run as containers of the image `make image` builds (scripts/image-build, with
Docker or podman; on this machine kind Debian's podman, installed if missing, and a base made
from Debian's packages), driving the real Slurm test cluster and the SONiC emulator over SSH.

Each container gets what compose would give it, read from docker-compose.yml: the image's
entrypoint with the service's command, its environment, slurm.conf and the named volumes
mounted, its secrets at /run/secrets. This machine stands in for compose's network: host
networking, loopback addresses, the test database and Redis (tests/deploy/compose.py).

It proves that the image serves: the munge service's socket authenticates Slurm's client tools
as the image's user, a token's drain reaches slurmctld, every compose health check passes inside
its container and the web's and worker's fail when slurmctld stops; that every process in it runs
as uid 10001; and that no secret the deployment mounts is in the image.

The first run builds the image (minutes, deploy/README.md "The image"); later runs find it in
the engine's layer cache (seconds). Needs root, MariaDB, PostgreSQL and Redis, like `make test`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from inventory.models import Node
from portal.models import Role
from portal.services.accounts import api_token_create
from tests.chaos.support import http
from tests.deploy.compose import (
    PORTAL_SERVICES,
    REPO_ROOT,
    TEST_PACING,
    command_argv,
    dotenv_variables,
    healthcheck_argv,
    interpolate,
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
    # A first run builds the image: installing podman, making the base, pip (2-3 minutes here).
    pytest.mark.timeout(1200),
]

IMAGE_BUILD = REPO_ROOT / "scripts" / "image-build"
BUILD_TIMEOUT = 900
# The image's user (Dockerfile); the secrets a site mounts must be readable by it alone.
PORTAL_UID = 10001
PORTAL_USER = "portal"
SERVICES = ("munge", *PORTAL_SERVICES)


@dataclass
class Engine:
    """Docker or podman, as scripts/image-build chose it, and the image it built."""

    command: str
    image: str
    run_options: list[str]
    build_seconds: int
    size_bytes: int
    containers: list[str] = field(default_factory=list)

    def __call__(self, *args: str, timeout: float = 120, check: bool = True):
        result = subprocess.run(
            [self.command, *args], capture_output=True, text=True, timeout=timeout
        )
        if check:
            assert result.returncode == 0, f"{self.command} {args}: {result.stderr[-4000:]}"
        return result

    def logs(self, name: str) -> str:
        result = self("logs", name, check=False)
        return (result.stdout + result.stderr)[-4000:]

    def remove_containers(self) -> None:
        if self.containers:
            self("rm", "--force", *self.containers, check=False, timeout=120)


@pytest.fixture(scope="module")
def engine():
    """The image, built (or found in the engine's cache) by scripts/image-build."""
    result = subprocess.run([IMAGE_BUILD], capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert result.returncode == 0, f"scripts/image-build failed:\n{result.stderr[-6000:]}"
    built = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"image {built['image']}: {built['size_bytes'] / 1e6:.0f} MB, {built['seconds']} s")
    return Engine(
        command=built["engine"],
        image=built["image_id"],
        run_options=built["run_options"],
        build_seconds=built["seconds"],
        size_bytes=built["size_bytes"],
    )


@pytest.fixture(scope="module")
def portal_is_a_slurm_administrator(real_slurm):
    """What a site grants the image's user (deploy/README.md): draining is for Slurm
    administrators, and slurmdbd knows a user by the name its host gives the uid."""
    result = subprocess.run(["getent", "passwd", str(PORTAL_UID)], capture_output=True, text=True)
    if result.returncode != 0:
        login = ["--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin"]
        subprocess.run(
            ["useradd", "--system", "--uid", str(PORTAL_UID), *login, PORTAL_USER],
            check=True,
            capture_output=True,  # its warning that 10001 is above the system uids
        )
        name = PORTAL_USER
    else:
        name = result.stdout.split(":")[0]
    cluster = real_slurm.info["cluster"]
    user = [name, "account=default", f"cluster={cluster}", "adminlevel=Admin"]
    added = real_slurm.run("sacctmgr", "-i", "add", "user", *user, check=False)
    assert added.returncode == 0 or "Nothing new added" in added.stdout + added.stderr, added
    real_slurm.run("sacctmgr", "-i", "modify", "user", name, "set", "adminlevel=Admin", check=False)
    return name


def owned_by_the_portal(path: Path, mode: int = 0o400) -> Path:
    os.chown(path, PORTAL_UID, PORTAL_UID)
    path.chmod(mode)
    return path


def container_options(
    service: dict, compose: dict, variables: dict[str, str], volumes: dict[str, Path]
) -> list[str]:
    """The service's mounts as compose makes them: host paths and named volumes (here, a
    directory each), and each secret read-only at /run/secrets/<name>."""
    options = []
    for volume in service.get("volumes", []):
        source, target, *mode = interpolate(volume, variables).split(":")
        if not source.startswith("/"):
            source = str(volumes[source])
        options += ["--volume", ":".join([source, target, *mode])]
    for name in service.get("secrets", []):
        source = interpolate(compose["secrets"][name]["file"], variables)
        options += ["--volume", f"{source}:/run/secrets/{name}:ro"]
    return options


def exec_healthcheck(engine: Engine, name: str, service: dict, web_port: int):
    return engine("exec", name, *healthcheck_argv(service, web_port), check=False, timeout=60)


# Read in the container, with its own Python: the image has no ps, and docker's and podman's
# `top` take different options.
USERS_OF_EVERY_PROCESS = """
import os, pwd
uids = set()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        continue  # ended meanwhile
    uids.add(int(status.split("\\nUid:")[1].split()[0]))
print(" ".join(sorted(pwd.getpwuid(uid).pw_name for uid in uids)))
"""


def users_of_every_process(engine: Engine, name: str) -> set[str]:
    return set(engine("exec", name, "python", "-c", USERS_OF_EVERY_PROCESS).stdout.split())


def search_image_for(engine: Engine, needles: dict[str, bytes]) -> dict[str, list[str]]:
    """Every file of the image's filesystem holding one of `needles`, by needle."""
    container = engine("create", engine.image).stdout.strip()
    found: dict[str, list[str]] = {label: [] for label in needles}
    try:
        with (
            subprocess.Popen(
                [engine.command, "export", container], stdout=subprocess.PIPE
            ) as export,
            tarfile.open(fileobj=export.stdout, mode="r|") as filesystem,
        ):
            for member in filesystem:
                if not member.isfile():
                    continue
                content = filesystem.extractfile(member).read()
                for label, needle in needles.items():
                    if needle in content:
                        found[label].append(member.name)
        assert export.returncode == 0
    finally:
        engine("rm", "--force", container, check=False)
    return {label: paths for label, paths in found.items() if paths}


def test_the_image_runs_the_production_shape_as_its_own_user_with_no_secret_inside(
    engine, real_slurm, portal_is_a_slurm_administrator, emulated_switches, make_user, tmp_path
):
    started = time.monotonic()
    compose = load_compose()
    services = compose["services"]

    # The secrets a site mounts, readable by the image's user alone, and the named volumes.
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    munge_key = mounted / "munge.key"
    munge_key.write_bytes(Path(real_slurm.info["state_dir"], "munge", "munge.key").read_bytes())
    credentials = mounted / "fabric-credentials.json"
    credentials.write_text(Path(emulated_switches.settings["FABRIC_CREDENTIALS_FILE"]).read_text())
    known_hosts = mounted / "fabric-known-hosts"
    known_hosts.write_text(Path(emulated_switches.settings["FABRIC_KNOWN_HOSTS_FILE"]).read_text())
    for secret in (munge_key, credentials, known_hosts):
        owned_by_the_portal(secret)
    volumes = {}
    for volume in compose["volumes"]:
        (mounted / volume).mkdir()
        volumes[volume] = owned_by_the_portal(mounted / volume, 0o755)
    variables = dotenv_variables(
        SLURM_CONF_HOST_FILE=real_slurm.conf,
        MUNGE_KEY_HOST_FILE=str(munge_key),
        FABRIC_CREDENTIALS_HOST_FILE=str(credentials),
        FABRIC_KNOWN_HOSTS_HOST_FILE=str(known_hosts),
    )
    # The test cluster's slurm.conf names its own munge socket (AuthInfo=socket=...): there,
    # in the portal's containers, the munge service's socket too.
    conf_socket = Path(
        re.search(r"^AuthInfo=socket=(\S+)", Path(real_slurm.conf).read_text(), re.M).group(1)
    )
    (volumes["munge-socket"] / conf_socket.name).symlink_to("munge.socket.2")
    test_cluster_socket = ["--volume", f"{volumes['munge-socket']}:{conf_socket.parent}"]

    # .env: compose passes it to every portal container (env_file); here with the test's pacing,
    # the emulator's SSH endpoints, and the service hosts mapped to loopback.
    web_port = free_port()
    env_files = {}
    for name in PORTAL_SERVICES:
        environment = {
            **TEST_PACING,
            "FABRIC_SWITCH_ENDPOINTS": emulated_switches.settings["FABRIC_SWITCH_ENDPOINTS"],
            **with_loopback_services(service_environment(services[name], variables)),
        }
        env_files[name] = tmp_path / f"{name}.env"
        env_files[name].write_text("".join(f"{k}={v}\n" for k, v in environment.items()))
        env_files[name].chmod(0o600)

    node = real_slurm.node_names()[-1]
    Node.objects.bulk_create([Node(hostname=name) for name in real_slurm.node_names()])
    _, token = api_token_create(user=make_user(Role.OPERATOR), name="image")
    from portal.celery import app

    app.control.purge()  # the test Redis database may hold an earlier test's messages
    prefix = f"portal-test-{secrets.token_hex(3)}"

    def run(name: str, *, detach: bool = True):
        service = services[name]
        options = container_options(service, compose, variables, volumes)
        if name != "munge":
            options += ["--env-file", str(env_files[name]), *test_cluster_socket]
        container = f"{prefix}-{name}"
        engine.containers.append(container)
        return engine(
            "run",
            *(["--detach"] if detach else []),
            "--name",
            container,
            *engine.run_options,
            *options,
            engine.image,
            *command_argv(service, web_port),
            timeout=180,
        )

    def healthy(name: str) -> bool:
        check = exec_healthcheck(engine, f"{prefix}-{name}", services[name], web_port)
        return check.returncode == 0

    web_url = f"http://127.0.0.1:{web_port}"
    try:
        run("munge")
        wait_for(lambda: healthy("munge"), 30, "the munge service's health check", poll=0.5)
        migrate = run("migrate", detach=False)
        assert "Apply" in migrate.stdout or "No migrations to apply" in migrate.stdout
        for name in ("web", "worker", "beat"):
            run(name)

        def running() -> bool:
            for name in ("munge", "web", "worker", "beat"):
                state = engine("inspect", "--format", "{{.State.Running}}", f"{prefix}-{name}")
                if state.stdout.strip() != "true":
                    pytest.fail(f"{name} exited:\n{engine.logs(f'{prefix}-{name}')}")
            return True

        def serving() -> bool:
            running()
            try:
                return http("GET", web_url + "/healthz", timeout=2).status == 200
            except OSError:
                return False

        wait_for(serving, 90, "daphne in the web container to serve /healthz", poll=0.5)
        wait_for(
            lambda: " ready." in engine.logs(f"{prefix}-worker"),
            90,
            "the worker to be ready",
            poll=0.5,
        )

        # The beat-scheduled poll reaches both switches over SSH with the mounted known_hosts.
        def fabric_ok():
            reply = http("GET", web_url + "/readyz", timeout=10)
            return reply if reply.body["checks"].get("fabric") == "ok" else None

        try:
            ready = wait_for(fabric_ok, 45, "the switches' first poll over SSH", poll=0.5)
        except AssertionError:
            body = http("GET", web_url + "/readyz").body
            pytest.fail(f"{body}\n{engine.logs(f'{prefix}-worker')}")
        assert ready.status == 200, ready.body
        assert ready.body["checks"]["slurm"] == "ok"

        # Every compose health check, run inside its container (beat's once it wrote its
        # schedule).
        for name in ("munge", "web", "worker", "beat"):
            wait_for(lambda name=name: healthy(name), 30, f"{name}'s health check", poll=1)

        # Every process of every container runs as the image's user, munged included.
        user = engine("image", "inspect", "--format", "{{.Config.User}}", engine.image)
        assert user.stdout.strip() == PORTAL_USER
        for name in ("munge", "web", "worker", "beat"):
            assert users_of_every_process(engine, f"{prefix}-{name}") == {PORTAL_USER}, name

        # A drain through the API, with a token, reaches slurmctld through the worker's scontrol,
        # authenticated by the munge service as uid 10001.
        reason = f"image {secrets.token_hex(3)}"
        reply = http(
            "POST", web_url + "/api/jobs/nodes/drain", token, {"hostlist": node, "reason": reason}
        )
        assert reply.status == 202, reply.body
        wait_for(
            lambda: sinfo_state_and_reason(real_slurm, node) == ("drain", reason),
            30,
            f"slurmctld to show {node} drained with the API's reason",
        )

        # slurmctld stops: /readyz says so, and the web's and worker's health checks fail.
        slurm_cluster.stop_controller()
        try:
            down = http("GET", web_url + "/readyz", timeout=15)
            assert down.status == 503, down.body
            assert down.body["checks"]["slurm"].startswith("slurm controller unreachable")
            web_check = exec_healthcheck(engine, f"{prefix}-web", services["web"], web_port)
            assert web_check.returncode != 0
            worker_check = exec_healthcheck(
                engine, f"{prefix}-worker", services["worker"], web_port
            )
            assert worker_check.returncode != 0
            assert "slurm: slurm controller unreachable" in worker_check.stderr
        finally:
            slurm_cluster.start_controller()
        wait_for(
            lambda: http("GET", web_url + "/readyz", timeout=15).status == 200,
            30,
            "readiness once slurmctld is back",
        )

        # No secret the deployment mounted is in the image: not in its history, not in a file.
        secret_key = variables["SECRET_KEY"]
        history = engine("history", "--no-trunc", "--format", "{{.CreatedBy}}", engine.image)
        config = engine("image", "inspect", engine.image).stdout
        for text in (history.stdout, config):
            assert secret_key not in text
            assert munge_key.read_bytes().hex() not in text
            assert "munge.key" not in text
        found = search_image_for(
            engine,
            {
                "munge key": munge_key.read_bytes(),
                "SECRET_KEY": secret_key.encode(),
                "fabric credentials": credentials.read_bytes(),
            },
        )
        assert found == {}, found
        print(
            f"production shape from the image: {time.monotonic() - started:.0f} s "
            f"(image built or found in {engine.build_seconds} s)"
        )
    finally:
        engine.remove_containers()
        if slurm_cluster.controller_running():
            real_slurm.restore_nodes([node])

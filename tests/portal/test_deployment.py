"""docker-compose.yml cannot run here (no Docker engine), so check it as a document."""

import importlib
import importlib.util
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tests.deploy.compose import interpolate as compose_interpolate
from tests.deploy.compose import read_dotenv

REPO = Path(__file__).resolve().parents[2]


def load_compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_has_the_services_of_a_real_deployment():
    services = load_compose()["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    for name in ("postgres", "redis", "web", "worker", "beat"):
        assert "healthcheck" in services[name], f"{name} has no health check"
    assert load_compose()["volumes"].keys() >= {"postgres-data", "redis-data"}
    assert "postgres-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]


# What `docker compose config` accepts, for want of a compose on this machine kind that reads
# this file (Debian's docker-compose 1.29 predates its env_file form; podman-compose runs it
# only in part, deploy/README.md "The image").
TOP_LEVEL_KEYS = {"services", "volumes", "secrets", "networks", "configs", "name"}
SERVICE_KEYS = {
    "image", "build", "command", "entrypoint", "environment", "env_file", "volumes", "secrets",
    "depends_on", "healthcheck", "ports", "restart", "user",
}  # fmt: skip
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
RESTART = {"no", "always", "on-failure", "unless-stopped"}
DURATION = re.compile(r"^\d+(ms|s|m|h)$")


def interpolated(value, variables: dict[str, str]):
    """Compose's interpolation of every string in the file, after YAML (anchors, merge keys)."""
    if isinstance(value, dict):
        return {key: interpolated(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolated(item, variables) for item in value]
    return compose_interpolate(value, variables) if isinstance(value, str) else value


def test_compose_validates_with_env_example_as_its_env():
    # .env.example copied to .env sets every variable compose requires (${X:?...} would fail).
    compose = interpolated(load_compose(), read_dotenv(REPO / ".env.example"))
    assert {key for key in compose if not key.startswith("x-")} <= TOP_LEVEL_KEYS
    services, volumes, secrets = compose["services"], compose["volumes"], compose["secrets"]
    assert all(set(secret) == {"file"} for secret in secrets.values()), secrets
    for name, service in services.items():
        assert set(service) <= SERVICE_KEYS, (name, set(service) - SERVICE_KEYS)
        assert "image" in service or "build" in service, name
        assert all(isinstance(arg, str) for arg in service.get("command", [])), name
        assert service.get("restart", "no") in RESTART, name
        for dependency, how in service.get("depends_on", {}).items():
            assert dependency in services and dependency != name, (name, dependency)
            assert how["condition"] in CONDITIONS, (name, dependency)
            if how["condition"] == "service_healthy":
                assert "healthcheck" in services[dependency], (name, dependency)
        for volume in service.get("volumes", []):
            source, target, *mode = volume.split(":")
            assert source.startswith("/") or source in volumes, (name, volume)
            assert target.startswith("/") and mode in ([], ["ro"], ["rw"]), (name, volume)
        assert set(service.get("secrets", [])) <= set(secrets), name
        if "healthcheck" in service:
            check = service["healthcheck"]
            assert check["test"][0] in ("CMD", "CMD-SHELL") and len(check["test"]) > 1, name
            assert all(DURATION.match(check[key]) for key in ("interval", "timeout")), name
        for env_file in service.get("env_file", []):
            assert set(env_file) <= {"path", "required"}, name
    # No service waits on itself through others.
    waiting: dict[str, set[str]] = {name: set() for name in services}
    for _ in services:
        for name, service in services.items():
            for dependency in service.get("depends_on", {}):
                waiting[name] |= {dependency, *waiting[dependency]}
    assert all(name not in waits for name, waits in waiting.items()), waiting
    # The image `make image` builds is the one the services run.
    images = {service.get("image") for service in services.values() if "build" in service}
    assert images == {"gpu-ops-portal:latest"}
    assert services["munge"]["image"] == "gpu-ops-portal:latest"
    assert "IMAGE=${IMAGE:-gpu-ops-portal:latest}" in (REPO / "scripts/image-build").read_text()


def test_compose_commands_point_at_code_that_exists():
    services = load_compose()["services"]
    web = services["web"]["command"]
    # daphne without Twisted's own form parsing (portal/serve.py)
    assert web[:3] == ["python", "-m", "portal.serve"]
    assert importlib.util.find_spec("portal.serve") is not None
    module_name, attribute = web[-1].split(":")
    assert hasattr(importlib.import_module(module_name), attribute)
    for name in ("worker", "beat"):
        command = services[name]["command"]
        assert command[:3] == ["celery", "-A", "portal"]
        assert shutil.which("celery", path=str(REPO / ".venv" / "bin")) or shutil.which("celery")
    queues = services["worker"]["command"][services["worker"]["command"].index("-Q") + 1]
    from django.conf import settings

    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    assert routed <= set(queues.split(","))
    migrate = services["migrate"]["command"]
    assert migrate[:2] == ["python", "manage.py"] and (REPO / "manage.py").exists()


def test_compose_takes_secrets_from_the_environment_not_the_file():
    text = (REPO / "docker-compose.yml").read_text()
    environment = load_compose()["services"]["web"]["environment"]
    assert environment["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert "${POSTGRES_PASSWORD:?" in environment["DATABASE_URL"]
    assert "REQUIRE_SECRET_KEY" in environment
    assert "password:" not in text.lower().replace("postgres_password:", "")


# --- The production shape: compose, .env.example, the image and its entrypoint ---------
PORTAL_SERVICES = ("migrate", "web", "worker", "beat")
INTERPOLATION = re.compile(r"\$\{([A-Z0-9_]+)(?:(:?[-?])([^}]*))?\}")
# Variables the settings do not read because something else does: compose itself (the host side
# of mounts and secrets, the bundled PostgreSQL's password).
COMPOSE_ONLY = {
    "POSTGRES_PASSWORD",
    "SLURM_CONF_HOST_FILE",
    "MUNGE_KEY_HOST_FILE",
    "FABRIC_CREDENTIALS_HOST_FILE",
    "FABRIC_KNOWN_HOSTS_HOST_FILE",
}
# Imports the settings with os.environ replaced by a dict that records every name asked for.
RECORD_READS = """
import json, os, sys
class RecordingEnviron(dict):
    read = set()
    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)
    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)
    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)
os.environ = RecordingEnviron(os.environ)
try:
    import portal.settings
except Exception as error:
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
print(json.dumps(sorted(os.environ.read)))
"""


def interpolate(value: str) -> str:
    """What compose substitutes: the default of ${NAME:-default}, a stand-in for ${NAME:?...}."""

    def substitute(match: re.Match) -> str:
        name, operator, word = match.groups()
        return word if operator in (":-", "-") else f"compose-{name.lower()}"

    return INTERPOLATION.sub(substitute, value)


def compose_environment(service: str = "worker") -> dict[str, str]:
    raw = load_compose()["services"][service]["environment"]
    return {name: interpolate(str(value)) for name, value in raw.items()}


def names_read_by_the_settings(environment: dict[str, str]) -> tuple[set[str], str]:
    """The names the settings ask the environment for under `environment`, and what they raised.
    Some are asked for only under another environment (REQUIRE_SECRET_KEY when SECRET_KEY is
    unset, DATABASE_POOL_SIZE with PostgreSQL): callers take the union of a few."""
    base = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    result = subprocess.run(
        [sys.executable, "-c", RECORD_READS],
        cwd=REPO,
        env={**base, **environment},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.strip().splitlines()[-1])), result.stderr


def env_example_names() -> set[str]:
    """Names in .env.example, set or commented out (`# NAME=...` lines list an alternative)."""
    text = (REPO / ".env.example").read_text()
    return set(re.findall(r"^(?:# ?)?([A-Z][A-Z0-9_]+)=", text, re.M))


def test_every_variable_compose_sets_is_read_by_the_settings():
    environment = compose_environment()
    read, error = names_read_by_the_settings(environment)
    read_bare, _ = names_read_by_the_settings({})
    assert set(environment) - read - read_bare == set(), "compose sets variables nothing reads"
    # The compose environment is a production one the settings accept, but for the files it
    # mounts (absent here): every refusal names one of them.
    assert environment["DEPLOYMENT"] == "production"
    problems = [line.strip() for line in error.splitlines()[1:] if line.strip()]
    assert error.startswith("ConfigurationError: DEPLOYMENT=production cannot start"), error
    for problem in problems:
        assert problem.startswith(
            ("SLURM_CONF:", "FABRIC_CREDENTIALS_FILE:", "FABRIC_KNOWN_HOSTS_FILE:")
        ), problem


def test_every_variable_production_requires_is_set_by_compose_or_listed_in_env_example():
    from portal.deployment import REQUIRED_BY_DRIVER, REQUIRED_IN_PRODUCTION

    environment = compose_environment()
    required = {
        *REQUIRED_IN_PRODUCTION,
        *REQUIRED_BY_DRIVER[environment["SLURM_DRIVER"]],
        *REQUIRED_BY_DRIVER[environment["FABRIC_DRIVER"]],
    }
    assert environment["SLURM_DRIVER"] == "jobs.drivers.cli.ScontrolDriver"
    assert required - set(environment) - env_example_names() == set()
    # Every real driver's needs are at least listed, for the systemd path and slurmrestd.
    everything = {name for names in REQUIRED_BY_DRIVER.values() for name in names}
    assert (everything | set(REQUIRED_IN_PRODUCTION)) - env_example_names() <= set(environment)


def test_env_example_lists_what_compose_interpolates_and_nothing_unread():
    compose_text = (REPO / "docker-compose.yml").read_text()
    interpolated = {match.group(1) for match in INTERPOLATION.finditer(compose_text)}
    listed = env_example_names()
    assert interpolated - listed == set(), "compose asks for variables .env.example omits"
    assert interpolated >= COMPOSE_ONLY
    read = names_read_by_the_settings({})[0] | names_read_by_the_settings(compose_environment())[0]
    # The directory's and the sign-on proxy's settings are read once their mode is on.
    read |= names_read_by_the_settings(
        {
            "LDAP_SERVER_URI": "ldap://directory.invalid",
            "LDAP_USER_SEARCH_BASE": "ou=people,dc=example,dc=org",
            "LDAP_GROUP_SEARCH_BASE": "ou=groups,dc=example,dc=org",
            "REMOTE_AUTH_ENABLED": "1",
            "REMOTE_AUTH_TRUSTED_PROXIES": "127.0.0.1",
        }
    )[0]
    assert listed - read - COMPOSE_ONLY == set(), ".env.example lists variables nothing reads"


def test_every_portal_container_is_production_with_slurm_conf_munge_and_fabric_secrets():
    compose = load_compose()
    for name in PORTAL_SERVICES:
        service = compose["services"][name]
        assert service["environment"]["DEPLOYMENT"] == "production", name
        mounts = [interpolate(volume) for volume in service["volumes"]]
        assert f"compose-slurm_conf_host_file:{service['environment']['SLURM_CONF']}:ro" in mounts
        # munged's socket, never the munge key: only the munge service holds that.
        assert "munge-socket:/run/munge" in mounts, name
        assert set(service["secrets"]) == {"fabric-credentials", "fabric-known-hosts"}, name
        for variable in ("FABRIC_CREDENTIALS_FILE", "FABRIC_KNOWN_HOSTS_FILE"):
            secret = service["environment"][variable].removeprefix("/run/secrets/")
            assert secret in service["secrets"], f"{name}: {variable} is not a mounted secret"
        if name != "migrate":
            assert service["depends_on"]["munge"] == {"condition": "service_healthy"}, name
    munge = compose["services"]["munge"]
    assert munge["command"] == ["munged"] and munge["secrets"] == ["munge.key"]
    assert munge["volumes"] == ["munge-socket:/run/munge"]
    assert set(compose["secrets"]) == {"munge.key", "fabric-credentials", "fabric-known-hosts"}
    assert "beat-data:/app/var" in compose["services"]["beat"]["volumes"]


def test_the_image_has_slurm_client_of_the_clusters_major_version_and_munge():
    """Debian ships one Slurm per release: the image's release decides its slurm-client. This
    machine runs the test cluster from Debian's packages, so on the same release the version the
    image installs is the version `apt-cache policy` offers here, and must match slurmctld's."""
    dockerfile = (REPO / "Dockerfile").read_text()
    base = re.search(r"^ARG BASE_IMAGE=gpu-ops-portal-base:(\w+)$", dockerfile, re.M)
    assert base, "the image's Debian release is not pinned"
    # scripts/image-build makes that base from the same release.
    assert f"SUITE={base.group(1)}\n" in (REPO / "scripts" / "image-build").read_text()
    assert re.search(r"--no-install-recommends python3 [^\n]*\n\s+slurm-client munge ", dockerfile)
    assert 'ENTRYPOINT ["scripts/container-entrypoint"]' in dockerfile
    os_release = Path("/etc/os-release").read_text()
    assert f"VERSION_CODENAME={base.group(1)}" in os_release, "compare on the image's release"
    policy = subprocess.run(
        ["apt-cache", "policy", "slurm-client", "munge"], capture_output=True, text=True
    ).stdout
    candidate = re.search(r"slurm-client:\n.*\n\s+Candidate: (\d+\.\d+)", policy)
    assert candidate and re.search(r"munge:\n.*\n\s+Candidate: \d", policy), policy
    controller = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True).stdout
    assert controller.split()[1].startswith(candidate.group(1)), (controller, candidate.group(1))
    assert candidate.group(1) == "22.05"


@pytest.mark.skipif(os.geteuid() != 0, reason="started as root, to show it drops root first")
def test_container_entrypoint_serves_munge_from_the_key_secret_as_the_portal_user():
    assert shutil.which("munged"), "the munge package"
    # The portal user (here nobody) must reach its files: pytest's own tmp_path is private.
    with tempfile.TemporaryDirectory(prefix="portal-entrypoint-") as directory:
        tmp_path = Path(directory)
        tmp_path.chmod(0o755)
        run_the_munge_service(tmp_path, pwd.getpwnam("nobody"))


def run_the_munge_service(tmp_path: Path, user: pwd.struct_passwd):
    key = tmp_path / "munge.key"
    subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True)
    key.chmod(0o644)  # as a mounted secret may be: readable, not the user's, not private
    socket = tmp_path / "run" / "munge.socket"
    state = tmp_path / "state"
    for directory in (socket.parent, state):  # as the image makes them, the user's
        directory.mkdir()
        os.chown(directory, user.pw_uid, user.pw_gid)
    environment = {
        **os.environ,
        "MUNGE_KEY_FILE": str(key),
        "MUNGE_SOCKET": str(socket),
        "MUNGE_STATE_DIR": str(state),
        "PORTAL_USER": user.pw_name,
    }
    entrypoint = str(REPO / "scripts" / "container-entrypoint")
    munged = subprocess.Popen(
        [entrypoint, "munged"], env=environment, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while not socket.is_socket():
            assert munged.poll() is None, munged.stderr.read()
            assert time.monotonic() < deadline, "munged did not serve its socket"
            time.sleep(0.1)
        # The entrypoint became munged, as the portal user: no root process stays behind.
        status = Path(f"/proc/{munged.pid}/status").read_text()
        assert Path(f"/proc/{munged.pid}/comm").read_text().strip() == "munged"
        assert f"\nUid:\t{user.pw_uid}\t" in status
        # Its copy of the key is private to the user; the secret is left as it was.
        copy = state / "munge.key"
        assert (copy.stat().st_uid, copy.stat().st_mode & 0o777) == (user.pw_uid, 0o400)
        result = subprocess.run(
            [entrypoint, "sh", "-c", f"id -un && munge -n -S {socket} | unmunge -S {socket}"],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[0] == user.pw_name
        assert "STATUS:          Success (0)" in result.stdout
        assert "no munge socket" not in result.stderr
    finally:
        munged.terminate()
        munged.wait(timeout=10)


def test_the_munge_service_without_a_readable_key_says_so(tmp_path):
    result = subprocess.run(
        [REPO / "scripts" / "container-entrypoint", "munged"],
        env={**os.environ, "MUNGE_KEY_FILE": str(tmp_path / "absent.key"), "PORTAL_USER": ""},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert f"no munge key readable by uid {os.geteuid()} at {tmp_path}/absent.key" in result.stderr


def test_container_entrypoint_without_munge_says_slurm_will_fail_and_still_runs(tmp_path):
    result = subprocess.run(
        [REPO / "scripts" / "container-entrypoint", "echo", "started"],
        env={
            **os.environ,
            "MUNGE_SOCKET": str(tmp_path / "absent.socket"),
            "PORTAL_USER": "",
        },
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0 and result.stdout == "started\n"
    assert "Slurm commands will fail" in result.stderr

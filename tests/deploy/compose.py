"""docker-compose.yml read as `docker compose` would, and mapped onto this machine: what the two
production-shape tests share (test_production_shape.py runs the compose commands on the host,
test_image.py runs them as containers of the project's image).

The service hosts `postgres` and `redis` become this machine's test database and the test run's
Redis database; .env's variables are the ones a site would write, with this machine's values.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import yaml

from tests.chaos.support import QUIET_BEATS

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
ENV_EXAMPLE = REPO_ROOT / ".env.example"
PORTAL_SERVICES = ("migrate", "web", "worker", "beat")
# What the production shape must drive; if the compose file names these, it must agree.
PRODUCTION = {"DEPLOYMENT": "production", "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver"}
SWITCHES = ("spine01", "spine02")
POLL_SECONDS = 2
# Test pacing, as a site would put it in .env: poll the switches every 2 s, the other periodic
# syncs out of the way, and a Slurm command that gives up after 5 s.
TEST_PACING = {
    **QUIET_BEATS,
    "FABRIC_POLL_INTERVAL": str(POLL_SECONDS),
    # Stale after 10 missed polls, not 3: a loaded test machine may delay one.
    "FABRIC_READINESS_STALE_SECONDS": str(10 * POLL_SECONDS),
    "SLURM_COMMAND_TIMEOUT": "5",
    "FABRIC_SSH_CONNECT_TIMEOUT": "3",
}

_VARIABLE = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_]\w*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|\$(?P<bare>[A-Za-z_]\w*)"
)


def load_compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


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


def dotenv_variables(**overrides: str) -> dict[str, str]:
    """The .env a site would write, with this machine's values: what compose interpolates."""
    return {
        **read_dotenv(ENV_EXAMPLE),  # placeholders of whatever else the file requires
        "POSTGRES_PASSWORD": "not-used-the-test-database-has-its-own",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CSRF_TRUSTED_ORIGINS": "http://127.0.0.1",
        **overrides,
    }


def service_environment(service: dict, variables: dict[str, str]) -> dict[str, str]:
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.partition("=")[::2] for item in environment)
    environment = {name: interpolate(value, variables) for name, value in environment.items()}
    for name, value in PRODUCTION.items():
        if name in environment:
            assert environment[name] == value, f"docker-compose.yml sets {name}={environment[name]}"
    return environment


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


def with_loopback_services(environment: dict[str, str]) -> dict[str, str]:
    return {
        **environment,
        "DATABASE_URL": loopback_database_url(environment["DATABASE_URL"]),
        "REDIS_URL": loopback_redis_url(environment["REDIS_URL"]),
    }


def healthcheck_argv(service: dict, web_port: int) -> list[str]:
    """The service's compose health check as an argv (CMD-SHELL through sh), the web's port
    being this test's (the published 8000 is someone else's here)."""
    kind, *test = service["healthcheck"]["test"]
    test = [interpolate(part, {}).replace(":8000/", f":{web_port}/") for part in test]
    return ["/bin/sh", "-c", test[0]] if kind == "CMD-SHELL" else test


def command_argv(service: dict, web_port: int) -> list[str]:
    argv = [interpolate(arg, {}) for arg in service["command"]]
    if "--port" in argv:  # the published port 8000 is someone else's here
        argv[argv.index("--port") + 1] = str(web_port)
    return argv


"""Parsing of settings from environment variables.

Kept apart from settings.py so the parsing rules can be unit-tested without reloading Django.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import dj_database_url

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


class ConfigurationError(ValueError):
    """A setting in the environment cannot be understood; the message names the variable."""


def env_bool(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean (use one of 1/0, true/false)")


def env_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not an integer") from None


def env_float(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number") from None


def env_list(environ: Mapping[str, str], name: str, default: list[str]) -> list[str]:
    raw = environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_config(environ: Mapping[str, str], sqlite_path: str) -> dict:
    """PostgreSQL (psycopg 3) from DATABASE_URL, or the embedded SQLite file when it is unset."""
    url = environ.get("DATABASE_URL", "").strip()
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": sqlite_path,
            # The demo runs web, the periodic task process and simulators against one file.
            # WAL: a long write (a fabric poll's counters) does not block the pages' reads.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    if not url.startswith(("postgres://", "postgresql://", "sqlite://")):
        raise ConfigurationError(
            f"DATABASE_URL scheme not supported: {url.split(':', 1)[0]!r} "
            "(use postgresql://user@host:port/name)"
        )
    config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    if config["ENGINE"] == "django.db.backends.postgresql":
        pool_size = env_int(environ, "DATABASE_POOL_SIZE", 0)
        if pool_size < 0:
            raise ConfigurationError(f"DATABASE_POOL_SIZE={pool_size} must be 0 (off) or more")
        if pool_size:
            # Under ASGI (daphne) each request runs in a thread of its own, so a persistent
            # connection is never reused and every request pays a new PostgreSQL connection;
            # a pool (psycopg_pool) keeps them open across requests.
            config["CONN_MAX_AGE"] = 0
            config.setdefault("OPTIONS", {})["pool"] = {
                "min_size": 1,
                "max_size": pool_size,
                "timeout": 10,
            }
        # No JIT compilation: the portal's queries are short or one-off aggregates, and for
        # those PostgreSQL's JIT costs more than it saves (measured: the fabric's per-switch
        # sums at 2,000 nodes took 1.1 s, 1.0 s of it compiling, 0.1 s without). A site that
        # wants it passes its own `options` in DATABASE_URL.
        config.setdefault("OPTIONS", {}).setdefault("options", "-c jit=off")
        config.setdefault("TEST", {})
        # Tests get their own database next to the configured one.
        config["TEST"]["NAME"] = environ.get("DATABASE_TEST_NAME") or f"test_{config['NAME']}"
    return config


def local_secret_key(path: Path) -> str:
    """The key stored at `path`, created (readable by the owner only) on first use."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return path.read_text().strip()
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key)
    return key


RATE_PERIODS = ("s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day")


def env_rate(environ: Mapping[str, str], name: str, default: str | None) -> str | None:
    """A request rate as DRF writes it ("60/min"); empty or "off" means no limit (None)."""
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in ("", "off", "none"):
        return None
    count, _, period = word.partition("/")
    if not count.isdigit() or int(count) < 1 or period not in RATE_PERIODS:
        raise ConfigurationError(f"{name}={raw!r} is not a rate such as 60/min, 5/s or 1000/day")
    return word


def channel_layer_prefix(environ: Mapping[str, str], redis_url: str) -> str:
    """The name prefix of the live-event channels on Redis.

    Redis pub/sub channels belong to the server, not to a database number: two portals (or a
    portal and its tests) on one Redis server with different databases in REDIS_URL would
    otherwise hear each other's events. The default prefix names the database; CHANNEL_PREFIX
    overrides it (two portals sharing one database number).
    """
    explicit = environ.get("CHANNEL_PREFIX", "").strip()
    if explicit:
        return explicit
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(redis_url)
    database = parse_qs(parts.query).get("db", [""])[0] or parts.path.strip("/") or "0"
    return f"portal-db{database}"

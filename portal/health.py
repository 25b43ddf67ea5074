"""Liveness and readiness: what a load balancer and an on-call engineer ask first."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection


def check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:
        return f"database unreachable: {error}".strip()
    return None


def check_redis() -> str | None:
    if not settings.REDIS_URL:
        return None  # the embedded mode has no Redis to reach
    import redis

    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1
        )
        client.ping()
        client.close()
    except Exception as error:
        return f"redis unreachable: {error}"
    return None


def check_broker() -> str | None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return None  # tasks run in process
    from portal.celery import app

    try:
        with app.connection_for_write() as broker:
            broker.ensure_connection(max_retries=1, interval_start=0, timeout=1)
    except Exception as error:
        return f"broker unreachable: {error}"
    return None


ReadinessCheck = Callable[[], str | None]

READINESS_CHECKS: dict[str, ReadinessCheck] = {
    "database": check_database,
    "redis": check_redis,
    "broker": check_broker,
}


def register_readiness_check(name: str, check: ReadinessCheck) -> None:
    """Add a dependency owned by an app (the jobs app adds the Slurm controller).

    `check` returns None when the dependency answers, else a message saying what is
    unreachable ("... unreachable: why"); it must answer within a few seconds, because the
    dashboard and /readyz wait for it.
    """
    READINESS_CHECKS[name] = check


def readiness() -> dict[str, str]:
    """Each dependency's state: 'ok', 'not configured' or the error that names what is down."""
    report = {}
    for name, check in READINESS_CHECKS.items():
        problem = check()
        report[name] = problem or "ok"
    if not settings.REDIS_URL:
        report["redis"] = report["broker"] = "not configured (embedded mode)"
    return report


# What the dashboard and /metrics show may be this old: a page re-read on every live event (or a
# scrape every few seconds) then asks each dependency at most once per interval, so a stopped
# Slurm controller (scontrol ping waits up to its timeout) costs one render, not each of them.
RECENT_READINESS_SECONDS = 5.0
_recent: tuple[float, dict[str, str]] | None = None
_recent_lock = threading.Lock()


def recent_readiness(max_age: float = RECENT_READINESS_SECONDS) -> dict[str, str]:
    """`readiness()` as checked at most `max_age` seconds ago in this process; /readyz, which a
    load balancer acts on, always checks afresh."""
    global _recent
    with _recent_lock:  # concurrent renders wait for one check instead of each running theirs
        if _recent is None or time.monotonic() - _recent[0] > max_age:
            _recent = (time.monotonic(), readiness())
        return dict(_recent[1])


def forget_recent_readiness() -> None:
    global _recent
    _recent = None

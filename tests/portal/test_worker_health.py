"""manage.py worker_health, the worker container's health check: the database, Redis, the
broker and the Slurm controller through the configured driver, and the worker itself."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def worker_health(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "worker_health", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_healthy_when_every_dependency_answers():
    result = worker_health()
    assert result.returncode == 0, result.stderr
    assert "worker healthy: database, redis, broker, slurm ok" in result.stdout


def test_an_unreachable_slurm_controller_fails_naming_it(tmp_path):
    result = worker_health(
        SLURM_DRIVER="jobs.drivers.cli.ScontrolDriver", SLURM_BIN_DIR=str(tmp_path)
    )
    assert result.returncode == 1
    assert "slurm: slurm controller unreachable: cannot run" in result.stderr
    assert "worker unhealthy: slurm" in result.stderr


def test_an_unreachable_broker_fails_naming_redis_and_the_broker():
    result = worker_health(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    assert result.returncode == 1
    assert "worker unhealthy: redis, broker" in result.stderr


@pytest.mark.worker
def test_the_worker_itself_answers_or_is_named(celery_worker_process):
    celery_worker_process.start("health")
    name = f"health@{socket.gethostname()}"
    assert worker_health("--worker", name).returncode == 0
    # The worker's own notation for this host, as the compose health check names it: no
    # $HOSTNAME, which a container with host networking may not have.
    assert worker_health("--worker", "health@%h", HOSTNAME="").returncode == 0
    missing = worker_health("--worker", "celery@nowhere", "--timeout", "1")
    assert missing.returncode == 1
    assert "worker unreachable: celery@nowhere did not answer a ping" in missing.stderr

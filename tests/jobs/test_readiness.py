"""The Slurm controller in /readyz: asked through the configured driver, with a short timeout.

The real controller stopped for a minute is in tests/chaos/test_slurm_faults.py; here the CLI
driver meets a missing and a hanging `scontrol`, which need no cluster.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client

from jobs.drivers.base import reset_slurm_driver
from jobs.health import READINESS_TIMEOUT_SECONDS

pytestmark = pytest.mark.django_db


@pytest.fixture
def cli_driver(settings, tmp_path):
    settings.SLURM_DRIVER = "jobs.drivers.cli.ScontrolDriver"
    settings.SLURM_BIN_DIR = str(tmp_path)
    settings.SLURM_COMMAND_TIMEOUT = 30.0
    reset_slurm_driver()
    yield tmp_path
    reset_slurm_driver()


def test_readyz_names_a_slurm_controller_it_cannot_reach(cli_driver):
    response = Client().get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["slurm"]
    assert body["checks"]["slurm"].startswith("slurm controller unreachable: cannot run")
    assert body["checks"]["database"] == "ok"


def test_a_hanging_controller_is_reported_within_the_readiness_timeout(cli_driver):
    scontrol = cli_driver / "scontrol"
    scontrol.write_text("#!/bin/sh\nexec sleep 30\n")
    scontrol.chmod(0o755)

    started = time.monotonic()
    response = Client().get("/readyz")
    waited = time.monotonic() - started

    assert response.status_code == 503
    assert "did not finish within 3s" in response.json()["checks"]["slurm"]
    # The Actions' driver keeps its own, longer patience (SLURM_COMMAND_TIMEOUT).
    assert READINESS_TIMEOUT_SECONDS <= waited < READINESS_TIMEOUT_SECONDS + 2
    from jobs.drivers.base import get_slurm_driver

    assert get_slurm_driver().timeout == 30.0

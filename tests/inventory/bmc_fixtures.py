"""sushy-emulator as the nodes' BMCs (scripts/bmc-up), and settings that point the Redfish driver
at it. Import the fixtures into a test module: `from tests.inventory.bmc_fixtures import ...`.

The emulator is one process for the whole run (bmc-up is idempotent and locks its directory, so
parallel workers share it); its state persists, so each test sets the power state it starts from
and uses nodes of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BMC_TEST_DIR = os.environ.get("BMC_TEST_DIR", "/tmp/portal-bmc-test")
BMC_TEST_PORT = os.environ.get("BMC_TEST_PORT", "8610")


@pytest.fixture(scope="session")
def sushy_emulator() -> dict:
    """{"url", "credentials_file", "credentials_ref", "systems": {hostname: system id}}."""
    environment = {
        **os.environ,
        "BMC_TEST_DIR": BMC_TEST_DIR,
        "BMC_TEST_PORT": BMC_TEST_PORT,
        "BMC_TEST_NODES": "16",
    }
    result = subprocess.run(
        [str(ROOT / "scripts/bmc-up")], env=environment, capture_output=True, text=True,
        timeout=120, check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"scripts/bmc-up failed:\n{result.stderr[-3000:]}")
    started = json.loads(result.stdout.strip().splitlines()[-1])
    systems = json.loads(Path(started["systems_file"]).read_text())
    return {
        "url": systems["url"],
        "credentials_file": started["credentials_file"],
        "credentials_ref": systems["credentials_ref"],
        "systems": systems["systems"],
    }


@pytest.fixture
def redfish_settings(settings, sushy_emulator):
    """The Redfish driver against the emulator, with deadlines that suit its 1-11 s changes."""
    from inventory.bmc.drivers.base import reset_bmc_driver

    settings.BMC_DRIVER = "inventory.bmc.drivers.redfish.RedfishDriver"
    settings.BMC_CREDENTIALS_FILE = sushy_emulator["credentials_file"]
    settings.BMC_ENDPOINTS = dict.fromkeys(sushy_emulator["systems"], sushy_emulator["url"])
    settings.BMC_POWER_DEADLINE_SECONDS = 30.0
    settings.BMC_POLL_SECONDS = 0.25
    reset_bmc_driver()
    yield settings
    reset_bmc_driver()


def emulated_node(sushy_emulator, hostname: str, **fields):
    """A node whose BMC is the emulator's system of that host name."""
    from inventory.models import Node

    return Node.objects.create(
        hostname=hostname,
        bmc_address=fields.pop("bmc_address", None),
        bmc_system_id=sushy_emulator["systems"][hostname],
        bmc_credentials_ref=sushy_emulator["credentials_ref"],
        **fields,
    )

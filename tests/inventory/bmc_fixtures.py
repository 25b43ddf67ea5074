"""sushy-emulator as the nodes' BMCs (scripts/bmc-up), and settings that point the Redfish driver
at it. Import the fixtures into a test module: `from tests.inventory.bmc_fixtures import ...`.

The emulator is one process for the whole run (bmc-up is idempotent and locks its directory, so
parallel workers share it); its state persists, so each test sets the power state it starts from
and uses nodes of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
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


# --- the project's Redfish emulator (scripts/bmc/redfish_mockup_server.py) ----------------------
HGX_MOCKUP = ROOT / "scripts/bmc/mockups/hgx"
MOCKUP_USERNAME = "portal"
MOCKUP_PASSWORD = "portal-mockup-test"
MOCKUP_CREDENTIALS_REF = "mockup"
HGX_SYSTEM_ID = "HGX_Baseboard_0"
HGX_EVENT_LOG = "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries"


class RedfishMockup:
    """One running emulator over a private copy of a mockup tree (so appends stay in the test)."""

    def __init__(self, url: str, directory: Path, credentials_file: Path):
        self.url = url
        self.directory = directory
        self.credentials_file = credentials_file

    def append_event(self, **entry) -> dict:
        """POST a LogEntry to the HGX event log, as the BMC would record one."""
        import requests

        response = requests.post(
            self.url + HGX_EVENT_LOG, json=entry, auth=(MOCKUP_USERNAME, MOCKUP_PASSWORD),
            timeout=5,
        )
        assert response.status_code == 201, response.text
        return response.json()


@contextlib.contextmanager
def running_mockup(directory: Path, work_dir: Path):
    """scripts/bmc/redfish_mockup_server.py serving `directory` on a free loopback port."""
    password_file = work_dir / "mockup-password"
    password_file.write_text(MOCKUP_PASSWORD)
    credentials_file = work_dir / "bmc-credentials.json"
    logins = {MOCKUP_CREDENTIALS_REF: {"username": MOCKUP_USERNAME, "password": MOCKUP_PASSWORD}}
    credentials_file.write_text(json.dumps(logins))
    command = [
        sys.executable, str(ROOT / "scripts/bmc/redfish_mockup_server.py"),
        "--mockup", str(directory), "--port", "0",
        "--username", MOCKUP_USERNAME, "--password-file", str(password_file),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        started = process.stdout.readline()  # "serving DIR on http://127.0.0.1:PORT"
        assert "http://127.0.0.1:" in started, f"the emulator did not start: {started!r}"
        yield RedfishMockup(started.split()[-1], directory, credentials_file)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def redfish_mockup(tmp_path) -> RedfishMockup:
    """The HGX-like mockup, copied so that what a test appends stays in that test."""
    directory = tmp_path / "mockup"
    shutil.copytree(HGX_MOCKUP, directory)
    with running_mockup(directory, tmp_path) as mockup:
        yield mockup


@pytest.fixture
def mockup_settings(settings, redfish_mockup):
    """The Redfish driver with every node's BMC at the emulator (test nodes set their own)."""
    from inventory.bmc.drivers.base import reset_bmc_driver

    settings.BMC_DRIVER = "inventory.bmc.drivers.redfish.RedfishDriver"
    settings.BMC_CREDENTIALS_FILE = str(redfish_mockup.credentials_file)
    settings.BMC_ENDPOINTS = {}
    settings.BMC_TIMEOUT = 3.0
    reset_bmc_driver()
    yield settings
    reset_bmc_driver()

"""The Redfish driver against the project's own emulator (scripts/bmc/redfish_mockup_server.py):
what sushy-emulator lacks (event log, firmware inventory, sensors, HGX GPUs with serials), Basic
auth, and loading any directory in DMTF's mockup layout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import requests

from inventory.bmc.drivers.base import BmcRefused, BmcTarget, get_bmc_driver
from inventory.bmc.gpus import match_gpus
from inventory.models import GPU, Node
from tests.inventory.bmc_fixtures import (
    HGX_MOCKUP,
    HGX_SYSTEM_ID,
    MOCKUP_CREDENTIALS_REF,
    running_mockup,
)

pytestmark = pytest.mark.django_db


def _target(url: str, credentials_ref: str = MOCKUP_CREDENTIALS_REF) -> BmcTarget:
    return BmcTarget(
        hostname="gpu001", base_url=url, system_id=HGX_SYSTEM_ID, credentials_ref=credentials_ref
    )


def test_firmware_inventory_sensors_and_health(mockup_settings, redfish_mockup):
    driver, target = get_bmc_driver(), _target(redfish_mockup.url)
    firmware = {item.id: item.version for item in driver.firmware(target)}
    assert firmware["HGX_FW_BMC_0"] == "HGX-22.10-1-rc80"
    assert firmware["HGX_FW_GPU_SXM_8"] == "96.00.74.00.01" and len(firmware) == 9
    sensors = {sensor.name: sensor for sensor in driver.sensors(target)}
    assert sensors["HGX_Chassis_0_Fan_0"].kind == "Rotational"
    assert sensors["HGX_Chassis_0_Inlet_0_Temp_0"].reading == 24.0
    health = driver.health(target)
    assert (health.health, health.power_state, health.model) == ("OK", "On", "HGX H100 8-GPU")


def test_the_event_log_reads_what_was_appended_newest_first(mockup_settings, redfish_mockup):
    redfish_mockup.append_event(
        Severity="Critical", Created="2026-01-02T03:04:05+00:00", Message="PSU1 failed."
    )
    entries = get_bmc_driver().event_log(_target(redfish_mockup.url))
    assert [entry.message for entry in entries][:2] == [
        "PSU1 failed.",
        "The resource has been created successfully.",
    ]
    assert (entries[0].id, entries[0].log, entries[0].severity) == ("2", "EventLog", "Critical")


def test_gpus_are_matched_by_serial_or_uuid_never_by_number(mockup_settings, redfish_mockup):
    node = Node.objects.create(hostname="mockup-gpu-node")  # not a SAKURAONE name
    bmc_gpus = get_bmc_driver().gpus(_target(redfish_mockup.url))
    assert [gpu.bmc_id for gpu in bmc_gpus] == [f"GPU_SXM_{n}" for n in range(1, 9)]
    sxm1, sxm2 = bmc_gpus[0], bmc_gpus[1]
    # The host's index 7 is the BMC's GPU_SXM_1 (by serial), index 0 its GPU_SXM_2 (by UUID).
    GPU.objects.create(node=node, index=7, serial=sxm1.serial, uuid="GPU-other")
    GPU.objects.create(node=node, index=0, serial="", uuid=f"GPU-{sxm2.uuid}")
    matches = {match.bmc.bmc_id: match for match in match_gpus(node, bmc_gpus)}
    assert (matches["GPU_SXM_1"].gpu.index, matches["GPU_SXM_1"].matched_by) == (7, "serial")
    assert (matches["GPU_SXM_2"].gpu.index, matches["GPU_SXM_2"].matched_by) == (0, "uuid")
    assert matches["GPU_SXM_3"].gpu is None


def test_basic_auth_is_required_past_the_service_root(mockup_settings, redfish_mockup):
    assert requests.get(redfish_mockup.url + "/redfish/v1/", timeout=5).status_code == 200
    systems = requests.get(redfish_mockup.url + "/redfish/v1/Systems", timeout=5)
    assert systems.status_code == 401 and systems.headers["WWW-Authenticate"].startswith("Basic")
    wrong = requests.get(
        redfish_mockup.url + "/redfish/v1/Systems", auth=("portal", "wrong"), timeout=5
    )
    assert wrong.status_code == 401
    escape = requests.get(
        redfish_mockup.url + "/redfish/v1/../../../etc/passwd", auth=("portal", "x"), timeout=5
    )
    assert escape.status_code in (401, 404)
    mockup_settings.BMC_CREDENTIALS_FILE = str(redfish_mockup.credentials_file)
    redfish_mockup.credentials_file.write_text(
        '{"mockup": {"username": "portal", "password": "not-it"}}'
    )
    with pytest.raises(BmcRefused, match="refused the login"):
        get_bmc_driver().health(_target(redfish_mockup.url))


def test_only_a_log_service_entries_collection_accepts_post(mockup_settings, redfish_mockup):
    answer = requests.post(
        redfish_mockup.url + "/redfish/v1/Systems",
        json={"Message": "x"},
        auth=("portal", "portal-mockup-test"),
        timeout=5,
    )
    assert answer.status_code == 405
    assert "Entries" in answer.json()["error"]["message"]


def test_a_short_form_mockup_loads_as_dmtf_serves_it(mockup_settings, tmp_path):
    # DMTF's public-rackmount1 has no redfish/v1 folder: its root index.json is the service root.
    short_form = tmp_path / "short-form"
    shutil.copytree(HGX_MOCKUP / "redfish" / "v1", short_form)
    with running_mockup(short_form, tmp_path) as mockup:
        mockup_settings.BMC_CREDENTIALS_FILE = str(mockup.credentials_file)
        assert get_bmc_driver().health(_target(mockup.url)).serial == "1660223000001"
        mockup.append_event(Severity="Warning", Message="Fan FAN0 slow.")
        assert get_bmc_driver().event_log(_target(mockup.url))[0].message == "Fan FAN0 slow."


def test_bmc_up_starts_the_redfish_emulator_beside_sushy_emulator(tmp_path):
    import json
    import os
    import signal
    import socket
    import subprocess

    from tests.inventory.bmc_fixtures import ROOT

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {
        **os.environ,
        "BMC_TEST_DIR": str(tmp_path / "bmc"),
        "BMC_TEST_PORT": str(port),
        "BMC_TEST_NODES": "2",
    }
    # bmc-up waits on a known port, so the mockup gets a free one of its own too.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        environment["BMC_MOCKUP_PORT"] = str(probe.getsockname()[1])
    result = subprocess.run(
        [str(ROOT / "scripts/bmc-up")], env=environment, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    started = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout else {}
    try:
        assert result.returncode == 0, result.stderr[-2000:]
        login = json.loads(Path(started["credentials_file"]).read_text())["emulator"]
        entries = started["mockup_url"] + "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog"
        answer = requests.get(entries, auth=(login["username"], login["password"]), timeout=5)
        assert answer.status_code == 200 and answer.json()["Id"] == "EventLog"
        assert requests.get(entries, timeout=5).status_code == 401
    finally:
        for key in ("pid", "mockup_pid"):
            if started.get(key):
                os.kill(started[key], signal.SIGTERM)

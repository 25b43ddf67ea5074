"""What the BMC says about a node (issue 24 item 2's read side): health, sensors, firmware, the
newest event-log entries and the GPUs matched by serial or UUID, read through the Redfish driver
from the project's HGX emulator and from sushy-emulator, as GET /api/inventory/nodes/{id}/bmc/
and as the node page's lazily loaded BMC section."""

from __future__ import annotations

import pytest
from django.utils import timezone

from inventory.allocations import allocation_create
from inventory.bmc.drivers.base import get_bmc_driver, reset_bmc_driver
from inventory.bmc.reading import bmc_reading
from inventory.bmc.targets import bmc_target
from inventory.models import GPU, Node
from portal.models import Role
from tests.inventory.bmc_fixtures import (
    HGX_SYSTEM_ID,
    MOCKUP_CREDENTIALS_REF,
    MOCKUP_PASSWORD,
    emulated_node,
)
from tests.inventory.conftest import delete_inventory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def without_the_sakuraone_import(db):
    """These tests make their own nodes under SAKURAONE's host names (the emulated BMCs are named
    so): the package's committed import is emptied inside each test's transaction."""
    delete_inventory()


@pytest.fixture
def hgx_node(mockup_settings, redfish_mockup):
    node = Node.objects.create(
        hostname="gpu041", bmc_address="10.10.0.41", bmc_system_id=HGX_SYSTEM_ID,
        bmc_credentials_ref=MOCKUP_CREDENTIALS_REF,
    )
    mockup_settings.BMC_ENDPOINTS = {node.hostname: redfish_mockup.url}
    return node


def bmc_url(node, query: str = "") -> str:
    return f"/api/inventory/nodes/{node.pk}/bmc/{query}"


def test_the_api_reads_health_sensors_firmware_events_and_gpus_from_the_hgx_emulator(
    api_as, hgx_node, redfish_mockup
):
    bmc_gpus = get_bmc_driver().gpus(bmc_target(hgx_node))
    sxm1, sxm2 = bmc_gpus[0], bmc_gpus[1]
    # After a swap: the host's GPU7 is the BMC's GPU_SXM_1 (by serial); GPU0 still carries the
    # old serial the BMC no longer reports; GPU3 is GPU_SXM_2 by UUID.
    GPU.objects.create(node=hgx_node, index=7, serial=sxm1.serial, uuid="GPU-elsewhere")
    GPU.objects.create(node=hgx_node, index=0, serial="OLD-SERIAL-BEFORE-SWAP", uuid="GPU-gone")
    GPU.objects.create(node=hgx_node, index=3, serial="", uuid=f"GPU-{sxm2.uuid}")
    redfish_mockup.append_event(
        Severity="Critical", Created="2026-11-27T05:00:00+00:00", Message="PSU1 failed."
    )
    response = api_as(Role.VIEWER).get(bmc_url(hgx_node, "?events=1"))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["answered"] is True and body["error"] == ""
    assert (body["health"]["health"], body["health"]["power_state"]) == ("OK", "On")
    assert body["health"]["model"] == "HGX H100 8-GPU"
    firmware = {item["id"]: item for item in body["firmware"]["items"]}
    assert body["firmware"]["status"] == "ok"
    assert firmware["HGX_FW_BMC_0"]["version"] == "HGX-22.10-1-rc80"
    sensors = {sensor["name"]: sensor for sensor in body["sensors"]["items"]}
    assert sensors["HGX_Chassis_0_Inlet_0_Temp_0"]["reading"] == 24.0
    assert {"units", "status"} <= set(sensors["HGX_Chassis_0_Inlet_0_Temp_0"])
    assert [entry["message"] for entry in body["events"]["items"]] == ["PSU1 failed."]
    assert body["events"]["items"][0]["severity"] == "Critical"
    gpus = {gpu["bmc_id"]: gpu for gpu in body["gpus"]["items"]}
    assert (gpus["GPU_SXM_1"]["state"], gpus["GPU_SXM_1"]["inventory_index"]) == ("matched", 7)
    assert (gpus["GPU_SXM_2"]["matched_by"], gpus["GPU_SXM_2"]["inventory_index"]) == ("uuid", 3)
    assert gpus["GPU_SXM_3"]["state"] == "bmc_only"
    assert [gpu["serial"] for gpu in body["inventory_only_gpus"]] == ["OLD-SERIAL-BEFORE-SWAP"]
    # The HGX baseboard system has no Boot: said, not an error.
    assert body["boot_override"]["status"] == "not_offered"
    assert MOCKUP_PASSWORD not in response.content.decode()


def test_sushy_emulator_lacks_the_event_log_and_firmware_which_is_said_not_an_error(
    redfish_settings, sushy_emulator
):
    node = emulated_node(sushy_emulator, "gpu003")
    reading = bmc_reading(node)
    assert reading.answered and reading.health["health"] == "OK"
    assert (reading.events.status, reading.events.message) == (
        "not_offered", "not offered by this BMC"
    )
    assert reading.firmware.status == "not_offered"
    assert reading.sensors.status == "ok" and reading.sensors.items


def test_a_bmc_that_does_not_answer_is_said_never_a_500(api_as, settings, db):
    settings.BMC_DRIVER = "inventory.bmc.drivers.redfish.RedfishDriver"
    settings.BMC_ENDPOINTS = {"gpu042": "http://127.0.0.1:9"}  # nothing listens there
    reset_bmc_driver()
    node = Node.objects.create(hostname="gpu042", bmc_address="10.10.0.42")
    response = api_as(Role.OPERATOR).get(bmc_url(node))
    reset_bmc_driver()
    assert response.status_code == 200
    body = response.json()
    assert body["answered"] is False
    assert body["error"].startswith("the BMC did not answer: ")
    assert body["sensors"]["status"] == body["gpus"]["status"] == "error"


def test_a_node_without_a_bmc_says_so(api_as, db):
    node = Node.objects.create(hostname="gpu043")
    body = api_as(Role.VIEWER).get(bmc_url(node)).json()
    assert body["bmc_configured"] is False and "no BMC address" in body["error"]


@pytest.mark.parametrize("events", ["0", "201", "many"])
def test_a_bad_event_count_is_a_400_naming_it(api_as, db, events):
    node = Node.objects.create(hostname="gpu044")
    response = api_as(Role.VIEWER).get(bmc_url(node, f"?events={events}"))
    assert response.status_code == 400 and "events" in response.json()


def test_tenant_admins_read_only_their_nodes_bmc(api_as, settings, tmp_path, tenant_a):
    settings.BMC_DRIVER = "inventory.bmc.drivers.simulated.SimulatedDriver"
    settings.BMC_SIMULATOR_STATE_FILE = str(tmp_path / "bmc.json")
    reset_bmc_driver()
    own = Node.objects.create(hostname="gpu045", bmc_address="10.10.0.45")
    other = Node.objects.create(hostname="gpu046", bmc_address="10.10.0.46")
    allocation_create(tenant=tenant_a, nodes=[own], start=timezone.now())
    client = api_as(Role.TENANT_ADMIN, tenant=tenant_a)
    assert client.get(bmc_url(own)).status_code == 200
    assert client.get(bmc_url(other)).status_code == 404
    reset_bmc_driver()


def test_the_node_page_loads_the_bmc_section_lazily(client, make_user, hgx_node):
    client.force_login(make_user(Role.VIEWER))
    page = client.get(f"/inventory/nodes/{hgx_node.hostname}/").content.decode()
    fragment_url = f"/inventory/nodes/{hgx_node.hostname}/bmc/"
    assert f'hx-get="{fragment_url}"' in page and "HGX-22.10-1-rc80" not in page
    fragment = client.get(fragment_url, HTTP_HX_REQUEST="true").content.decode()
    assert "HGX-22.10-1-rc80" in fragment and "GPU_SXM_1" in fragment
    assert 'data-bmc-answered="yes"' in fragment and MOCKUP_PASSWORD not in fragment


def test_the_node_page_section_says_when_the_bmc_does_not_answer(client, make_user, settings):
    settings.BMC_DRIVER = "inventory.bmc.drivers.redfish.RedfishDriver"
    settings.BMC_ENDPOINTS = {"gpu047": "http://127.0.0.1:9"}
    reset_bmc_driver()
    Node.objects.create(hostname="gpu047", bmc_address="10.10.0.47")
    client.force_login(make_user(Role.VIEWER))
    response = client.get("/inventory/nodes/gpu047/bmc/")
    reset_bmc_driver()
    assert response.status_code == 200
    assert "the BMC did not answer: " in response.content.decode()

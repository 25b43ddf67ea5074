"""Power Actions through the API with the simulated BMCs: the impact before confirming, the
refusal naming the jobs a power-off would end, forcing with a reason, idempotency, the outcome
read back from the BMC, and GPUs matched by serial or UUID."""

from __future__ import annotations

import pytest

from inventory.bmc.drivers.base import BmcGpu, get_bmc_driver, reset_bmc_driver
from inventory.bmc.gpus import match_gpus
from inventory.bmc.power import POWER_ACTION
from inventory.bmc.targets import bmc_target
from inventory.models import GPU, Node
from jobs.models import Job
from portal.models import Action, ActionStatus, Role
from portal.services.actions import run_action
from tests.inventory.conftest import delete_inventory


@pytest.fixture(autouse=True)
def without_the_sakuraone_import(db):
    """These tests make their own nodes under SAKURAONE's host names (the emulated BMCs are named
    so): the package's committed import is emptied inside each test's transaction, and is whole
    again for the next test."""
    delete_inventory()


@pytest.fixture
def simulated_bmcs(settings, tmp_path):
    settings.BMC_DRIVER = "inventory.bmc.drivers.simulated.SimulatedDriver"
    settings.BMC_SIMULATOR_STATE_FILE = str(tmp_path / "bmc.json")
    settings.BMC_SIMULATOR_POWER_DELAY_SECONDS = 0.2
    settings.BMC_POLL_SECONDS = 0.05
    settings.BMC_POWER_DEADLINE_SECONDS = 10.0
    reset_bmc_driver()
    yield settings
    reset_bmc_driver()


@pytest.fixture
def node(db):
    return Node.objects.create(
        hostname="gpu010", bmc_address="10.10.0.10", bmc_system_id="1",
        bmc_credentials_ref="redfish/supermicro",
    )


def power_url(node):
    return f"/api/inventory/nodes/{node.pk}/power/"


def running_job(node, job_id="4242"):
    job = Job.objects.create(
        job_id=job_id, user="alice", account="physics", state="RUNNING", source="squeue"
    )
    job.nodes.add(node)
    return job


def test_the_node_api_carries_the_bmc_by_reference(operator_api, node):
    body = operator_api.get(f"/api/inventory/nodes/{node.pk}/").json()
    assert body["bmc_address"] == "10.10.0.10"
    assert body["bmc_system_id"] == "1"
    assert body["bmc_credentials_ref"] == "redfish/supermicro"
    response = operator_api.patch(
        f"/api/inventory/nodes/{node.pk}/", {"bmc_credentials_ref": "no spaces allowed"},
        format="json",
    )
    assert response.status_code == 400 and "bmc_credentials_ref" in response.json()


def test_power_off_is_an_action_that_succeeds_when_the_bmc_reports_off(
    operator_api, node, simulated_bmcs
):
    before = operator_api.get(power_url(node)).json()
    assert before["power_state"] == "On" and before["jobs"] == []
    assert {op["name"] for op in before["operations"]} == {
        "on", "graceful_off", "force_off", "power_cycle", "bmc_reset"
    }
    response = operator_api.post(
        power_url(node), {"operation": "force_off", "reason": "PSU swap"}, format="json"
    )
    assert response.status_code == 202, response.content
    action = Action.objects.get(pk=response.json()["id"])
    assert action.kind == POWER_ACTION and action.target == "gpu010"
    assert action.parameters == {
        "node": "gpu010", "operation": "force_off", "forced": False, "jobs": []
    }
    run_action(action_id=action.pk)
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert action.result["power_state"] == "Off"
    assert action.result["reset_types"] == ["ForceOff"]
    assert operator_api.get(power_url(node)).json()["power_state"] == "Off"
    # Off an Off node: succeeds without asking the BMC for anything.
    again = operator_api.post(
        power_url(node), {"operation": "force_off", "reason": "again"}, format="json"
    )
    run_action(action_id=again.json()["id"])
    repeated = Action.objects.get(pk=again.json()["id"])
    assert repeated.status == ActionStatus.SUCCEEDED and repeated.result["already"] is True


def test_power_off_of_a_node_running_jobs_is_refused_naming_them_unless_forced(
    operator_api, node, simulated_bmcs
):
    running_job(node)
    assert operator_api.get(power_url(node)).json()["jobs"] == ["job 4242 (alice, physics)"]
    for operation in ("graceful_off", "force_off", "power_cycle"):
        refused = operator_api.post(
            power_url(node), {"operation": operation, "reason": "PSU swap"}, format="json"
        )
        assert refused.status_code == 409, refused.content
        assert "job 4242 (alice, physics)" in refused.json()["force"][0]
    assert not Action.objects.exists()
    # Powering on, or resetting the BMC, does not end jobs: not refused.
    assert operator_api.post(
        power_url(node), {"operation": "bmc_reset", "reason": "BMC hung"}, format="json"
    ).status_code == 202
    forced = operator_api.post(
        power_url(node),
        {"operation": "force_off", "reason": "smoke from the PSU", "force": True},
        format="json",
    )
    assert forced.status_code == 202
    action = Action.objects.get(pk=forced.json()["id"])
    assert action.parameters["forced"] is True
    assert action.parameters["jobs"] == ["job 4242 (alice, physics)"]
    assert action.reason == "smoke from the PSU"


def test_the_same_idempotency_key_returns_the_first_action(operator_api, node, simulated_bmcs):
    body = {"operation": "on", "reason": "after repair", "idempotency_key": "k-1"}
    first = operator_api.post(power_url(node), body, format="json")
    second = operator_api.post(power_url(node), body, format="json")
    assert first.json()["id"] == second.json()["id"]
    assert Action.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"operation": "explode", "reason": "x"}, "operation"),
        ({"operation": "on"}, "reason"),
        ({"operation": "on", "reason": "   "}, "reason"),
        ({"operation": "on", "reason": "x", "force": "maybe"}, "force"),
        ({"operation": "on", "reason": "x", "surprise": 1}, "surprise"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(operator_api, node, body, field):
    response = operator_api.post(power_url(node), body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_a_node_without_a_bmc_is_a_409_saying_so(operator_api, db):
    bare = Node.objects.create(hostname="gpu011")
    response = operator_api.post(power_url(bare), {"operation": "on", "reason": "x"}, format="json")
    assert response.status_code == 409
    assert "gpu011 has no BMC address" in response.json()["node"][0]
    assert operator_api.get(power_url(bare)).json()["bmc_configured"] is False


@pytest.mark.parametrize("role", [Role.VIEWER, Role.TENANT_ADMIN, Role.ONCALL])
def test_who_may_not_power_cannot_read_the_impact_or_act(api_as, node, role):
    client = api_as(role)
    assert client.get(power_url(node)).status_code == 403
    body = {"operation": "on", "reason": "x"}
    assert client.post(power_url(node), body, format="json").status_code == 403
    assert not Action.objects.exists()


def test_a_power_cycle_of_an_on_node_restarts_it(operator_api, node, simulated_bmcs):
    response = operator_api.post(
        power_url(node), {"operation": "power_cycle", "reason": "hung"}, format="json"
    )
    run_action(action_id=response.json()["id"])
    action = Action.objects.get(pk=response.json()["id"])
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    # The simulated BMC, like sushy-emulator, offers no PowerCycle.
    assert action.result["reset_types"] == ["ForceRestart"]
    assert action.result["power_state"] == "On"


def test_an_action_fails_with_the_bmcs_words_past_the_deadline(operator_api, node, simulated_bmcs):
    simulated_bmcs.BMC_SIMULATOR_POWER_DELAY_SECONDS = 5.0
    simulated_bmcs.BMC_POWER_DEADLINE_SECONDS = 0.3
    response = operator_api.post(
        power_url(node), {"operation": "graceful_off", "reason": "x"}, format="json"
    )
    run_action(action_id=response.json()["id"])
    action = Action.objects.get(pk=response.json()["id"])
    assert action.status == ActionStatus.FAILED
    assert "still reports On" in action.last_error and "GracefulShutdown" in action.last_error


def test_the_simulated_bmc_has_an_event_log_firmware_and_an_hgx_gpu_tree(node, simulated_bmcs):
    for index in range(8):
        GPU.objects.create(node=node, index=index, serial=f"16540000{index}",
                           uuid=f"GPU-00000000-0000-0000-0000-00000000000{index}")
    driver, target = get_bmc_driver(), bmc_target(node)
    driver.reset(target, "ForceOff")
    assert any("ForceOff" in entry.message for entry in driver.event_log(target))
    assert {item.id for item in driver.firmware(target)} >= {"BMC", "BIOS"}
    matches = match_gpus(node, driver.gpus(target))
    assert len(matches) == 8 and all(match.matched_by == "serial" for match in matches)
    # The BMC's numbering is not the host's: matching by position would be wrong here.
    assert any(int(m.bmc.bmc_id.rsplit("_", 1)[1]) != m.gpu.index + 1 for m in matches)
    for match in matches:
        assert match.gpu.serial == match.bmc.serial


def test_gpus_match_by_uuid_when_the_bmc_has_no_serial(node):
    gpu = GPU.objects.create(node=node, index=3, uuid="GPU-8d2f6a1e-0000-4000-8000-000000000003")
    matches = match_gpus(
        node,
        [
            BmcGpu("GPU_SXM_1", "", "8D2F6A1E-0000-4000-8000-000000000003"),
            BmcGpu("GPU_SXM_2", "unknown-serial", ""),
        ],
    )
    assert matches[0].gpu == gpu and matches[0].matched_by == "uuid"
    assert matches[1].gpu is None


def test_the_node_page_shows_the_bmc_and_its_live_power_state(client, make_user, node,
                                                              simulated_bmcs):
    client.force_login(make_user(Role.VIEWER))
    page = client.get(f"/inventory/nodes/{node.hostname}/").content.decode()
    assert "10.10.0.10" in page and "redfish/supermicro" in page
    assert "<dd data-power-state>On</dd>" in page
    simulated_bmcs.BMC_DRIVER = "inventory.bmc.drivers.redfish.RedfishDriver"
    simulated_bmcs.BMC_ENDPOINTS = {"gpu010": "http://127.0.0.1:9"}  # nothing listens there
    reset_bmc_driver()
    page = client.get(f"/inventory/nodes/{node.hostname}/").content.decode()
    assert "unknown (the BMC did not answer)" in page

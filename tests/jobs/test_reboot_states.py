"""The reboot states Slurm holds for a node (REBOOT_REQUESTED `@`, REBOOT_ISSUED `^`) reach the
node's row through the sync, show on the node page and in the node API, and a requested reboot
can be cancelled (`scontrol cancel_reboot`) from the page or the API by the roles that reboot.
Slurm is the simulator on a fake clock (tests/jobs/test_slurm_reboot.py: the real slurmctld)."""

from __future__ import annotations

import pytest
from django.test import Client

from inventory.models import Node
from jobs.drivers.base import BatchJobRequest
from jobs.drivers.cluster_model import REBOOT_SECONDS
from jobs.drivers.simulator import BATCH_JOB_SECONDS
from jobs.services import CANCEL_REBOOT_ACTION, request_reboot
from jobs.sync import sync_node_states
from portal.models import Action, ActionStatus, Role
from portal.services.actions import run_action

CANCEL_URL = "/api/jobs/nodes/cancel-reboot/"


@pytest.fixture
def node(db):
    return Node.objects.create(hostname="gpu001")


@pytest.fixture
def simulator(make_simulator, monkeypatch):
    driver = make_simulator(nodes=2)
    monkeypatch.setattr("jobs.action_handlers.get_slurm_driver", lambda: driver)
    monkeypatch.setattr("jobs.action_handlers._refresh_node_states", lambda nodes: None)
    return driver


def run_now(action: Action) -> Action:
    Action.objects.filter(pk=action.pk).update(not_before=None)
    run_action(action_id=action.pk)
    action.refresh_from_db()
    return action


def synced(simulator) -> Node:
    sync_node_states(driver=simulator)
    return Node.objects.get(hostname="gpu001")


def page_for(make_user, role, node) -> str:
    client = Client()
    client.force_login(make_user(role))
    return client.get(f"/inventory/nodes/{node.hostname}/").content.decode()


def test_a_requested_reboot_shows_and_can_be_cancelled_from_the_node_page(
    node, simulator, make_user, clock
):
    simulator.submit_batch_job(BatchJobRequest(node_name="gpu001", command="x", job_name="x"))
    reboot = run_now(request_reboot(nodes=[node], reason="FT-4: XID 79")[0])
    assert reboot.status == ActionStatus.QUEUED

    node = synced(simulator)
    assert (node.slurm_state, node.slurm_reboot) == ("draining", "requested")
    page = page_for(make_user, Role.OPERATOR, node)
    assert "requested @" in page and "REBOOT_REQUESTED" in page
    assert "Cancel the reboot of gpu001" in page
    # Who may not reboot may not cancel one either: no button.
    assert "Cancel the reboot" not in page_for(make_user, Role.VIEWER, node)

    client = Client()
    client.force_login(make_user(Role.ONCALL))
    response = client.post("/jobs/nodes/cancel-reboot/", {
        "node_id": node.pk, "reason": "the job matters more", "confirm": "yes"})
    assert response.status_code == 302
    cancel = Action.objects.get(kind=CANCEL_REBOOT_ACTION)
    assert (cancel.target, cancel.parameters) == ("gpu001", {"nodes": ["gpu001"]})
    assert run_now(cancel).status == ActionStatus.SUCCEEDED

    node = synced(simulator)
    assert (node.slurm_state, node.slurm_reboot) == ("allocated", "")  # the ASAP drain went too
    assert "Cancel the reboot" not in page_for(make_user, Role.OPERATOR, node)
    assert run_now(reboot).status == ActionStatus.FAILED  # what it waited for is gone


def test_an_issued_reboot_shows_as_rebooting_opens_no_ticket_and_is_in_the_api(
    node, simulator, clock, operator_api, unhealthy_calls
):
    simulator.submit_batch_job(BatchJobRequest(node_name="gpu001", command="x", job_name="x"))
    reboot = run_now(request_reboot(nodes=[node], reason="FT-5: XID 79")[0])
    assert synced(simulator).slurm_reboot == "requested"
    clock.advance(seconds=BATCH_JOB_SECONDS + 1)

    node = synced(simulator)
    # Slurm says DOWN+DRAIN+REBOOT_ISSUED; a planned reboot is no failure to open a ticket for.
    assert (node.slurm_state, node.slurm_reboot) == ("rebooting", "issued")
    assert unhealthy_calls == []
    body = operator_api.get(f"/api/inventory/nodes/{node.pk}/").json()
    assert (body["slurm_state"], body["slurm_reboot"]) == ("rebooting", "issued")
    # Too late to cancel: Slurm refuses nothing here, it simply goes on; the Action says so.
    response = operator_api.post(CANCEL_URL, {"hostlist": "gpu001", "reason": "too late"})
    assert response.status_code == 202, response.content

    clock.advance(seconds=REBOOT_SECONDS + 1)
    assert run_now(reboot).status == ActionStatus.SUCCEEDED
    node = synced(simulator)
    assert (node.slurm_state, node.slurm_reboot) == ("idle", "")
    assert operator_api.get(f"/api/inventory/nodes/{node.pk}/").json()["slurm_reboot"] == ""


def test_the_cancel_api_names_a_missing_reason(node, operator_api):
    response = operator_api.post(CANCEL_URL, {"hostlist": "gpu001", "reason": ""})
    assert response.status_code == 400
    assert "reason" in response.json()
    assert not Action.objects.exists()

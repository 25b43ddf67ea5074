"""The checked return to service carried by the ticket (issue 24 items 7-8): the validation
job's result is recorded on the ticket (field, API, page, timeline) when its Action ends; a node
restarted or repaired for an open ticket goes back into service only after a validation passed,
or when an operator overrides with a reason (timeline and audit), through one rule on every path:
the ticket's own resume step, the jobs API and the node page's resume.

Slurm here is the simulator on a fake clock (tests/jobs/test_validation_run.py runs the same
Action; tests/jobs/test_validation_run_real_slurm.py against the real slurmctld)."""

from __future__ import annotations

from pathlib import Path

import pytest

from faults.models import FaultTicket
from faults.services.recovery import recovery_steps, request_recovery
from inventory.models import Node
from jobs import action_handlers, validation_run
from jobs.drivers.cluster_model import REBOOT_SECONDS
from jobs.drivers.simulator import BATCH_JOB_SECONDS, SimulatorDriver
from jobs.services import REBOOT_ACTION, RESUME_ACTION
from portal.errors import Conflict
from portal.models import Action, ActionStatus, AuditEntry, Role
from portal.services.actions import run_action
from tests.faults.test_ticket_steps import drained, fleet, xid_ticket  # noqa: F401 - fixture
from tests.jobs.conftest import FakeClock

pytestmark = pytest.mark.django_db

GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "validation" / "gpu-check"
RESUME_URL = "/api/jobs/nodes/resume"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def slurm(clock, monkeypatch, settings, tmp_path):
    """A quiet simulated cluster that the reboot and validation Actions talk to, gpu001 drained
    by the XID policy, and the validation's output where the portal can read its tail."""
    driver = SimulatorDriver(cluster="test", clock=clock, node_names=["gpu001", "gpu002"],
                             history_hours=0, mean_failure_seconds=0, mean_arrival_seconds=10**9)
    driver.ping()
    driver.drain(["gpu001"], "FT-1: Xid 79")
    monkeypatch.setattr(validation_run, "get_slurm_driver", lambda: driver)
    monkeypatch.setattr(action_handlers, "get_slurm_driver", lambda: driver)
    monkeypatch.setattr(action_handlers, "_refresh_node_states", lambda nodes: None)
    settings.FAULTS_VALIDATION_COMMAND = str(GPU_CHECK)
    settings.FAULTS_VALIDATION_OUTPUT_DIR = str(tmp_path)
    return driver


def run_now(action: Action) -> Action:
    Action.objects.filter(pk=action.pk).update(not_before=None)  # the check is due now
    run_action(action_id=action.pk)
    action.refresh_from_db()
    return action


def rebooted_ticket(make_user, clock) -> tuple[FaultTicket, object]:
    """An XID ticket whose drained node was rebooted through Slurm from the ticket: the
    reboot Action waits until the node has booted again, then succeeds."""
    oncall = make_user(Role.ONCALL)
    ticket = xid_ticket()
    drained()
    reboot = run_now(request_recovery(ticket=ticket, step="reboot", actor=oncall))
    assert reboot.kind == REBOOT_ACTION
    assert reboot.status == ActionStatus.QUEUED, reboot.last_error  # the node is booting
    clock.advance(seconds=REBOOT_SECONDS + 1)
    reboot = run_now(reboot)
    # Back from the reboot, DOWN as the ticket's reboot asks (nextstate=DOWN), which the sync
    # brings to the node's row: the node waits for its validation.
    from jobs.sync import sync_node_states

    sync_node_states(driver=action_handlers.get_slurm_driver())
    assert Node.objects.get(hostname="gpu001").slurm_state == "down"
    assert reboot.status == ActionStatus.SUCCEEDED, reboot.last_error
    return FaultTicket.objects.get(pk=ticket.pk), oncall


def validate(ticket, actor, clock) -> Action:
    action = run_now(request_recovery(ticket=ticket, step="validate", actor=actor))
    assert action.status == ActionStatus.QUEUED, action.last_error  # its job runs
    clock.advance(seconds=BATCH_JOB_SECONDS + 1)
    return run_now(action)


def test_a_passed_validation_is_recorded_on_the_ticket_and_lets_it_resume(
        fleet, slurm, clock, make_user, api_as):  # noqa: F811
    ticket, oncall = rebooted_ticket(make_user, clock)
    reboot = ticket.actions.get(kind=REBOOT_ACTION)
    # Restarted, not validated: validating is the primary step now, before another restart.
    assert [step.step for step in recovery_steps(ticket, user=oncall)] == [
        "validate", "reboot", "resume"]

    # Restarted, not validated: the ticket's resume is refused, naming why and the way out.
    with pytest.raises(Conflict) as refused:
        request_recovery(ticket=ticket, step="resume", actor=oncall, confirm=True)
    (why,) = refused.value.detail["override_reason"]
    assert f"not validated since Action #{reboot.pk} (slurm.reboot)" in why
    assert not Action.objects.filter(kind=RESUME_ACTION).exists()

    action = validate(ticket, oncall, clock)

    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    ticket = FaultTicket.objects.get(pk=ticket.pk)
    validation = ticket.validation
    assert validation["passed"] is True
    assert (validation["job_id"], validation["exit_code"], validation["state"]) == (
        action.result["job_id"], 0, "COMPLETED")
    assert validation["command"] == str(GPU_CHECK)
    assert "all 8 GPUs passed" in validation["output_tail"]
    assert validation["action"] == action.pk and validation["finished_at"]
    entry = ticket.timeline.filter(action=action, text__startswith="Validation passed").get()
    assert f"job {validation['job_id']} COMPLETED, exit 0" in entry.text
    (node,) = slurm.nodes(["gpu001"])
    assert "DRAIN" not in node.flags  # the validation put it back itself

    detail = api_as(Role.VIEWER).get(f"/api/faults/tickets/{ticket.pk}/").json()
    assert detail["validation"]["passed"] is True
    assert detail["validation"]["job_id"] == validation["job_id"]

    # Back in service after its validation: no drain is offered to undo it.
    Node.objects.filter(hostname="gpu001").update(slurm_state="idle")
    assert recovery_steps(FaultTicket.objects.get(pk=ticket.pk), user=oncall) == []
    Node.objects.filter(hostname="gpu001").update(slurm_state="drained")

    # Validated after the restart: the ticket's resume needs no override any more.
    resume = request_recovery(ticket=ticket, step="resume", actor=oncall, confirm=True)
    assert resume.kind == RESUME_ACTION


def test_a_failed_validation_keeps_the_node_out_unless_overridden_with_a_reason(
        fleet, slurm, clock, make_user, api_as, tmp_path):  # noqa: F811
    ticket, oncall = rebooted_ticket(make_user, clock)
    marker = tmp_path / "fail"
    marker.touch()
    from django.conf import settings

    settings.FAULTS_VALIDATION_COMMAND = f"GPU_CHECK_FAIL_MARKER={marker} {GPU_CHECK}"

    action = validate(ticket, oncall, clock)

    assert action.status == ActionStatus.SUCCEEDED and action.result["passed"] is False
    ticket = FaultTicket.objects.get(pk=ticket.pk)
    assert (ticket.validation["passed"], ticket.validation["exit_code"]) == (False, 1)
    assert any("FAILED" in line for line in ticket.validation["output_tail"])
    assert ticket.timeline.filter(action=action, text__startswith="Validation FAILED").exists()
    (node,) = slurm.nodes(["gpu001"])
    assert "DRAIN" in node.flags  # "validate, then resume" did not resume it

    api = api_as(Role.ONCALL)
    url = f"/api/faults/tickets/{ticket.pk}/recovery/"
    refused = api.post(url, {"step": "resume", "confirm": True}, format="json")
    assert refused.status_code == 409, refused.content
    (why,) = refused.json()["override_reason"]
    assert "its last validation did not pass" in why
    assert f"job {action.result['job_id']} FAILED, exit 1" in why
    steps = {row["step"]: row for row in api.get(f"/api/faults/tickets/{ticket.pk}/").json()[
        "recovery_steps"]}
    assert "did not pass" in steps["resume"]["override_needed"]

    taken = api.post(url, {"step": "resume", "confirm": True,
                           "override_reason": "GPU 3 replaced; vendor diag passed on the bench"},
                     format="json")

    assert taken.status_code == 202, taken.content
    resume = Action.objects.get(kind=RESUME_ACTION)
    entry = FaultTicket.objects.get(pk=ticket.pk).timeline.get(action=resume)
    assert "without a passed validation" in entry.text
    assert "GPU 3 replaced; vendor diag passed on the bench" in entry.text
    audit = AuditEntry.objects.filter(object_type="faults.faultticket",
                                      object_id=str(ticket.pk), operation="update").last()
    assert "GPU 3 replaced" in audit.note and audit.after["action"] == resume.pk


def test_the_node_resume_follows_the_same_rule(
        fleet, slurm, clock, make_user, api_as, client):  # noqa: F811
    ticket, _ = rebooted_ticket(make_user, clock)
    api = api_as(Role.OPERATOR)

    refused = api.post(RESUME_URL, {"hostlist": "gpu001", "reason": "looks fine"}, format="json")

    assert refused.status_code == 409
    (why,) = refused.json()["override"]
    assert "not validated since Action #" in why and ticket.reference in why

    taken = api.post(RESUME_URL, {"hostlist": "gpu001", "reason": "vendor says fine",
                                  "override": True}, format="json")

    assert taken.status_code == 202, taken.content
    resume = Action.objects.get(kind=RESUME_ACTION)
    assert any("not validated since" in text for text in resume.parameters["overridden"])
    entry = FaultTicket.objects.get(pk=ticket.pk).timeline.get(action=resume)
    assert "vendor says fine" in entry.text and "Overriding:" in entry.text
    assert "not validated since" in entry.text


def test_a_ticket_nothing_was_done_for_holds_no_validation(fleet, make_user):  # noqa: F811
    oncall = make_user(Role.ONCALL)
    ticket = xid_ticket()
    drained()

    resume = request_recovery(ticket=ticket, step="resume", actor=oncall, confirm=True)

    assert resume.kind == RESUME_ACTION


def test_the_ticket_page_shows_the_validation_and_asks_for_the_override_reason(
        fleet, slurm, clock, make_user, client):  # noqa: F811
    ticket, oncall = rebooted_ticket(make_user, clock)
    client.force_login(oncall)

    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert "not validated" in page
    assert 'data-override-needed="resume"' in page and 'name="override_reason"' in page
    posted = client.post(f"/faults/{ticket.pk}/recovery/", {"step": "resume", "confirm": "1"})
    # The page answers the refusal in place (400), naming why.
    assert posted.status_code == 400
    assert "not validated since Action #" in posted.content.decode()
    assert not Action.objects.filter(kind=RESUME_ACTION).exists()

    validate(ticket, oncall, clock)

    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert 'data-validation="passed"' in page and "all 8 GPUs passed" in page
    assert str(GPU_CHECK) in page
    assert 'data-override-needed="resume"' not in page

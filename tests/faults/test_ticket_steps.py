"""The ticket's steps are safe (issue 26 items 4-5): the primary step is the next safe one; a
resume on an open critical ticket and a resolve while the node drains or runs jobs ask first;
verify clears the suspect GPU; resume stays offered after "verified" while the node is drained;
what is done anywhere for the ticket's node or port is linked to it; and an XID, ECC or link
event can be reported from the node page."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from faults.models import FaultTicket, Source, TimelineKind
from faults.services import intake
from faults.services.recovery import recovery_steps, request_recovery
from faults.services.tickets import transition_ticket
from faults.workflow import Status
from inventory.models import Node
from jobs.models import Job
from jobs.services import request_drain
from portal.errors import Conflict
from portal.models import Action, Role
from tests.faults.conftest import build_fleet, xid_event

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(db):
    return build_fleet()


def xid_ticket(*, triaged: bool = False, **fields) -> FaultTicket:
    ticket, _ = intake.receive_platform_event(raw_body=json.dumps(xid_event(**fields)))
    if triaged:
        ticket = transition_ticket(ticket=ticket, to_status=Status.TRIAGED, actor=None)
    return ticket


def drained(hostname: str = "gpu001", state: str = "drained") -> Node:
    Node.objects.filter(hostname=hostname).update(slurm_state=state)
    return Node.objects.get(hostname=hostname)


def test_a_fresh_critical_xid_ticket_never_offers_a_bare_resume_first(fleet, make_user):
    oncall = make_user(Role.ONCALL)
    ticket = xid_ticket()
    # The policy's drain is on its way: no second drain is offered meanwhile.
    assert [step.step for step in recovery_steps(ticket, user=oncall)] == []
    Action.objects.filter(kind="slurm.drain").update(status="failed")
    assert [step.step for step in recovery_steps(ticket, user=oncall)] == ["drain"]
    drained()
    steps = recovery_steps(FaultTicket.objects.get(pk=ticket.pk), user=oncall)
    # A restart through Slurm first (the paper's dominant recovery); then the checked way back
    # (validate, then resume) before the plain resume.
    assert [step.step for step in steps] == ["reboot", "validate", "resume"]
    assert steps[0].confirmation == steps[1].confirmation == ""
    assert "critical" in steps[2].confirmation  # the page asks before the plain resume
    reboot = request_recovery(ticket=ticket, step="reboot", actor=oncall)
    assert (reboot.kind, reboot.parameters["next_state"]) == ("slurm.reboot", "down")
    assert reboot in ticket.actions.all()

    # With a BMC the node is recovered (power cycle) before it is resumed, for roles with power.
    Node.objects.filter(hostname="gpu001").update(bmc_address="127.0.0.1")
    operator = make_user(Role.OPERATOR)
    ticket = FaultTicket.objects.get(pk=ticket.pk)
    assert [step.step for step in recovery_steps(ticket, user=operator)] == [
        "reboot", "power_cycle", "validate", "resume"]
    action = request_recovery(ticket=ticket, step="power_cycle", actor=operator)
    assert (action.kind, action.parameters["operation"]) == ("bmc.power", "power_cycle")
    assert action in ticket.actions.all()


def test_a_node_slurm_is_rebooting_is_offered_no_step_meanwhile(fleet, make_user):
    oncall = make_user(Role.ONCALL)
    ticket = xid_ticket()
    Action.objects.filter(kind="slurm.drain").update(status="succeeded")
    # REBOOT_ISSUED: the sync's "rebooting" (Slurm's DOWN+REBOOT_ISSUED). Not a node to drain
    # (it offered "Drain gpu001" here) nor to restart again; its reboot Action shows progress.
    drained(state="rebooting")
    assert recovery_steps(FaultTicket.objects.get(pk=ticket.pk), user=oncall) == []


def test_a_resume_on_an_open_critical_ticket_needs_confirming(fleet, make_user):
    oncall = make_user(Role.ONCALL)
    ticket = xid_ticket()
    drained()
    with pytest.raises(Conflict) as refused:
        request_recovery(ticket=ticket, step="resume", actor=oncall)
    assert "confirm" in refused.value.detail
    assert not Action.objects.filter(kind="slurm.resume").exists()
    action = request_recovery(ticket=ticket, step="resume", actor=oncall, confirm=True)
    assert action.kind == "slurm.resume" and action in ticket.actions.all()


def test_resolving_while_the_node_drains_or_runs_jobs_needs_confirming(fleet, make_user):
    oncall = make_user(Role.ONCALL)
    ticket = xid_ticket(triaged=True)
    drained(state="draining")
    with pytest.raises(Conflict) as refused:
        transition_ticket(ticket=ticket, to_status=Status.RESOLVED, actor=oncall,
                          recovery_method="warm_reboot")
    assert "gpu001 is still draining" in refused.value.detail["confirm"][0]
    assert FaultTicket.objects.get(pk=ticket.pk).status == Status.TRIAGED

    job = Job.objects.create(job_id="4242", user="alice", account="a", state="RUNNING",
                             source="squeue", node_count=1, gpus=8, nodelist="gpu001")
    job.nodes.set([Node.objects.get(hostname="gpu001")])
    with pytest.raises(Conflict) as refused:
        transition_ticket(ticket=ticket, to_status=Status.RESOLVED, actor=oncall,
                          recovery_method="warm_reboot")
    assert "gpu001 is still draining and runs job 4242" in refused.value.detail["confirm"][0]
    resolved = transition_ticket(ticket=ticket, to_status=Status.RESOLVED, actor=oncall,
                                 recovery_method="warm_reboot", confirm=True)
    assert resolved.status == Status.RESOLVED

    # A node back in service that runs jobs again is no reason to ask.
    other = xid_ticket(triaged=True, gpu=6)
    drained(state="mixed")
    assert transition_ticket(ticket=other, to_status=Status.RESOLVED, actor=oncall,
                             recovery_method="warm_reboot").status == Status.RESOLVED


def test_verify_clears_the_suspect_gpu_and_resume_stays_offered_while_drained(fleet, make_user):
    oncall = make_user(Role.ONCALL)
    ticket = xid_ticket(triaged=True)
    assert ticket.gpu_suspect
    drained()
    transition_ticket(ticket=ticket, to_status=Status.RESOLVED, actor=oncall,
                      recovery_method="warm_reboot")
    ticket = transition_ticket(ticket=ticket, to_status=Status.VERIFIED, actor=oncall)
    assert not FaultTicket.objects.get(pk=ticket.pk).gpu_suspect
    (step,) = recovery_steps(ticket, user=oncall)
    assert (step.step, step.confirmation) == ("resume", "")  # verified: no question to ask
    action = request_recovery(ticket=ticket, step="resume", actor=oncall)
    assert action.kind == "slurm.resume" and action in ticket.actions.all()


def test_a_drain_from_elsewhere_is_linked_to_the_open_ticket_of_its_node(fleet, make_user):
    operator = make_user(Role.OPERATOR)
    ticket = xid_ticket()
    other = Node.objects.get(hostname="gpu002")
    action, _ = request_drain(nodes=[Node.objects.get(hostname="gpu001"), other],
                              reason="kernel update", requested_by=operator, via="ui")
    assert action in ticket.actions.all()
    entry = ticket.timeline.get(kind=TimelineKind.LINKED, action=action)
    assert operator.username in entry.text and "kernel update" in entry.text
    # Not for a node without an open ticket, and not after the ticket closed.
    lone, _ = request_drain(nodes=[other], reason="other", requested_by=operator)
    assert not FaultTicket.objects.filter(actions=lone).exists()
    # The policy's own drain (its reason names the ticket) is recorded once, in its own words.
    policy_drains = ticket.timeline.filter(action__kind="slurm.drain",
                                           action__reason__startswith=ticket.reference)
    assert [entry.kind for entry in policy_drains] == [TimelineKind.AUTOMATIC]


def test_a_drain_of_nodes_without_an_open_ticket_asks_once_and_opens_no_savepoint(
    fleet, make_user
):
    """Issue 28: every drain asks whether its nodes have an open ticket before Slurm hears of
    it; the usual no is one read, with no savepoint (two round trips) around it."""
    operator = make_user(Role.OPERATOR)
    nodes = list(Node.objects.filter(hostname__in=["gpu002", "gpu003"]))
    with CaptureQueriesContext(connection) as queries:
        request_drain(nodes=nodes, reason="kernel update", requested_by=operator)
    statements = [query["sql"] for query in queries.captured_queries]
    # The one savepoint is the request's own transaction, nested in the test's.
    assert len([sql for sql in statements if sql.startswith("SAVEPOINT")]) == 1, statements
    assert len([sql for sql in statements if "faults_faultticket" in sql]) == 1
    # A node with one answers yes to that read, and its ticket is linked in a savepoint.
    ticket = xid_ticket()
    with CaptureQueriesContext(connection) as queries:
        action, _ = request_drain(nodes=[ticket.node], reason="xid", requested_by=operator)
    statements = [query["sql"] for query in queries.captured_queries]
    assert len([sql for sql in statements if sql.startswith("SAVEPOINT")]) == 2, statements
    assert ticket.timeline.filter(kind=TimelineKind.LINKED, action=action).exists()


def test_a_port_step_from_the_switch_page_is_linked_to_the_port_ticket(fleet, make_user):
    from fabric.services import request_port_admin

    operator = make_user(Role.OPERATOR)
    port = fleet.leaf.ports.get(name="Ethernet0")
    fleet.leaf.management_address = "127.0.0.9"
    fleet.leaf.save(update_fields=["management_address"])
    ticket, _ = intake.receive_platform_event(raw_body=json.dumps(
        {"kind": "nic_link_down", "node": "gpu001", "nic": "mlx5_0"}))
    ticket.port = port
    ticket.save(update_fields=["port"])
    action, _ = request_port_admin(switch=fleet.leaf, ports=["Ethernet0"], up=False,
                                   reason="optics", requested_by=operator)
    assert action in ticket.actions.all()
    assert ticket.timeline.filter(kind=TimelineKind.LINKED, action=action).exists()


# --- pages -----------------------------------------------------------------------------------


def test_the_ticket_page_asks_before_a_resume_and_before_an_early_resolve(fleet, make_user,
                                                                          client):
    client.force_login(make_user(Role.ONCALL))
    ticket = xid_ticket()
    drained(state="draining")
    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert 'data-step-confirm="resume"' in page  # a disclosure, not a one-click post
    assert 'name="confirm" value="1"' in page and "critical fault" in page
    transition_ticket(ticket=ticket, to_status=Status.TRIAGED, actor=None)
    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert 'id="resolve-early"' in page and "gpu001 is still draining" in page

    refused = client.post(f"/faults/{ticket.pk}/transition/", {
        "to_status": "resolved", "recovery_method": "warm_reboot", "note": "rebooted"})
    assert refused.status_code == 400
    assert "confirm" in refused.content.decode()
    assert 'value="rebooted"' in refused.content.decode()  # what was typed is kept
    done = client.post(f"/faults/{ticket.pk}/transition/", {
        "to_status": "resolved", "recovery_method": "warm_reboot", "confirm": "1"})
    assert done.status_code == 302
    assert FaultTicket.objects.get(pk=ticket.pk).status == Status.RESOLVED

    unconfirmed = client.post(f"/faults/{ticket.pk}/recovery/", {"step": "resume"})
    assert unconfirmed.status_code == 302  # resolved: resuming needs no question any more
    assert Action.objects.filter(kind="slurm.resume").count() == 1


def test_the_node_page_reports_an_xid_on_a_gpu_chosen_from_its_gpus(fleet, make_user, client):
    client.force_login(make_user(Role.ONCALL))
    page = client.get("/inventory/nodes/gpu001/").content.decode()
    assert 'id="node-report-event"' in page
    assert "GPU3 · serial 1654322001" in page  # the node's own GPUs, with their serials
    assert 'action="/faults/report/node/gpu001/"' in page

    missing = client.post("/faults/report/node/gpu001/", {"kind": "xid", "xid": "79"})
    assert missing.status_code == 400 and "Choose the GPU." in missing.content.decode()
    assert not FaultTicket.objects.exists()

    response = client.post("/faults/report/node/gpu001/",
                           {"kind": "xid", "gpu": "3", "xid": "79", "message": "dmesg: Xid 79"})
    assert response.status_code == 302
    ticket = FaultTicket.objects.get()
    assert ticket.sources == [Source.USER_REPORT]
    assert (ticket.node.hostname, ticket.gpu.index, ticket.severity) == ("gpu001", 3, "critical")
    assert "XID 79" in ticket.summary and ticket.gpu_suspect
    # The monitor's own report of the same GPU joins the person's ticket.
    joined, created = intake.receive_platform_event(raw_body=json.dumps(xid_event()))
    assert joined.pk == ticket.pk and not created

    ecc = client.post("/faults/report/node/gpu002/",
                      {"kind": "ecc", "gpu": "1", "single_bit": "0", "double_bit": "2"})
    assert ecc.status_code == 302
    assert FaultTicket.objects.get(node__hostname="gpu002").summary.endswith(
        "(0 single-bit, 2 double-bit)")
    link = client.post("/faults/report/node/gpu002/", {"kind": "nic_link_down", "nic": "mlx5_1"})
    assert link.status_code == 302
    assert FaultTicket.objects.filter(nic__device="mlx5_1").exists()
    assert client.post("/faults/report/node/gpu999/", {"kind": "xid"}).status_code == 404


def test_viewers_get_no_report_form_and_may_not_post_one(fleet, make_user, client):
    client.force_login(make_user(Role.VIEWER))
    page = client.get("/inventory/nodes/gpu001/").content.decode()
    assert 'id="node-report-event"' not in page
    response = client.post("/faults/report/node/gpu001/",
                           {"kind": "xid", "gpu": "3", "xid": "79"})
    assert response.status_code == 403 and not FaultTicket.objects.exists()


def test_the_report_form_types_the_node_with_suggestions(fleet, make_user, client):
    client.force_login(make_user(Role.ONCALL))
    page = client.get("/faults/report/").content.decode()
    assert 'list="report-node-options"' in page and 'data-node-typeahead' in page
    assert "<select" not in page.split('id="id_node"')[0].rsplit("<label", 1)[-1]
    refused = client.post("/faults/report/", {"summary": "slow", "node": "gpu12"})
    assert refused.status_code == 400
    assert "No node of that hostname" in refused.content.decode()
    assert client.post("/faults/report/", {"summary": "slow", "node": "gpu001", "gpu": "2"}
                       ).status_code == 302


def test_the_recovery_method_comes_from_what_was_done_for_the_ticket(fleet, make_user, client):
    from django.utils import timezone

    from faults.models import RecoveryMethod
    from portal.models import ActionStatus

    operator = make_user(Role.OPERATOR)
    ticket = xid_ticket(triaged=True)
    drained()
    Node.objects.filter(hostname="gpu001").update(bmc_address="127.0.0.1")
    cycle = request_recovery(ticket=ticket, step="power_cycle", actor=operator)
    client.force_login(operator)
    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert 'id="recovery-evidence"' not in page  # queued is not done
    Action.objects.filter(pk=cycle.pk).update(status=ActionStatus.SUCCEEDED,
                                              finished_at=timezone.now())
    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert f"Shown by Action #{cycle.pk} (bmc.power power_cycle)" in page

    resolved = transition_ticket(ticket=ticket, to_status=Status.RESOLVED, actor=operator)
    assert resolved.recovery_method == RecoveryMethod.COLD_REBOOT
    entry = resolved.timeline.filter(kind=TimelineKind.TRANSITION).last()
    assert f"recovery: Cold reboot, from Action #{cycle.pk}" in entry.text

    # What a person typed stands when they say it.
    other = xid_ticket(triaged=True, gpu=5)
    said = transition_ticket(ticket=other, to_status=Status.RESOLVED, actor=operator,
                             recovery_method=RecoveryMethod.GPU_RESET)
    assert said.recovery_method == RecoveryMethod.GPU_RESET

"""Fabric and Slurm state changes become tickets, and recovery closes them: a link going down
(poll or a port-shut Action), a health-check drain, a node DOWN, a job ending NODE_FAIL, a switch
unreachable; each opens or joins a ticket with its impact, and the signal clearing proposes the
resume (or performs it where the policy says so)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fabric.services import request_port_admin
from faults.models import Category, FaultTicket, Source, TimelineKind
from faults.services.intake import submit_user_report
from faults.services.recovery import recovery_steps, request_recovery
from inventory.models import Cable, Node, Switch
from jobs.drivers.base import FinishedJob, SlurmNodeState
from jobs.models import Job
from jobs.sync import import_finished_jobs, sync_node_states
from portal.models import Action, Role
from portal.services.actions import run_action
from tests.fabric.monitoring_support import poll_every_minute

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: a small fleet and the emulated fabric
pytestmark = pytest.mark.django_db

LEAF = "leaf-p1-r3"


class SlurmSays:
    """A Slurm driver that reports the node states a test sets."""

    def __init__(self) -> None:
        self.states: dict[str, SlurmNodeState] = {}

    def set(self, name: str, state: str, *flags: str, reason: str = "") -> None:
        self.states[name] = SlurmNodeState(name=name, state=state, flags=flags, reason=reason)

    def nodes(self, names=None):
        return list(self.states.values())

    def jobs(self):
        return []


def port_of(node: str) -> str:
    cable = Cable.objects.filter(a_port__switch__hostname=LEAF, b_nic__node__hostname=node).first()
    if cable is not None:
        return cable.a_port.name
    return Cable.objects.get(b_port__switch__hostname=LEAF, a_nic__node__hostname=node).b_port.name


@pytest.fixture
def job_on_gpu002(small_fleet, tenant_a):
    job = Job.objects.create(job_id="1098", user="alice", account="tenant-a", tenant=tenant_a,
                             state="RUNNING", source="squeue", node_count=2, gpus=16,
                             nodelist="gpu[001-002]")
    job.nodes.set(Node.objects.filter(hostname__in=["gpu001", "gpu002"]))
    return job


def test_a_link_down_opens_a_ticket_with_its_impact_the_health_check_drain_joins_and_the_link_up_proposes_the_resume(  # noqa: E501
    small_fleet, emulated, job_on_gpu002
):
    poll_every_minute(emulated, 1, [LEAF])  # the portal has seen the port up
    port = port_of("gpu002")
    emulated.switches[LEAF].set_link_up(port, False)
    poll_every_minute(emulated, 1, [LEAF])

    (ticket,) = FaultTicket.objects.all()
    assert (ticket.category, ticket.port.name, ticket.node.hostname) == (
        Category.NIC_TRANSCEIVER, port, "gpu002")
    assert [job["job_id"] for job in ticket.impact["jobs"]] == ["1098"]
    assert ticket.impact["jobs"][0]["user"] == "alice"
    assert ticket.timeline.filter(text__startswith="Impact at detection: ").exists()

    slurm = SlurmSays()  # the node health check drains gpu002 while 1098 runs on it
    slurm.set("gpu002", "allocated", "DRAIN", reason="NHC: mlx5_4 (rail 3) link down")
    sync_node_states(driver=slurm)
    (ticket,) = FaultTicket.objects.all()
    assert ticket.sources == [Source.SWITCH, Source.SLURM] and ticket.event_count == 2

    emulated.switches[LEAF].set_link_up(port, True)
    poll_every_minute(emulated, 1, [LEAF])
    ticket.refresh_from_db()
    assert ticket.signal_cleared_at is not None
    assert ticket.timeline.filter(kind=TimelineKind.CLEARED, text__contains=port).exists()
    proposal = ticket.timeline.get(kind=TimelineKind.PROPOSAL, text__contains="recovery")
    assert "Resume the node in Slurm (gpu002)" in proposal.text
    assert [step.step for step in recovery_steps(ticket)] == ["resume", "shut_port"]


def test_a_port_shut_by_an_action_opens_a_ticket_linked_to_it_and_the_startup_answers_it(
    small_fleet, emulated, job_on_gpu002, make_user, client
):
    poll_every_minute(emulated, 1, [LEAF])
    operator = make_user(Role.OPERATOR)
    port = port_of("gpu002")
    switch = Switch.objects.get(hostname=LEAF)
    shut, _ = request_port_admin(switch=switch, ports=[port], up=False, reason="optics swap",
                                 requested_by=operator)
    run_action(action_id=shut.pk)
    (ticket,) = FaultTicket.objects.all()
    assert (ticket.category, ticket.subtype) == (Category.INTERCONNECT_SWITCH, "leaf")
    assert list(ticket.actions.all()) == [shut]
    assert ticket.timeline.get(action=shut).text.startswith(f"Caused by Action #{shut.pk}")
    assert ticket.impact["summary"]["running_jobs"] == 1
    # While the port is shut, starting it is the first (the page's primary) step.
    assert recovery_steps(ticket)[0].step == "start_port"
    # The Action's page links the ticket it opened, for the cluster-wide roles only.
    client.force_login(operator)
    assert f'href="/faults/{ticket.pk}/"' in client.get(f"/actions/{shut.pk}/").content.decode()

    start, _ = request_port_admin(switch=switch, ports=[port], up=True, reason="optics swapped",
                                  requested_by=operator)
    run_action(action_id=start.pk)
    assert set(ticket.actions.all()) == {shut, start}
    assert ticket.timeline.filter(kind=TimelineKind.CLEARED, action=start).exists()
    poll_every_minute(emulated, 1, [LEAF])  # the poll finds nothing new: no second ticket
    assert FaultTicket.objects.count() == 1


def test_a_node_down_keeps_its_impact_and_healthy_again_proposes_the_resume(
    small_fleet, job_on_gpu002, make_user
):
    slurm = SlurmSays()
    slurm.set("gpu001", "down", reason="Not responding")
    sync_node_states(driver=slurm)
    ticket = FaultTicket.objects.get(node__hostname="gpu001")
    assert ticket.impact["summary"]["nodes_out"] == "gpu001"
    assert [job["job_id"] for job in ticket.impact["jobs"]] == ["1098"]
    slurm.set("gpu001", "idle", "DRAIN", reason="Not responding")  # back, still drained
    sync_node_states(driver=slurm)
    assert ticket.timeline.filter(kind=TimelineKind.CLEARED, text__contains="drained").exists()
    assert ticket.timeline.filter(kind=TimelineKind.PROPOSAL,
                                  text__contains="Resume the node in Slurm (gpu001)").exists()
    resume = request_recovery(ticket=ticket, step="resume", actor=make_user(Role.ONCALL))
    slurm.set("gpu001", "idle")  # the resume went through
    sync_node_states(driver=slurm)
    assert ticket.timeline.filter(kind=TimelineKind.CLEARED, action=resume).exists()


def test_the_policy_may_resume_by_itself_when_the_signal_clears(small_fleet, settings):
    settings.FAULTS_POLICY_OVERRIDES = {"health_check_drain": {"auto_on_clear": ["resume"]}}
    slurm = SlurmSays()
    slurm.set("gpu003", "idle", "DRAIN", reason="NHC: mlx5_0 (rail 0) link down")
    sync_node_states(driver=slurm)
    ticket = FaultTicket.objects.get(node__hostname="gpu003")
    # NHC passes again and resumes the node itself: no resume needed, the clear is recorded.
    slurm.set("gpu003", "idle")
    sync_node_states(driver=slurm)
    assert ticket.timeline.filter(kind=TimelineKind.CLEARED).exists()
    assert not Action.objects.filter(kind="slurm.resume").exists()
    # A node DOWN that comes back drained is resumed by the policy, the ticket as the reason.
    settings.FAULTS_POLICY_OVERRIDES = {"node_down": {"auto_on_clear": ["resume"]}}
    slurm.set("gpu004", "down", reason="Not responding")
    sync_node_states(driver=slurm)
    down = FaultTicket.objects.get(node__hostname="gpu004")
    slurm.set("gpu004", "idle", "DRAIN", reason="Not responding")
    sync_node_states(driver=slurm)
    resume = Action.objects.get(kind="slurm.resume")
    assert resume.reason.startswith(down.reference) and resume in down.actions.all()


def test_a_job_ending_node_fail_opens_a_ticket_on_the_failed_node(small_fleet, job_on_gpu002):
    Node.objects.filter(hostname="gpu002").update(slurm_state="down")
    now = timezone.now()
    record = FinishedJob(
        job_id="1098", name="train", user="alice", account="tenant-a", partition="gpu",
        state="NODE_FAIL", exit_code=0, signal=None, submit_time=now - timedelta(hours=2),
        start_time=now - timedelta(hours=1), end_time=now, elapsed_seconds=3600, gpus=16,
        node_names=("gpu001", "gpu002"),
    )
    import_finished_jobs([record])
    import_finished_jobs([record])  # read again: no second signal
    (ticket,) = FaultTicket.objects.all()
    assert ticket.node.hostname == "gpu002" and ticket.job_id == "1098"
    assert "NODE_FAIL" in ticket.summary and ticket.sources == [Source.SLURM]


def test_an_unreachable_switch_opens_a_ticket_and_answering_again_is_recorded(
    small_fleet, emulated, settings
):
    settings.FABRIC_UNREACHABLE_AFTER_FAILURES = 2
    poll_every_minute(emulated, 1, ["spine-1"])
    emulated.set_unreachable("spine-1")
    poll_every_minute(emulated, 1, ["spine-1"])
    assert not FaultTicket.objects.exists()  # one lost poll is noise
    poll_every_minute(emulated, 2, ["spine-1"])
    (ticket,) = FaultTicket.objects.all()
    assert (ticket.category, ticket.subtype, ticket.switch.hostname) == (
        Category.INTERCONNECT_SWITCH, "spine", "spine-1")
    assert ticket.impact["summary"]["bisection"][0]["lost_fraction"] == 0.125
    emulated.set_unreachable("spine-1", False)
    poll_every_minute(emulated, 1, ["spine-1"])
    assert ticket.timeline.filter(kind=TimelineKind.CLEARED, text__contains="answers").exists()


def test_a_user_reported_gpu_ecc_ticket_proposes_the_drain_offered_in_one_click(
    small_fleet, make_user
):
    oncall = make_user(Role.ONCALL)
    node = Node.objects.get(hostname="gpu051")
    ticket, _ = submit_user_report(reported_by=oncall, summary="ECC errors on GPU 2",
                                   node=node, gpu=node.gpus.get(index=2))
    assert ticket.timeline.filter(kind=TimelineKind.PROPOSAL,
                                  text__contains="Drain the node in Slurm").exists()
    assert [step.step for step in recovery_steps(ticket, user=oncall)] == ["drain"]
    action = request_recovery(ticket=ticket, step="drain", actor=oncall)
    assert (action.kind, action.target) == ("slurm.drain", "gpu051")
    assert action.reason == f"{ticket.reference}: ECC errors on GPU 2"
    assert action in ticket.actions.all()
    ticket.refresh_from_db()
    assert ticket.acknowledged_at is not None and ticket.responder == oncall


def test_the_ticket_api_and_page_offer_recovery_in_one_click_and_keep_tenant_data_from_viewers(
    small_fleet, job_on_gpu002, api_as, make_user, client
):
    slurm = SlurmSays()
    slurm.set("gpu002", "down", reason="Not responding")
    sync_node_states(driver=slurm)
    ticket = FaultTicket.objects.get(node__hostname="gpu002")
    url = f"/api/faults/tickets/{ticket.pk}/"
    oncall = api_as(Role.ONCALL)
    body = oncall.get(url).json()
    assert body["impact"]["jobs"][0]["job_id"] == "1098"
    # The node is still down and the fault critical: resuming it needs confirming.
    # Still down, nothing cleared: restart it through Slurm first; resuming needs confirming.
    assert [step["step"] for step in body["recovery_steps"]] == ["reboot", "resume"]
    resume_step = body["recovery_steps"][1]
    assert (resume_step["step"], resume_step["label"]) == ("resume", "Resume gpu002")
    assert "critical" in resume_step["confirmation"]
    viewer = api_as(Role.VIEWER).get(url).json()
    assert viewer["impact"]["jobs"] == [] and viewer["impact"]["tenants"] == []
    assert viewer["recovery_steps"] == []
    assert "alice" not in str(viewer["impact"])
    unconfirmed = oncall.post(f"{url}recovery/", {"step": "resume"}, format="json")
    assert unconfirmed.status_code == 409 and "confirm" in unconfirmed.json()
    assert not Action.objects.filter(kind="slurm.resume").exists()
    response = oncall.post(f"{url}recovery/", {"step": "resume", "confirm": True}, format="json")
    assert response.status_code == 202
    action = Action.objects.get(pk=response.json()["id"])
    assert action.kind == "slurm.resume" and action.reason.startswith(ticket.reference)
    assert oncall.post(f"{url}recovery/", {"step": "shut_port"}, format="json").status_code == 400

    client.force_login(make_user(Role.ONCALL))
    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert 'id="ticket-impact"' in page and "1098" in page and 'data-step="resume"' in page


def test_planned_maintenance_is_not_a_fault_but_a_link_failing_during_it_is(
    small_fleet, emulated, job_on_gpu002, make_user, monkeypatch
):
    """Issue 26: the maintenance opened a fault ticket, counted in the Table 13 statistics.
    Its shut ports open none, neither from its Action nor from the next poll; a port that fails
    on its own during the work does; its end starts the ports and resumes the nodes."""
    from fabric.models import Maintenance
    from fabric.services import (
        host_facing_ports,
        maintenance_to_end,
        request_leaf_maintenance,
        request_maintenance_end,
    )
    from portal.models import ActionStatus

    slurm = SlurmSays()
    monkeypatch.setattr("jobs.drain_progress.get_slurm_driver", lambda: slurm)
    resumed = []
    resuming = type("Resume", (), {"resume": lambda self, names: resumed.extend(names)})()
    monkeypatch.setattr("fabric.action_handlers.get_slurm_driver", lambda: resuming)
    poll_every_minute(emulated, 1, [LEAF])
    operator = make_user(Role.OPERATOR)
    switch = Switch.objects.get(hostname=LEAF)
    maintenance, _ = request_leaf_maintenance(switch=switch, reason="replace PSU",
                                              requested_by=operator)
    drain = Action.objects.get(pk=maintenance.parameters["drain_action_id"])
    Action.objects.filter(pk=drain.pk).update(status=ActionStatus.SUCCEEDED)  # Slurm drained
    for name in maintenance.parameters["nodes"]:
        slurm.set(name, "idle", "DRAIN", reason="maintenance of leaf-p1-r3: replace PSU")
    assert run_action(action_id=maintenance.pk) == "succeeded"
    ports = host_facing_ports(switch)
    assert all(port.admin_status == "down" for port in switch.ports.filter(name__in=ports))
    poll_every_minute(emulated, 1, [LEAF])  # the poll sees them down too
    assert not FaultTicket.objects.exists()

    # An uplink of the same leaf, not the maintenance's to shut, fails meanwhile: a fault.
    spare = switch.ports.exclude(name__in=ports).filter(oper_status="up").first()
    emulated.switches[LEAF].set_link_up(spare.name, False)
    poll_every_minute(emulated, 1, [LEAF])
    (ticket,) = FaultTicket.objects.all()
    assert ticket.port == spare

    end, _ = request_maintenance_end(maintenance=maintenance_to_end(switch), reason="PSU in",
                                     requested_by=operator)
    assert end.parameters["ports"] == ports and end.parameters["nodes"] == [
        "gpu001", "gpu002", "gpu003", "gpu004"]
    assert run_action(action_id=end.pk) == "succeeded"
    assert resumed == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert all(port.admin_status == "up" for port in switch.ports.filter(name__in=ports))
    assert Maintenance.objects.get(start_action=maintenance).status == "ended"
    assert FaultTicket.objects.count() == 1


def test_the_story_port_shut_health_check_drain_port_up_resume_with_the_simulated_slurm(
    small_fleet, emulated, job_on_gpu002, make_user
):
    """The on-call story end to end at service level, with the simulated Slurm's node health
    check: shut gpu002's leaf port, the NHC drains gpu002 (one ticket, with 1098 in its impact),
    start the port, the ticket proposes the resume, resume from the ticket, the node is back."""
    from jobs.drivers.simulator import SimulatorDriver
    from tests.jobs.conftest import FakeClock

    slurm = SimulatorDriver(cluster="story", clock=FakeClock(), node_names=["gpu001", "gpu002"],
                            history_hours=0, mean_failure_seconds=0, mean_arrival_seconds=10**9)
    sync_node_states(driver=slurm)
    poll_every_minute(emulated, 1, [LEAF])
    operator = make_user(Role.OPERATOR)
    switch, port = Switch.objects.get(hostname=LEAF), port_of("gpu002")
    shut, _ = request_port_admin(switch=switch, ports=[port], up=False, reason="optics",
                                 requested_by=operator)
    run_action(action_id=shut.pk)
    sync_node_states(driver=slurm)  # the simulated NHC sees the rail down and drains gpu002
    (ticket,) = FaultTicket.objects.all()
    assert Node.objects.get(hostname="gpu002").slurm_state == "drained"
    assert ticket.sources == [Source.SWITCH, Source.SLURM]
    assert ticket.impact["jobs"][0]["job_id"] == "1098"

    start, _ = request_port_admin(switch=switch, ports=[port], up=True, reason="optics swapped",
                                  requested_by=operator)
    run_action(action_id=start.pk)
    assert ticket.timeline.filter(kind=TimelineKind.PROPOSAL, text__contains="gpu002").exists()
    resume = request_recovery(ticket=ticket, step="resume", actor=operator)
    slurm.resume(["gpu002"])  # what the worker's slurm.resume handler does
    sync_node_states(driver=slurm)
    assert Node.objects.get(hostname="gpu002").slurm_state == "idle"
    assert ticket.timeline.filter(kind=TimelineKind.CLEARED, action=resume).exists()
    assert set(ticket.actions.all()) == {shut, start, resume}

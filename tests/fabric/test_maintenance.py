"""A leaf maintenance at service level, on the emulated fabric with a Slurm that says what the
test sets: the deadline, shutting under running jobs, one maintenance per switch, and an end
that leaves alone what the maintenance did not do. (tests/fabric/test_maintenance_real_slurm.py
runs the wait against the real slurmctld.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fabric.drivers.base import get_fabric_driver
from fabric.models import Maintenance
from fabric.services import (
    host_facing_ports,
    maintenance_to_end,
    request_leaf_maintenance,
    request_maintenance_end,
)
from fabric.targets import switch_target
from inventory.models import Node, Switch
from jobs.drivers.base import SlurmJob, SlurmNodeState
from jobs.models import Job
from portal.errors import Conflict, InvalidInput
from portal.models import Action, ActionStatus, Role
from portal.services.actions import run_action

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: a small fleet and the emulated fabric
pytestmark = pytest.mark.django_db

LEAF = "leaf-p1-r3"
NODES = ["gpu001", "gpu002", "gpu003", "gpu004"]


class FakeSlurm:
    """Node states and running jobs as a test sets them; records resumes."""

    def __init__(self) -> None:
        self.states = {name: SlurmNodeState(name=name, state="idle", flags=("DRAIN",))
                       for name in NODES}
        self.running: list[SlurmJob] = []
        self.resumed: list[str] = []

    def run_job(self, job_id: str, node: str) -> None:
        self.running.append(SlurmJob(job_id=job_id, name="train", user="alice",
                                     account="tenant-a", partition="gpu", state="RUNNING",
                                     node_names=(node,), node_count=1, gpus=8))
        self.states[node] = SlurmNodeState(name=node, state="allocated", flags=("DRAIN",))

    def nodes(self, names=None):
        return [state for name, state in sorted(self.states.items())
                if names is None or name in names]

    def jobs(self):
        return list(self.running)

    def resume(self, names):
        self.resumed.extend(names)


@pytest.fixture
def slurm(monkeypatch):
    fake = FakeSlurm()
    monkeypatch.setattr("jobs.drain_progress.get_slurm_driver", lambda: fake)
    monkeypatch.setattr("fabric.action_handlers.get_slurm_driver", lambda: fake)
    return fake


@pytest.fixture
def operator(make_user):
    return make_user(Role.OPERATOR)


@pytest.fixture
def leaf(small_fleet, emulated) -> Switch:
    return Switch.objects.get(hostname=LEAF)


def drained(action: Action) -> None:
    Action.objects.filter(pk=action.parameters["drain_action_id"]).update(
        status=ActionStatus.SUCCEEDED)


def admin_states(switch: Switch, ports: list[str] | None = None) -> set[str]:
    """What the (emulated) switch itself says of the ports' admin state."""
    names = set(ports if ports is not None else host_facing_ports(switch))
    return {"up" if port.known_admin_up else "down"
            for port in get_fabric_driver(switch_target(switch)).ports() if port.name in names}


def test_it_waits_for_the_jobs_and_fails_at_the_deadline_naming_them_with_nothing_shut(
    leaf, slurm, operator
):
    slurm.run_job("1098", "gpu002")
    start, _ = request_leaf_maintenance(switch=leaf, reason="PSU", requested_by=operator)
    assert run_action(action_id=start.pk).startswith("waiting")
    start.refresh_from_db()
    assert start.result["phase"] == "draining"  # the drain Action has not run yet
    drained(start)
    Action.objects.filter(pk=start.pk).update(not_before=timezone.now())
    assert run_action(action_id=start.pk).startswith("waiting")
    start.refresh_from_db()
    assert start.result["progress"] == "waiting for 1 job (1098) on 1 node (gpu002)"
    assert start.result["waiting_on"] == {"gpu002": "draining"}
    assert admin_states(leaf) == {"up"}

    deadline = (timezone.now() - timedelta(seconds=1)).isoformat()
    Action.objects.filter(pk=start.pk).update(
        not_before=timezone.now(), parameters={**start.parameters, "deadline": deadline})
    assert run_action(action_id=start.pk) == "failed"
    start.refresh_from_db()
    assert "1 job (1098) on 1 node (gpu002)" in start.last_error
    assert f"no port of {LEAF} was shut" in start.last_error
    assert admin_states(leaf) == {"up"}
    maintenance = Maintenance.objects.get(start_action=start)
    assert maintenance.status == "failed"

    # Its end resumes the nodes it drained and starts nothing: it shut nothing.
    end, _ = request_maintenance_end(maintenance=maintenance_to_end(leaf), reason="called off",
                                     requested_by=operator)
    assert (end.parameters["ports"], end.parameters["nodes"]) == ([], NODES)
    assert run_action(action_id=end.pk) == "succeeded"
    assert slurm.resumed == NODES


def test_shutting_under_running_jobs_needs_a_reason_and_names_the_jobs(
    leaf, slurm, operator, tenant_a
):
    job = Job.objects.create(job_id="1098", user="alice", account="tenant-a", tenant=tenant_a,
                             state="RUNNING", source="squeue", node_count=1, gpus=8,
                             nodelist="gpu002")
    job.nodes.set(Node.objects.filter(hostname="gpu002"))
    with pytest.raises(InvalidInput) as refused:
        request_leaf_maintenance(switch=leaf, reason="PSU", requested_by=operator,
                                 shut_under_running_jobs=True)
    assert "force_reason" in refused.value.detail
    assert not Action.objects.exists()  # nothing drained either

    slurm.run_job("1098", "gpu002")
    start, _ = request_leaf_maintenance(switch=leaf, reason="PSU", requested_by=operator,
                                        shut_under_running_jobs=True,
                                        force_reason="PSU is smoking")
    assert start.parameters["forced_over_jobs"] == [
        {"job_id": "1098", "user": "alice", "account": "tenant-a"}]
    drained(start)
    assert run_action(action_id=start.pk) == "succeeded"
    start.refresh_from_db()
    assert [job["job_id"] for job in start.result["shut_under_running_jobs"]] == ["1098"]
    assert admin_states(leaf) == {"down"}


def test_one_maintenance_per_switch_and_the_end_leaves_what_it_did_not_do(
    leaf, slurm, operator
):
    ports = host_facing_ports(leaf)
    Node.objects.filter(hostname="gpu003").update(slurm_state="drained")  # a fault, before
    first_down = ports[0]
    get_fabric_driver(switch_target(leaf)).set_port_admin([first_down], False)
    start, _ = request_leaf_maintenance(switch=leaf, reason="PSU", requested_by=operator)
    with pytest.raises(Conflict):
        request_leaf_maintenance(switch=leaf, reason="again", requested_by=operator)
    drained(start)
    assert run_action(action_id=start.pk) == "succeeded"
    maintenance = Maintenance.objects.get(start_action=start)
    assert maintenance.shut_ports == ports[1:]
    end, _ = request_maintenance_end(maintenance=maintenance_to_end(leaf), reason="done",
                                     requested_by=operator)
    assert end.parameters["ports"] == ports[1:]
    assert end.parameters["nodes"] == ["gpu001", "gpu002", "gpu004"]
    assert end.parameters["kept_drained"] == {"gpu003": "drained before the maintenance"}
    assert run_action(action_id=end.pk) == "succeeded"
    assert admin_states(leaf, [first_down]) == {"down"}
    assert admin_states(leaf, ports[1:]) == {"up"}
    with pytest.raises(Conflict):
        maintenance_to_end(leaf)

"""Reboot requests: `request_reboot` -> one durable slurm.reboot Action -> the Slurm driver's
`scontrol reboot ASAP nextstate=...`, modelled by the simulated Slurm (REBOOT_REQUESTED + DRAIN
while jobs run, REBOOT_ISSUED while it boots, then a new boot time and the next state). The
Action succeeds only once every node is back, and fails with Slurm's words otherwise."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Node
from jobs.drivers.base import BatchJobRequest
from jobs.drivers.cluster_model import REBOOT_SECONDS
from jobs.drivers.simulator import BATCH_JOB_SECONDS
from jobs.services import (
    CANCEL_REBOOT_ACTION,
    REBOOT_ACTION,
    request_cancel_reboot,
    request_reboot,
)
from portal.errors import InvalidInput
from portal.models import Action, ActionStatus
from portal.services.actions import run_action


def run_now(action: Action) -> Action:
    """Run the Action now, as the worker will once its wait is over."""
    Action.objects.filter(pk=action.pk).update(not_before=None)
    run_action(action_id=action.pk)
    action.refresh_from_db()
    return action


@pytest.fixture
def nodes(db):
    return {
        name: Node.objects.create(hostname=name) for name in (f"gpu{n:03d}" for n in range(1, 5))
    }


@pytest.fixture
def simulator(make_simulator, monkeypatch):
    driver = make_simulator(nodes=4)
    monkeypatch.setattr("jobs.action_handlers.get_slurm_driver", lambda: driver)
    monkeypatch.setattr("jobs.action_handlers._refresh_node_states", lambda nodes: None)
    return driver


def test_reboot_is_one_action_that_succeeds_only_when_the_nodes_are_back(
    nodes, simulator, clock
):
    action, created = request_reboot(
        nodes=[nodes["gpu001"], nodes["gpu002"]], reason="driver 535 update", next_state="down"
    )
    assert created
    assert action.kind == REBOOT_ACTION
    assert action.target == "gpu[001-002]"
    assert {key: action.parameters[key] for key in ("nodes", "next_state")} == {
        "nodes": ["gpu001", "gpu002"], "next_state": "down"}

    # Idle nodes: Slurm issues the reboot at once; the Action waits for them to come back.
    action = run_now(action)
    assert action.status == ActionStatus.QUEUED, action.last_error
    assert action.result["waiting"] == {
        "gpu001": "reboot issued (rebooting)", "gpu002": "reboot issued (rebooting)"}
    states = {state.name: state for state in simulator.nodes()}
    for name in ("gpu001", "gpu002"):
        assert "REBOOT_ISSUED" in states[name].flags
        assert states[name].display_state == "rebooting"
        assert "DRAIN" in states[name].flags  # ASAP: no new job starts before the reboot
        assert states[name].reason.startswith("driver 535 update")
    assert not states["gpu003"].reboot_state

    clock.advance(seconds=REBOOT_SECONDS + 1)
    action = run_now(action)
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    states = {state.name: state for state in simulator.nodes()}
    for name in ("gpu001", "gpu002"):
        assert states[name].boot_time is not None
        assert action.result["boot_times"][name] == states[name].boot_time.isoformat()
        assert not states[name].reboot_state
        assert states[name].state == "down"  # next_state=down: back, but kept out of service


def test_a_busy_node_reboots_after_its_job_and_comes_back_resumed(nodes, simulator, clock):
    job_id = simulator.submit_batch_job(
        BatchJobRequest(node_name="gpu003", command="train", job_name="train")
    )
    action, _ = request_reboot(nodes=[nodes["gpu003"]], reason="FT-9: XID 79")
    action = run_now(action)
    assert action.status == ActionStatus.QUEUED
    (state,) = simulator.nodes(["gpu003"])
    assert state.reboot_state == "requested"  # sinfo's "@": waiting for job {job_id}
    assert (state.display_state, action.result["waiting"]["gpu003"]) == (
        "draining", "reboot requested (draining)")
    assert simulator.batch_job_state(job_id).state == "RUNNING"

    clock.advance(seconds=BATCH_JOB_SECONDS + 1)  # the job ends: the reboot is issued
    assert run_now(action).status == ActionStatus.QUEUED
    assert simulator.nodes(["gpu003"])[0].reboot_state == "issued"

    clock.advance(seconds=REBOOT_SECONDS + 1)
    assert run_now(action).status == ActionStatus.SUCCEEDED
    (state,) = simulator.nodes(["gpu003"])
    assert (state.state, state.flags, state.reason) == ("idle", (), "")  # nextstate=RESUME


def test_a_reboot_that_misses_its_deadline_fails_naming_the_node(nodes, simulator, settings):
    settings.SLURM_REBOOT_DEADLINE_SECONDS = 60
    action, _ = request_reboot(nodes=[nodes["gpu004"]], reason="stuck")
    action = run_now(action)
    assert action.status == ActionStatus.QUEUED
    parameters = {**action.parameters,
                  "deadline": (timezone.now() - timedelta(seconds=1)).isoformat()}
    Action.objects.filter(pk=action.pk).update(parameters=parameters)
    action = run_now(action)  # the simulated clock did not move: the node is still booting
    assert action.status == ActionStatus.FAILED
    assert "not finished by its deadline: gpu004: reboot issued (rebooting)" in action.last_error


def test_a_cancelled_reboot_fails_the_waiting_reboot_action(nodes, simulator, clock):
    simulator.submit_batch_job(
        BatchJobRequest(node_name="gpu002", command="train", job_name="train")
    )
    reboot, _ = request_reboot(nodes=[nodes["gpu002"]], reason="maybe later")
    assert run_now(reboot).status == ActionStatus.QUEUED

    cancel, _ = request_cancel_reboot(nodes=[nodes["gpu002"]], reason="job is important")
    assert cancel.kind == CANCEL_REBOOT_ACTION
    assert run_now(cancel).status == ActionStatus.SUCCEEDED
    (state,) = simulator.nodes(["gpu002"])
    # Slurm 22.05 lifts the request and the drain ASAP added (measured: MIXED+DRAIN+
    # REBOOT_REQUESTED -> MIXED): the job runs on, new jobs may start.
    assert (state.reboot_state, "DRAIN" in state.flags, state.reason) == ("", False, "")

    reboot = run_now(reboot)
    assert reboot.status == ActionStatus.FAILED
    assert "gpu002: Slurm ended the reboot without a new boot: it was cancelled" in (
        reboot.last_error)


def test_same_idempotency_key_gives_the_same_action(nodes, simulator):
    first, created = request_reboot(nodes=[nodes["gpu003"]], reason="x", idempotency_key="k1")
    again, created_again = request_reboot(nodes=[nodes["gpu003"]], reason="x", idempotency_key="k1")
    assert created and not created_again
    assert first.pk == again.pk
    assert Action.objects.filter(kind=REBOOT_ACTION).count() == 1


def test_a_node_already_rebooting_keeps_its_first_request(nodes, simulator, clock):
    first, _ = request_reboot(nodes=[nodes["gpu004"]], reason="first", next_state="down")
    assert run_now(first).status == ActionStatus.QUEUED
    second, _ = request_reboot(nodes=[nodes["gpu004"]], reason="second", next_state="resume")
    assert run_now(second).status == ActionStatus.QUEUED
    assert simulator.nodes(["gpu004"])[0].reason.startswith("first")
    # Both wait on the one reboot, and both end when it does (in its next state, down).
    clock.advance(seconds=REBOOT_SECONDS + 1)
    assert run_now(first).status == ActionStatus.SUCCEEDED
    second = run_now(second)
    assert second.status == ActionStatus.FAILED
    assert "gpu004: rebooted but down" in second.last_error


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"reason": "x", "next_state": "idle"}, "next_state"),
        ({"reason": "", "next_state": "resume"}, "reason"),
    ],
)
def test_bad_input_names_the_field_and_queues_nothing(nodes, arguments, field):
    with pytest.raises(InvalidInput) as error:
        request_reboot(nodes=[nodes["gpu001"]], **arguments)
    assert field in error.value.detail
    assert not Action.objects.exists()


REBOOT_URL = "/api/jobs/nodes/reboot/"


def test_the_api_queues_one_reboot_action_with_next_state(operator_api, nodes, simulator):
    response = operator_api.post(
        REBOOT_URL, {"hostlist": "gpu[001-003]", "reason": "BIOS update", "next_state": "down"}
    )
    assert response.status_code == 202, response.content
    action = Action.objects.get(kind=REBOOT_ACTION)
    assert action.target == "gpu[001-003]"
    assert action.parameters["next_state"] == "down"
    assert run_now(action).status == ActionStatus.QUEUED
    assert all(s.reboot_state == "issued" for s in simulator.nodes(["gpu001", "gpu003"]))


def test_the_api_names_a_bad_next_state(operator_api, nodes):
    response = operator_api.post(
        REBOOT_URL, {"hostlist": "gpu001", "reason": "x", "next_state": "idle"}
    )
    assert response.status_code == 400
    assert "next_state" in response.json()
    assert not Action.objects.exists()


def test_the_demos_simulator_finishes_a_reboot_on_the_wall_clock(nodes, monkeypatch):
    """`make demo` runs the simulator on the real clock (no RebootProgram, no BMC): a reboot
    asked for there must end by itself, the node back and the Action succeeded, not hang or
    end DOWN "reboot timed out". REBOOT_SECONDS of real time, so this test waits that long."""
    import time

    from jobs.drivers.simulator import SimulatorDriver

    driver = SimulatorDriver(cluster="demo-reboot", node_names=["gpu001"], history_hours=0,
                             mean_failure_seconds=0, mean_arrival_seconds=10**9)  # fmt: skip
    monkeypatch.setattr("jobs.action_handlers.get_slurm_driver", lambda: driver)
    monkeypatch.setattr("jobs.action_handlers._refresh_node_states", lambda nodes: None)
    action, _ = request_reboot(nodes=[nodes["gpu001"]], reason="demo: reboot")
    deadline = time.monotonic() + REBOOT_SECONDS + 15
    while (action := run_now(action)).status == ActionStatus.QUEUED:
        assert time.monotonic() < deadline, action.result
        time.sleep(1)
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    (state,) = driver.nodes(["gpu001"])
    assert (state.state, state.reboot_state, state.reason) == ("idle", "", "")

"""Validate, then resume ("slurm.validate") against the simulated Slurm on a fake clock: the node
is reserved, resumed, runs the validation job inside the reservation, and stays in service only
if the job passes. The same Action against the real slurmctld:
tests/jobs/test_validation_run_real_slurm.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs import validation_run
from jobs.drivers.simulator import BATCH_JOB_SECONDS
from jobs.validation_run import VALIDATE_ACTION, validation_parameters
from portal.models import Action, ActionStatus
from portal.services.actions import enqueue_action, run_action

GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "validation" / "gpu-check"
NODE = "gpu002"


@pytest.fixture
def driver(make_simulator, monkeypatch):
    driver = make_simulator(nodes=4)
    driver.drain([NODE], "FT-7: Xid 79, reseated the GPU")
    # The fake clock's simulator stands in for the configured one, so a job can finish at once.
    monkeypatch.setattr(validation_run, "get_slurm_driver", lambda: driver)
    return driver


def validate(tmp_path, command: str) -> Action:
    action, _ = enqueue_action(
        kind=VALIDATE_ACTION,
        target=NODE,
        reason="FT-7: validate, then resume",
        parameters=validation_parameters(
            node=NODE,
            ref="FT-7",
            command=command,
            account="portal",
            minutes=10,
            output_path=str(tmp_path / "validate.out"),
        ),
    )
    return action


def run_now(action: Action) -> Action:
    Action.objects.filter(pk=action.pk).update(not_before=None)  # the check is due now
    run_action(action_id=action.pk)
    action.refresh_from_db()
    return action


def test_a_passing_validation_leaves_the_node_in_service(driver, clock, tmp_path):
    action = run_now(validate(tmp_path, str(GPU_CHECK)))

    # Waiting for its job: the node is idle but reserved, running only the validation job.
    assert action.status == ActionStatus.QUEUED, action.last_error
    assert action.result["phase"] == "running"
    (node,) = driver.nodes([NODE])
    assert "DRAIN" not in node.flags
    (reservation,) = driver.reservations()
    assert (reservation.name, reservation.node_names, reservation.accounts) == (
        "validate-FT-7",
        (NODE,),
        ("portal",),
    )
    assert set(reservation.flags) == {"MAINT", "IGNORE_JOBS"}
    (job,) = [job for job in driver.jobs() if job.job_id == action.result["job_id"]]
    assert (job.name, job.node_names) == ("validate-FT-7", (NODE,))

    clock.advance(seconds=BATCH_JOB_SECONDS + 1)
    action = run_now(action)

    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert action.result["passed"] is True
    assert (action.result["state"], action.result["exit_code"]) == ("COMPLETED", 0)
    assert "all 8 GPUs passed" in action.result["output_tail"]
    (node,) = driver.nodes([NODE])
    assert not {"DRAIN", "RESERVED"} & set(node.flags)
    assert driver.reservations() == []


def test_a_failing_validation_drains_the_node_again(driver, clock, tmp_path):
    marker = tmp_path / "fail"
    marker.touch()
    action = run_now(validate(tmp_path, f"GPU_CHECK_FAIL_MARKER={marker} {GPU_CHECK}"))
    clock.advance(seconds=BATCH_JOB_SECONDS + 1)
    action = run_now(action)

    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert (action.result["passed"], action.result["exit_code"]) == (False, 1)
    job_id = action.result["job_id"]
    (node,) = driver.nodes([NODE])
    assert "DRAIN" in node.flags and "RESERVED" not in node.flags
    assert node.reason == f"FT-7: validation failed: job {job_id} FAILED exit 1"
    assert driver.reservations() == []


def test_a_node_drained_by_nhc_is_left_to_nhc(driver, tmp_path):
    driver.drain([NODE], "NHC: check_hw_ib: ib0 down")

    action = run_now(validate(tmp_path, str(GPU_CHECK)))

    assert action.status == ActionStatus.FAILED
    assert "node health check" in action.last_error
    (node,) = driver.nodes([NODE])
    assert "DRAIN" in node.flags and node.reason == "NHC: check_hw_ib: ib0 down"
    assert driver.reservations() == [] and driver.jobs() == []

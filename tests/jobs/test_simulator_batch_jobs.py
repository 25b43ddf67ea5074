"""Batch jobs in the simulated Slurm, as the CLI driver runs them against the real one
(tests/jobs/test_batch_jobs_real_slurm.py): the validation run on one node inside its
maintenance reservation, queued, running, then COMPLETED or FAILED with the command's exit code."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from jobs.drivers.base import BatchJobRequest, BatchJobState, SlurmRejected, SlurmReservation
from jobs.drivers.simulator import BATCH_JOB_SECONDS

GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "validation" / "gpu-check"


@pytest.fixture
def driver(make_simulator, clock):
    driver = make_simulator(nodes=4)
    driver.create_or_update_reservation(
        SlurmReservation(
            name="validate-FT-1",
            accounts=("portal",),
            node_names=("gpu002",),
            start=clock.now,
            end=clock.now + timedelta(minutes=30),
            flags=("MAINT", "IGNORE_JOBS"),
        )
    )
    return driver


def validation(tmp_path, command: str, reservation: str = "validate-FT-1") -> BatchJobRequest:
    return BatchJobRequest(
        node_name="gpu002",
        command=command,
        job_name="validate-FT-1",
        account="portal",
        reservation=reservation,
        output_path=str(tmp_path / "validate.out"),
    )


def test_a_passing_check_runs_then_completes(driver, clock, tmp_path):
    job_id = driver.submit_batch_job(validation(tmp_path, str(GPU_CHECK)))

    assert driver.batch_job_state(job_id) == BatchJobState(job_id=job_id, state="RUNNING")
    (running,) = [job for job in driver.jobs() if job.job_id == job_id]
    assert running.node_names == ("gpu002",)
    clock.advance(seconds=BATCH_JOB_SECONDS + 1)

    state = driver.batch_job_state(job_id)
    assert state == BatchJobState(job_id=job_id, state="COMPLETED", exit_code=0)
    assert state.passed
    assert "all 8 GPUs passed" in (tmp_path / "validate.out").read_text()


def test_a_failing_check_ends_failed_with_its_exit_code(driver, clock, tmp_path):
    marker = tmp_path / "fail"
    marker.touch()
    job_id = driver.submit_batch_job(
        validation(tmp_path, f"GPU_CHECK_FAIL_MARKER={marker} {GPU_CHECK}")
    )
    clock.advance(seconds=BATCH_JOB_SECONDS + 1)

    state = driver.batch_job_state(job_id)
    assert (state.state, state.exit_code, state.passed) == ("FAILED", 1, False)
    assert "memory test FAILED" in (tmp_path / "validate.out").read_text()


def test_a_reservation_that_does_not_hold_the_node_is_refused(driver, tmp_path):
    with pytest.raises(SlurmRejected, match="nowhere"):
        driver.submit_batch_job(validation(tmp_path, str(GPU_CHECK), reservation="nowhere"))


def test_an_unknown_job_id_is_refused(driver):
    with pytest.raises(SlurmRejected, match="999999"):
        driver.batch_job_state("999999")

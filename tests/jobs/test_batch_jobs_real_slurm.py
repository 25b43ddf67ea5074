"""Batch jobs through the CLI driver against the real slurmctld 22.05 of the tests: the
validation run a repaired node must pass goes into a maintenance reservation on that node
(`sbatch --reservation -w node -N1 --wrap`), and its state and exit code are read back.

Run: .venv/bin/python -m pytest tests/jobs/test_batch_jobs_real_slurm.py -q
Needs root, MariaDB, PostgreSQL and Redis (DATABASE_URL / REDIS_URL), like `make test`.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobs.drivers.base import (
    BatchJobRequest,
    BatchJobState,
    SlurmNotSupported,
    SlurmRejected,
    SlurmReservation,
)
from jobs.drivers.cli import ScontrolDriver
from jobs.drivers.slurmrestd import SlurmrestdDriver
from tests.jobs import slurm_cluster

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm
pytestmark = [pytest.mark.slurm]

GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "validation" / "gpu-check"
NODE = "gpu004"
RESERVATION = "validate-test"
JOB_TIMEOUT = 60


@pytest.fixture
def driver(real_slurm) -> ScontrolDriver:
    return ScontrolDriver(conf=real_slurm.conf, timeout=30)


@pytest.fixture
def maintenance_reservation(driver, real_slurm):
    driver.create_or_update_reservation(
        SlurmReservation(
            name=RESERVATION,
            accounts=("root",),
            node_names=(NODE,),
            start=datetime.now(UTC),
            end=datetime.now(UTC) + timedelta(minutes=30),
            flags=("MAINT", "IGNORE_JOBS"),
        )
    )
    yield RESERVATION
    driver.delete_reservation(RESERVATION)


def wait_until_finished(driver, job_id: str) -> BatchJobState:
    deadline = time.monotonic() + JOB_TIMEOUT
    while time.monotonic() < deadline:
        state = driver.batch_job_state(job_id)
        if state.finished:
            return state
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not finish in {JOB_TIMEOUT}s: {state}")


def validation(tmp_path, command: str) -> BatchJobRequest:
    return BatchJobRequest(
        node_name=NODE,
        command=command,
        job_name="validate-FT-1",
        account="root",
        reservation=RESERVATION,
        time_limit_minutes=5,
        output_path=str(tmp_path / "validate.out"),
    )


def test_a_passing_check_completes_on_the_reserved_node(
    driver, maintenance_reservation, real_slurm, tmp_path
):
    job_id = driver.submit_batch_job(validation(tmp_path, str(GPU_CHECK)))

    state = wait_until_finished(driver, job_id)

    assert state == BatchJobState(job_id=job_id, state="COMPLETED", exit_code=0)
    assert state.passed
    shown = real_slurm.run("scontrol", "-o", "show", "job", job_id).stdout
    assert f"NodeList={NODE}" in shown and f"Reservation={RESERVATION}" in shown
    assert "all 8 GPUs passed" in (tmp_path / "validate.out").read_text()


def test_a_failing_check_reports_its_exit_code(
    driver, maintenance_reservation, real_slurm, tmp_path
):
    marker = tmp_path / "fail"
    marker.touch()
    command = f"GPU_CHECK_FAIL_MARKER={marker} {GPU_CHECK}"

    state = wait_until_finished(driver, driver.submit_batch_job(validation(tmp_path, command)))

    assert (state.state, state.exit_code, state.passed) == ("FAILED", 1, False)
    assert "memory test FAILED" in (tmp_path / "validate.out").read_text()


def test_a_reservation_that_does_not_exist_is_refused_with_slurms_words(driver, tmp_path):
    request = validation(tmp_path, str(GPU_CHECK))

    with pytest.raises(SlurmRejected, match=r"(?i)reservation"):
        driver.submit_batch_job(request)


def test_an_unknown_job_id_is_refused(driver):
    with pytest.raises(SlurmRejected, match="999999"):
        driver.batch_job_state("999999")


def test_slurmrestd_of_22_05_says_it_cannot_pin_a_job_to_a_node(real_slurm, tmp_path):
    token = slurm_cluster.slurmrestd_token(real_slurm.info, username="slurmrest", lifespan=600)
    rest = SlurmrestdDriver(
        url=real_slurm.info["slurmrestd_url"], user="slurmrest", token=token, timeout=30
    )

    with pytest.raises(SlurmNotSupported, match="required_nodes"):
        rest.submit_batch_job(validation(tmp_path, str(GPU_CHECK)))

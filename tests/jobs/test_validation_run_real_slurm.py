"""Validate, then resume ("slurm.validate") against the real slurmctld 22.05 of the tests
through the CLI driver: pass leaves the node in service, fail drains it again; either way the
maintenance reservation is gone afterwards. Checked with Slurm's own sinfo/scontrol.

Run: .venv/bin/python -m pytest tests/jobs/test_validation_run_real_slurm.py -q
Needs root, MariaDB, PostgreSQL and Redis (DATABASE_URL / REDIS_URL), like `make test`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jobs.drivers.base import reset_slurm_driver
from jobs.validation_run import VALIDATE_ACTION, validation_parameters
from portal.models import Action, ActionStatus
from portal.services.actions import enqueue_action, run_action
from tests.jobs.slurm_fixtures import sinfo_state_and_reason

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm
pytestmark = [pytest.mark.slurm, pytest.mark.django_db]

GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "validation" / "gpu-check"
NODE = "gpu006"
ACTION_TIMEOUT = 60


@pytest.fixture
def cli_driver(settings, real_slurm):
    settings.SLURM_DRIVER = "jobs.drivers.cli.ScontrolDriver"
    settings.SLURM_CONF = real_slurm.conf
    settings.SLURM_COMMAND_TIMEOUT = 30
    reset_slurm_driver()
    real_slurm.run("scontrol", "update", f"NodeName={NODE}", "State=DRAIN", "Reason=FT-9: repair")
    yield
    real_slurm.run("scontrol", "delete", "ReservationName=validate-FT-9", check=False)
    real_slurm.restore_nodes([NODE])
    reset_slurm_driver()


def validate_until_done(tmp_path, command: str) -> Action:
    action, _ = enqueue_action(
        kind=VALIDATE_ACTION,
        target=NODE,
        reason="FT-9: validate, then resume",
        parameters=validation_parameters(
            node=NODE,
            ref="FT-9",
            command=command,
            account="root",
            minutes=5,
            output_path=str(tmp_path / "validate.out"),
        ),
    )
    deadline = time.monotonic() + ACTION_TIMEOUT
    while time.monotonic() < deadline:
        Action.objects.filter(pk=action.pk).update(not_before=None)
        run_action(action_id=action.pk)
        action.refresh_from_db()
        if action.status != ActionStatus.QUEUED:
            return action
        time.sleep(0.5)
    raise AssertionError(f"validation Action still {action.status}: {action.result}")


def test_a_passing_validation_puts_the_node_back_in_service(cli_driver, real_slurm, tmp_path):
    action = validate_until_done(tmp_path, str(GPU_CHECK))

    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert (action.result["passed"], action.result["exit_code"]) == (True, 0)
    shown = real_slurm.run("scontrol", "-o", "show", "job", action.result["job_id"]).stdout
    # (The reservation is gone by now, so scontrol no longer names it; test_batch_jobs_real_slurm
    # shows the job running inside it.)
    assert f" NodeList={NODE} " in shown
    assert "all 8 GPUs passed" in action.result["output_tail"]
    state, reason = sinfo_state_and_reason(real_slurm, NODE)
    assert (state, reason) == ("idle", "none")  # sinfo %E prints "none" for no reason
    reservations = real_slurm.run("scontrol", "-o", "show", "reservation").stdout
    assert "validate-FT-9" not in reservations


def test_a_failing_validation_drains_the_node_again(cli_driver, real_slurm, tmp_path):
    marker = tmp_path / "fail"
    marker.touch()

    action = validate_until_done(tmp_path, f"GPU_CHECK_FAIL_MARKER={marker} {GPU_CHECK}")

    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert (action.result["passed"], action.result["exit_code"]) == (False, 1)
    state, reason = sinfo_state_and_reason(real_slurm, NODE)
    assert "drain" in state
    assert reason == f"FT-9: validation failed: job {action.result['job_id']} FAILED exit 1"
    reservations = real_slurm.run("scontrol", "-o", "show", "reservation").stdout
    assert "validate-FT-9" not in reservations

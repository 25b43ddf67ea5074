"""A maintenance window planned ahead of time against the real slurmctld, through a real Celery
worker: its "fabric.window_reservation" Action creates a Slurm reservation with flags=MAINT on
its nodes, so a job that would run across the window is not started on them while one that
ends before it is; cancelling the window deletes the reservation. Read back with Slurm's own
`scontrol` and `squeue`, not with portal code (issue 26 item 2).
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from fabric.maintenance_windows import (
    WINDOW_RESERVATION_ACTION,
    cancel_maintenance_window,
    create_maintenance_window,
)
from inventory.hostlist import expand_hostlist
from portal.models import Action, ActionStatus
from tests.jobs.test_reservations_real_slurm import slurm_reservations, slurm_time

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm, fleet
pytestmark = [pytest.mark.slurm, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ACTION_TIMEOUT = 30


@pytest.fixture
def worker(celery_worker_process, real_slurm):
    celery_worker_process.extra_env = {
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": real_slurm.conf,
        "SLURM_COMMAND_TIMEOUT": "30",
    }
    celery_worker_process.start()
    return celery_worker_process


@pytest.fixture
def jobs_cleaned(real_slurm):
    submitted: list[str] = []
    yield submitted
    real_slurm.cancel_jobs(submitted)
    for name in slurm_reservations(real_slurm):
        if name.startswith("portal-maint-"):
            real_slurm.run("scontrol", "delete", f"ReservationName={name}", check=False)


def last_reservation_action(window) -> Action:
    deadline = time.monotonic() + ACTION_TIMEOUT
    action = Action.objects.filter(kind=WINDOW_RESERVATION_ACTION,
                                   parameters__window_id=window.pk).order_by("-pk").first()
    while time.monotonic() < deadline:
        action.refresh_from_db()
        if action.status == ActionStatus.SUCCEEDED:
            return action
        if action.is_terminal:
            break
        time.sleep(0.1)
    pytest.fail(f"Action #{action.pk} is {action.status}: {action.last_error}")


def submit(real_slurm, node: str, minutes: int) -> str:
    out = real_slurm.run(
        "sbatch", "--parsable", f"--chdir={real_slurm.job_dir}",
        f"--output={real_slurm.job_dir}/slurm-%j.out", "--job-name=window-test", "--nodes=1",
        f"--nodelist={node}", f"--time={minutes}", "--wrap", "sleep 300",
    ).stdout.strip()
    return out.split(";")[0]


def state_and_reason(real_slurm, job_id: str) -> tuple[str, str]:
    line = real_slurm.run("squeue", "-h", "-j", job_id, "-o", "%T|%r").stdout.strip()
    state, _, reason = line.partition("|")
    return state, reason


def settled(real_slurm, job_id: str) -> tuple[str, str]:
    """The job's state once the scheduler has looked at it (a fresh job is PENDING/None)."""
    deadline = time.monotonic() + 30
    state, reason = state_and_reason(real_slurm, job_id)
    while time.monotonic() < deadline and (state, reason) == ("PENDING", "None"):
        time.sleep(0.5)
        state, reason = state_and_reason(real_slurm, job_id)
    return state, reason


def idle_nodes(real_slurm, count: int) -> list[str]:
    """Nodes Slurm reports idle now: the test cluster is shared, and a node another test
    reboots or drains would keep even a short job pending."""
    out = real_slurm.run("sinfo", "-h", "-N", "-t", "idle", "-o", "%N").stdout.split()
    names = sorted(set(out), reverse=True)[:count]
    assert len(names) == count, f"fewer than {count} idle nodes: {out}"
    return sorted(names)


def test_a_planned_window_is_a_maint_reservation_that_keeps_jobs_from_running_across_it(
    worker, fleet, real_slurm, jobs_cleaned
):
    across_node, before_node = nodes = idle_nodes(real_slurm, 2)
    start = (timezone.now() + timedelta(minutes=10)).replace(microsecond=0)
    end = start + timedelta(hours=1)
    window = create_maintenance_window(planned_start=start, planned_end=end,
                                       hostlist=",".join(nodes), reason="PSU swap in rack 5")
    result = last_reservation_action(window).result

    held = slurm_reservations(real_slurm)[f"portal-maint-{window.pk}"]
    assert "MAINT" in held["Flags"].split(",")
    assert expand_hostlist(held["Nodes"]) == nodes
    assert (held["StartTime"], held["EndTime"]) == (slurm_time(start), slurm_time(end))
    assert result["flags"] == ["MAINT", "IGNORE_JOBS"]

    # 60 minutes from now would run into the window: Slurm does not start it.
    across = submit(real_slurm, across_node, minutes=60)
    jobs_cleaned.append(across)
    state, reason = settled(real_slurm, across)
    assert state == "PENDING"
    assert "ReqNodeNotAvail" in reason or "Reserv" in reason, reason
    # 2 minutes end well before it: the node is not taken out of service early.
    before = submit(real_slurm, before_node, minutes=2)
    jobs_cleaned.append(before)
    assert settled(real_slurm, before) == ("RUNNING", "None")

    cancel_maintenance_window(window)
    last_reservation_action(window)
    assert f"portal-maint-{window.pk}" not in slurm_reservations(real_slurm)

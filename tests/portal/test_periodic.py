"""Periodic work never stacks and never waits in the web process.

The lease (portal/periodic.py) keeps a scheduled task to one run at a time, counts overruns and
skips for the dashboard; the embedded scheduler (portal/scheduler.py) drops the starts an overrun
covered instead of running them back to back, and runs at most CONCURRENCY tasks at once.
The embedded default's own process layout is tested on a real demo in test_embedded_default.py.
"""

from __future__ import annotations

import itertools
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from portal.celery import app
from portal.models import PeriodicTaskState
from portal.periodic import BEAT_HEADER, NonOverlappingTask
from portal.scheduler import Schedule
from portal.services.periodic import claim_periodic_run, finish_periodic_run, lease_seconds
from tests.support import wait_for

SWEEP = "portal.tasks.sweep_stuck_actions"


def test_every_scheduled_task_is_non_overlapping():
    app.loader.import_default_modules()
    plain = [
        entry["task"]
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
        if not isinstance(app.tasks[entry["task"]], NonOverlappingTask)
    ]
    assert not plain, f"scheduled tasks without base=NonOverlappingTask: {plain}"


@pytest.mark.django_db
def test_a_run_that_finds_the_lease_held_is_skipped_and_counted():
    first = claim_periodic_run(SWEEP, 30.0)
    assert first is not None
    assert claim_periodic_run(SWEEP, 30.0) is None
    assert claim_periodic_run(SWEEP, 30.0) is None
    state = PeriodicTaskState.objects.get(task=SWEEP)
    assert (state.skipped_runs, state.overran_runs) == (2, 0)
    assert state.running_since == first.started_at
    assert state.last_overrun_at is not None

    finish_periodic_run(first)
    state.refresh_from_db()
    assert state.running_since is None and state.last_duration_seconds is not None
    assert claim_periodic_run(SWEEP, 30.0) is not None  # free again


@pytest.mark.django_db
def test_a_run_longer_than_its_interval_counts_as_an_overrun():
    claim = claim_periodic_run(SWEEP, 0.05)
    time.sleep(0.1)
    assert finish_periodic_run(claim) > 0.05
    state = PeriodicTaskState.objects.get(task=SWEEP)
    assert state.overran_runs == 1 and state.last_duration_seconds >= 0.1


@pytest.mark.django_db
def test_a_lease_left_by_a_killed_worker_expires():
    stale = timezone.now() - timedelta(seconds=lease_seconds(30.0) + 1)
    PeriodicTaskState.objects.create(task=SWEEP, running_since=stale, last_run_by="gone:1")
    claim = claim_periodic_run(SWEEP, 30.0)
    assert claim is not None
    state = PeriodicTaskState.objects.get(task=SWEEP)
    assert state.running_since == claim.started_at and state.skipped_runs == 0


@pytest.mark.django_db
def test_a_scheduled_run_skips_while_one_holds_the_lease_and_a_manual_call_does_not():
    from portal.tasks import sweep_stuck_actions

    PeriodicTaskState.objects.create(task=SWEEP, running_since=timezone.now())
    scheduled = sweep_stuck_actions.apply(headers={BEAT_HEADER: True}).get()
    assert scheduled == {"skipped": "previous run still running"}
    assert PeriodicTaskState.objects.get(task=SWEEP).skipped_runs == 1

    by_hand = sweep_stuck_actions.apply().get()
    assert "skipped" not in by_hand  # the sweeper ran: an operator's one-off is never refused

    PeriodicTaskState.objects.filter(task=SWEEP).update(running_since=None)
    assert "skipped" not in sweep_stuck_actions.apply(headers={BEAT_HEADER: True}).get()
    state = PeriodicTaskState.objects.get(task=SWEEP)
    assert state.running_since is None and state.last_finished_at is not None


def test_the_schedule_drops_the_starts_an_overrun_covered():
    runs = []

    def slow():
        runs.append(time.monotonic())
        time.sleep(0.35)

    schedule = Schedule([("slow", 0.1, slow)], concurrency=2)
    schedule.start()
    try:
        wait_for(lambda: len(runs) >= 3, 10, "three runs of the slow task")
    finally:
        schedule.stop()
    # Each run starts after the previous one ended: the starts in between were skipped and
    # counted (about three per run), not run back to back.
    gaps = [later - earlier for earlier, later in itertools.pairwise(runs)]
    assert all(gap >= 0.35 for gap in gaps), gaps
    assert schedule.skipped["slow"] >= 4


def test_the_schedule_runs_at_most_its_concurrency_at_once():
    lock = threading.Lock()
    running = {"now": 0, "most": 0, "runs": 0}

    def work():
        with lock:
            running["now"] += 1
            running["runs"] += 1
            running["most"] = max(running["most"], running["now"])
        time.sleep(0.15)
        with lock:
            running["now"] -= 1

    schedule = Schedule([(f"task{i}", 0.05, work) for i in range(4)], concurrency=2)
    schedule.start()
    try:
        wait_for(lambda: running["runs"] >= 8, 10, "eight runs of the four tasks")
    finally:
        schedule.stop()
    assert running["most"] == 2


@pytest.mark.django_db
def test_the_services_card_shows_work_that_falls_behind(client, make_user):
    now = timezone.now()
    PeriodicTaskState.objects.create(
        task="fabric.tasks.poll_fabric_counters",
        interval_seconds=60,
        last_started_at=now - timedelta(seconds=103),
        last_finished_at=now,
        last_duration_seconds=103.0,
        overran_runs=1,
        skipped_runs=1,
        last_overrun_at=now,
    )
    client.force_login(make_user("operator"))
    page = client.get(reverse("dashboard")).content.decode()
    row = page.split('data-periodic-task="fabric-poll-counters"', 1)[1].split("</tr>", 1)[0]
    assert "behind" in row and "103.0 s" in row
    assert 'data-periodic-task="jobs-sync-node-states"' in page  # not run yet, still listed

    client.force_login(make_user("tenant_admin"))
    assert "data-periodic-task" not in client.get(reverse("dashboard")).content.decode()

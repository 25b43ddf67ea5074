"""Quick Actions (a drain, a resume) are carried out by the process that queued them, right after
the commit, not across the broker by a worker (issue 28: a drain within 2x a bare `scontrol
update`; portal/services/actions.py, _ActionRunner). The request writes the Action already
claimed by its process; the row is still written first, and the worker still takes what that
process cannot."""

from __future__ import annotations

import asyncio
import json
import threading
from unittest import mock

import pytest
from channels.layers import get_channel_layer
from django.db import connection, transaction

from inventory.models import Node
from jobs.drivers.simulator import SimulatorDriver
from jobs.services import DRAIN_ACTION, request_drain
from portal.actions.registry import get_action_handler
from portal.errors import Conflict
from portal.models import Action, ActionAttempt, ActionStatus, AuditEntry, Role
from portal.services import actions as action_services
from portal.services.actions import cancel_action, run_action
from tests.support import wait_for


@pytest.fixture
def with_a_broker(settings):
    """The production shape: Actions would cross Redis to a worker (none runs here)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.ACTION_RUNNER_THREADS = 2


@pytest.fixture
def sent(monkeypatch):
    """The Action ids handed to the broker, instead of handing them."""
    ids: list[int] = []
    monkeypatch.setattr(action_services, "send_action_task",
                        lambda action_id, countdown=0: ids.append(action_id))
    return ids


class GroupListener:
    """The statuses of the Action events a group carries, heard on the real channel layer
    (Redis under `make test`) by a channel on an event loop of its own, in a thread."""

    def __init__(self, group: str, count: int):
        self.group, self.count = group, count
        self.statuses: list[str] = []
        self.subscribed = threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._listen(),), daemon=True)
        self.thread.start()
        assert self.subscribed.wait(10), "the listener did not subscribe"

    async def _listen(self) -> None:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(self.group, channel)
        self.subscribed.set()
        try:
            for _ in range(self.count):
                message = await asyncio.wait_for(layer.receive(channel), 15)
                self.statuses.append(json.loads(message["payload"])["status"])
        finally:
            await layer.flush()

    def heard(self) -> list[str]:
        self.thread.join(20)
        return self.statuses


@pytest.mark.django_db(transaction=True)
def test_a_drain_runs_in_the_process_that_queued_it_with_no_worker_running(
    with_a_broker, sent, make_user
):
    operator = make_user(Role.OPERATOR)
    node = Node.objects.create(hostname="gpu001")
    listener = GroupListener("actions", 2)
    ran_before_commit = []
    driver_drain = SimulatorDriver.drain

    def drain(driver, names, reason):
        ran_before_commit.append(connection.in_atomic_block)
        return driver_drain(driver, names, reason)

    with mock.patch.object(SimulatorDriver, "drain", drain):
        with transaction.atomic():
            action, _ = request_drain(nodes=[node], reason="xid 79 on GPU 3",
                                      requested_by=operator)
            # Claimed by this process as it was written: running, with its first attempt...
            assert (action.status, action.attempts) == (ActionStatus.RUNNING, 1)
            [attempt] = action.attempt_log.all()
            assert (attempt.number, attempt.outcome, attempt.claim_token) == (
                1, ActionAttempt.Outcome.RUNNING, action.claim_token)
            assert action.lease_expires_at > action.started_at
            assert not ran_before_commit  # ...but nothing runs before the commit
        wait_for(lambda: ran_before_commit, 15, "the drain to start after the commit")
    assert ran_before_commit == [False]

    wait_for(lambda: ActionAttempt.objects.filter(action=action, outcome="succeeded").exists(),
             15, "the drain to succeed where it was queued")
    action.refresh_from_db()
    assert (action.status, action.attempts, action.result) == (
        ActionStatus.SUCCEEDED, 1, {"drained": ["gpu001"]})
    [attempt] = action.attempt_log.all()
    assert attempt.worker.endswith("(where queued)") and attempt.finished_at is not None
    assert sent == []  # no message for a worker
    # Requested and finished, both in the audit log, as through a worker.
    notes = list(AuditEntry.objects.filter(object_type="portal.action", object_id=str(action.pk))
                 .order_by("pk").values_list("note", flat=True))
    assert notes == ["requested: xid 79 on GPU 3", "succeeded"]
    # Browsers hear it in order: one ordered publisher carries the request's and the run's.
    assert listener.heard() == ["running", "succeeded"]


@pytest.mark.django_db(transaction=True)
def test_a_busy_runner_hands_the_drain_to_a_worker(with_a_broker, sent, make_user):
    runner = action_services._action_runner()
    runner.taken += runner.room  # every place on the runner spoken for
    try:
        with transaction.atomic():
            action, _ = request_drain(nodes=[Node.objects.create(hostname="gpu002")],
                                      reason="burst", requested_by=make_user(Role.OPERATOR))
    finally:
        runner.taken -= runner.room
    assert sent == [action.pk]
    action.refresh_from_db()
    assert action.status == ActionStatus.QUEUED and action.attempts == 0


@pytest.mark.django_db(transaction=True)
def test_with_no_runner_threads_every_action_goes_to_a_worker(with_a_broker, sent, settings):
    settings.ACTION_RUNNER_THREADS = 0
    with transaction.atomic():
        action, _ = request_drain(nodes=[Node.objects.create(hostname="gpu003")], reason="off")
    assert sent == [action.pk]


def test_only_quick_handlers_run_where_they_were_queued():
    assert get_action_handler(DRAIN_ACTION).runs_where_queued
    assert get_action_handler("slurm.resume").runs_where_queued
    # A reboot waits for nodes to come back; a switch action talks SSH: those stay on workers.
    assert not get_action_handler("slurm.reboot").runs_where_queued
    assert not get_action_handler("portal.canary").runs_where_queued


@pytest.mark.django_db(transaction=True)
def test_a_delivery_of_a_drain_claimed_where_queued_does_not_run_it_again(
    with_a_broker, sent, make_user
):
    """The sweeper's copy, or a worker's, finds the Action running under the runner's lease
    (or done): only one delivery runs it."""
    node = Node.objects.create(hostname="gpu004")
    release = threading.Event()
    drains: list[str] = []
    driver_drain = SimulatorDriver.drain

    def held_drain(driver, names, reason):
        drains.append(reason)
        assert release.wait(15)
        return driver_drain(driver, names, reason)

    with mock.patch.object(SimulatorDriver, "drain", held_drain):
        action, _ = request_drain(nodes=[node], reason="once",
                                  requested_by=make_user(Role.OPERATOR))
        wait_for(lambda: drains, 15, "the runner to start the drain")
        assert run_action(action_id=action.pk, worker="a worker") == "skipped: running elsewhere"
        release.set()
        wait_for(lambda: ActionAttempt.objects.filter(action=action, outcome="succeeded").exists(),
                 15, "the drain to succeed where it was queued")
    assert run_action(action_id=action.pk, worker="a worker") == "skipped: already succeeded"
    assert drains == ["once"] and action.attempt_log.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_drain_whose_transaction_rolls_back_leaves_nothing_and_holds_no_place(
    with_a_broker, sent
):
    runner = action_services._action_runner()
    taken = runner.taken
    with pytest.raises(RuntimeError), transaction.atomic():
        request_drain(nodes=[Node.objects.create(hostname="gpu005")], reason="rolled back")
        raise RuntimeError("the caller's transaction fails")
    assert not Action.objects.exists() and not ActionAttempt.objects.exists()
    assert runner.taken == taken and sent == []


def test_a_drain_claimed_where_queued_cannot_be_cancelled(with_a_broker, db, make_user, sent):
    """It is under way from its request: Slurm may already have it."""
    oncall = make_user(Role.ONCALL)
    with mock.patch.object(action_services._ActionRunner, "run_claimed"):  # held back
        action, _ = request_drain(nodes=[Node.objects.create(hostname="gpu006")],
                                  reason="oops", requested_by=oncall)
    with pytest.raises(Conflict):
        cancel_action(action=action, cancelled_by=oncall, reason="wrong node")
    action.refresh_from_db()
    assert action.status == ActionStatus.RUNNING

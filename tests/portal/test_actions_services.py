"""The Action lifecycle, exercised through the services (the worker tests run it for real)."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from portal.actions.canary import CANARY_KIND
from portal.errors import Conflict, InvalidInput
from portal.models import Action, ActionAttempt, ActionStatus, AuditEntry
from portal.services import actions as action_services
from portal.services.actions import (
    cancel_action,
    enqueue_action,
    retry_delay_seconds,
    run_action,
    sweep_stuck_actions,
)


@pytest.fixture
def sent(monkeypatch):
    """Record which Action ids would be sent to the broker, instead of sending them."""
    sent_ids = []
    monkeypatch.setattr(
        action_services,
        "send_action_task",
        lambda action_id, countdown=0: sent_ids.append(action_id),
    )
    return sent_ids


@pytest.fixture
def operator(make_user):
    return make_user("operator")


def enqueue(kind=CANARY_KIND, operator=None, **kwargs):
    kwargs.setdefault("target", "worker pipeline")
    kwargs.setdefault("reason", "testing")
    return enqueue_action(kind=kind, requested_by=operator, **kwargs)


def test_enqueue_writes_the_row_audit_and_sends_only_on_commit(
    operator, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        action, created = enqueue(operator=operator, parameters={"hold_seconds": 0})
        assert sent == []  # nothing leaves before the caller's transaction commits
    assert created
    assert sent == [action.pk]
    assert len(callbacks) >= 1
    assert action.status == ActionStatus.QUEUED
    entry = AuditEntry.objects.get(object_type="portal.action", object_id=str(action.pk))
    assert entry.actor == operator
    assert entry.operation == "action"
    assert entry.after["kind"] == CANARY_KIND


def test_rolled_back_request_leaves_no_action_and_sends_nothing(
    operator, sent, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        enqueue(operator=operator)
        raise RuntimeError("the request failed after asking for the Action")
    assert Action.objects.count() == 0
    assert sent == []


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"kind": "no.such.kind"}, "kind"),
        ({"reason": "   "}, "reason"),
        ({"target": ""}, "target"),
        ({"idempotency_key": "x" * 129}, "idempotency_key"),
    ],
)
def test_bad_requests_name_the_field_and_write_nothing(operator, sent, overrides, field):
    kind = overrides.pop("kind", CANARY_KIND)
    with pytest.raises(InvalidInput) as error:
        enqueue(kind=kind, operator=operator, **overrides)
    assert field in error.value.detail
    assert Action.objects.count() == 0


def test_idempotency_key_returns_the_first_action(operator, sent):
    first, created_first = enqueue(operator=operator, idempotency_key="drain-gpu001-ticket-7")
    again, created_again = enqueue(operator=operator, idempotency_key="drain-gpu001-ticket-7")
    assert created_first and not created_again
    assert again.pk == first.pk
    assert Action.objects.count() == 1
    with pytest.raises(Conflict):
        enqueue(operator=operator, target="another target", idempotency_key="drain-gpu001-ticket-7")


def test_idempotency_keys_belong_to_who_sent_them(operator, make_user, sent):
    oncall = make_user("oncall")
    first, _ = enqueue(operator=operator, reason="operator's reason", idempotency_key="k-1")
    theirs, created = enqueue(operator=oncall, reason="on-call's reason", idempotency_key="k-1")
    assert created and theirs.pk != first.pk
    assert theirs.reason == "on-call's reason" and theirs.requested_by == oncall
    # The same key with another target: a conflict with their own Action only.
    _, created = enqueue(
        operator=make_user("oncall"), target="another target", idempotency_key="k-1"
    )
    assert created
    with pytest.raises(Conflict) as conflict:
        enqueue(operator=oncall, target="another target", idempotency_key="k-1")
    assert conflict.value.extra["action_id"] == theirs.pk
    # The system's keys (policy drains) are one scope of their own.
    system, created = enqueue(operator=None, idempotency_key="k-1")
    assert created and enqueue(operator=None, idempotency_key="k-1") == (system, False)


def test_another_users_key_over_the_api_is_their_own_request(api_as, sent):
    operator, oncall = api_as("operator"), api_as("oncall")
    headers = {"HTTP_IDEMPOTENCY_KEY": "deploy-42"}
    first = operator.post("/api/actions/canary/", {"reason": "mine"}, format="json", **headers)
    second = oncall.post("/api/actions/canary/", {"reason": "yours"}, format="json", **headers)
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] != second.json()["id"]
    assert second.json()["reason"] == "yours"
    repeat = oncall.post("/api/actions/canary/", {"reason": "yours"}, format="json", **headers)
    assert repeat.json()["id"] == second.json()["id"]


def test_successful_run_records_result_attempt_and_audit(operator, sent):
    action, _ = enqueue(operator=operator)
    assert run_action(action_id=action.pk, worker="w1") == "succeeded"
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result["held_seconds"] == 0
    assert action.attempts == 1
    assert action.finished_at is not None
    assert list(action.attempt_log.values_list("outcome", flat=True)) == ["succeeded"]
    assert AuditEntry.objects.filter(
        object_id=str(action.pk), note="succeeded", via="worker"
    ).exists()


def test_redelivery_of_a_finished_action_does_not_run_it_again(operator, sent):
    action, _ = enqueue(operator=operator)
    run_action(action_id=action.pk)
    assert run_action(action_id=action.pk) == "skipped: already succeeded"
    assert ActionAttempt.objects.filter(action=action).count() == 1


def test_a_live_lease_keeps_a_second_delivery_out(operator, sent):
    action, _ = enqueue(operator=operator)
    Action.objects.filter(pk=action.pk).update(
        status=ActionStatus.RUNNING,
        claim_token="someone-else",
        attempts=1,
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )
    assert run_action(action_id=action.pk) == "skipped: running elsewhere"


def test_an_expired_lease_is_taken_over_and_the_lost_attempt_marked_abandoned(operator, sent):
    action, _ = enqueue(operator=operator)
    ActionAttempt.objects.create(action=action, number=1, worker="dead", claim_token="dead-token")
    Action.objects.filter(pk=action.pk).update(
        status=ActionStatus.RUNNING,
        claim_token="dead-token",
        attempts=1,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )
    assert run_action(action_id=action.pk, worker="w2") == "succeeded"
    outcomes = list(action.attempt_log.order_by("number").values_list("outcome", flat=True))
    assert outcomes == ["abandoned", "succeeded"]


def test_transient_errors_retry_with_backoff_until_success(operator, sent, settings):
    settings.ACTION_RETRY_BASE_SECONDS = 0
    action, _ = enqueue(
        "test.flaky", operator=operator, target="gpu001", parameters={"succeed_on_attempt": 3}
    )
    assert run_action(action_id=action.pk).startswith("retry in")
    action.refresh_from_db()
    assert action.status == ActionStatus.QUEUED
    assert "controller unreachable" in action.last_error
    assert run_action(action_id=action.pk).startswith("retry in")
    assert run_action(action_id=action.pk) == "succeeded"
    action.refresh_from_db()
    assert action.result == {"succeeded_on_attempt": 3}
    assert list(action.attempt_log.values_list("outcome", flat=True)) == [
        "retry",
        "retry",
        "succeeded",
    ]


def test_a_retry_is_not_run_before_it_is_due(operator, sent, settings):
    settings.ACTION_RETRY_BASE_SECONDS = 60
    action, _ = enqueue("test.flaky", operator=operator, target="gpu001")
    run_action(action_id=action.pk)
    assert run_action(action_id=action.pk) == "skipped: not due yet"


def test_transient_errors_fail_after_max_attempts(operator, sent, settings):
    settings.ACTION_RETRY_BASE_SECONDS = 0
    action, _ = enqueue(
        "test.flaky", operator=operator, target="gpu001", parameters={"succeed_on_attempt": 99}
    )
    outcomes = [run_action(action_id=action.pk) for _ in range(4)]
    assert outcomes[-1] == "failed"
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED
    assert action.attempts == action.max_attempts == 4


def test_a_waiting_handler_is_checked_again_later_without_using_up_attempts(operator, sent):
    """ActionWaiting (a maintenance waiting for jobs to end) is not an attempt: five checks of
    an Action allowed two attempts still succeed, the progress is its result meanwhile, the
    wait is one attempt row, and a check is not run before it is due."""
    action, _ = enqueue("test.waits", operator=operator, target="gpu001",
                        parameters={"checks_waiting": 4, "every": 0})
    for check in range(1, 5):
        assert run_action(action_id=action.pk).startswith("waiting, next check in")
        action.refresh_from_db()
        assert (action.status, action.attempts) == (ActionStatus.QUEUED, 0)
        assert action.result == {"checks": check, "progress": f"waiting ({check})"}
        assert action.last_error == ""
    assert list(action.attempt_log.values_list("number", "outcome", "error")) == [
        (1, "waiting", "waiting (4)")]
    assert run_action(action_id=action.pk) == "succeeded"
    action.refresh_from_db()
    assert action.result == {"checks": 5, "done": True}
    assert (action.attempts, action.max_attempts) == (1, 2)
    assert list(action.attempt_log.values_list("number", "outcome")) == [(1, "succeeded")]

    later, _ = enqueue("test.waits", operator=operator, target="gpu002",
                       parameters={"every": 600})
    run_action(action_id=later.pk)
    assert run_action(action_id=later.pk) == "skipped: not due yet"
    # A waiting Action is queued: it can still be called off before it does anything.
    assert cancel_action(action=later, cancelled_by=operator).status == ActionStatus.CANCELLED


def test_a_first_claim_looks_for_no_waiting_attempt(operator, sent):
    """Only an Action claimed before can have a waiting attempt to go on in: the first claim
    of every drain skips that statement (the claim is on the path to Slurm)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    action, _ = enqueue(operator=operator)
    with CaptureQueriesContext(connection) as claim:
        claimed = action_services._claim(action.pk, "token-1", "worker-1")
    assert claimed[0].attempts == 1
    statements = [query["sql"] for query in claim.captured_queries]
    assert not [sql for sql in statements if sql.startswith('UPDATE "portal_actionattempt"')]
    assert [sql for sql in statements if sql.startswith('INSERT INTO "portal_actionattempt"')]


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("test.refused", "PermanentActionError: Invalid node state specified"),
        ("test.crash", "ZeroDivisionError: division by zero"),
    ],
)
def test_permanent_errors_and_bugs_fail_at_once_with_the_error(operator, sent, kind, message):
    action, _ = enqueue(kind, operator=operator, target="gpu001")
    assert run_action(action_id=action.pk) == "failed"
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED
    assert action.last_error == message
    assert action.attempts == 1


def test_cancel_only_while_queued(operator, sent):
    action, _ = enqueue(operator=operator)
    cancelled = cancel_action(action=action, cancelled_by=operator, reason="wrong node")
    assert cancelled.status == ActionStatus.CANCELLED
    assert run_action(action_id=action.pk) == "skipped: already cancelled"
    done, _ = enqueue(operator=operator)
    run_action(action_id=done.pk)
    with pytest.raises(Conflict):
        cancel_action(action=done, cancelled_by=operator)


def test_sweeper_resends_lost_and_abandoned_actions_only(operator, sent, settings):
    settings.ACTION_REQUEUE_AFTER_SECONDS = 60
    long_ago = timezone.now() - timedelta(minutes=10)
    lost, _ = enqueue(operator=operator, target="lost message")
    fresh, _ = enqueue(operator=operator, target="just queued")
    abandoned, _ = enqueue(operator=operator, target="dead worker")
    alive, _ = enqueue(operator=operator, target="live worker")
    Action.objects.filter(pk=lost.pk).update(not_before=long_ago)
    Action.objects.filter(pk=abandoned.pk).update(
        status=ActionStatus.RUNNING, lease_expires_at=timezone.now() - timedelta(seconds=5)
    )
    Action.objects.filter(pk=alive.pk).update(
        status=ActionStatus.RUNNING, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    sent.clear()
    assert sweep_stuck_actions() == {"requeued": 1, "abandoned": 1}
    assert sorted(sent) == sorted([lost.pk, abandoned.pk])
    assert fresh.pk not in sent and alive.pk not in sent
    sent.clear()
    # The lost one's deadline moved forward: the next sweep does not flood the broker.
    assert sweep_stuck_actions()["requeued"] == 0


def test_backoff_grows_and_is_capped(settings):
    settings.ACTION_RETRY_BASE_SECONDS = 2
    settings.ACTION_RETRY_MAX_SECONDS = 30
    assert 1.6 <= retry_delay_seconds(1) <= 2.4
    assert 6.4 <= retry_delay_seconds(3) <= 9.6
    assert retry_delay_seconds(10) <= 36


def test_embedded_mode_runs_the_action_in_process_on_commit(
    operator, django_capture_on_commit_callbacks, settings
):
    """Without Redis (the demo), the task runs in the requesting process once it commits."""
    from portal.celery import app

    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            action, _ = enqueue(operator=operator)
            assert Action.objects.get(pk=action.pk).status == ActionStatus.QUEUED
    finally:
        app.conf.task_always_eager = False
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED
    assert action.attempt_log.get().worker  # the in-process "worker" is named too


@pytest.mark.django_db(transaction=True)  # real commits: callbacks run in their real order
def test_embedded_mode_publishes_queued_before_what_the_in_process_task_reports(
    operator, settings, monkeypatch
):
    """In-process tasks finish inside the send: browsers must hear "queued" first, or the last
    status they keep for a finished Action is "queued" (the dashboard's Recent Actions did)."""
    import json

    from portal.celery import app
    from portal.realtime import events

    heard = []
    monkeypatch.setattr(
        events,
        "send_now",
        lambda group, message: heard.append(json.loads(message["payload"])["status"])
        if group == "actions"
        else None,
    )
    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    try:
        with transaction.atomic():
            enqueue(operator=operator)
    finally:
        app.conf.task_always_eager = False
    assert heard == ["queued", "running", "succeeded"]


@pytest.mark.django_db(transaction=True)  # real commits: callbacks run in their real order
def test_with_a_worker_the_queued_event_reaches_redis_before_the_task_leaves(
    operator, settings, monkeypatch
):
    """Events leave on the publisher thread; the worker's "running" comes from another process.
    The task is sent only once "queued" has been sent, so a browser never hears it last."""
    import asyncio

    from portal.realtime import events

    class SlowLayer:
        arrived: list = []

        async def group_send(self, group, message):
            await asyncio.sleep(0.05)
            self.arrived.append(group)

    layer = SlowLayer()
    monkeypatch.setattr(events, "get_channel_layer", lambda: layer)
    seen_when_sent = []
    monkeypatch.setattr(action_services, "send_action_task",
                        lambda action_id, countdown=0: seen_when_sent.append(list(layer.arrived)))
    settings.CELERY_TASK_ALWAYS_EAGER = False
    with transaction.atomic():
        action, _ = enqueue(operator=operator)
    assert seen_when_sent == [["actions", f"action.{action.pk}"]]


def test_embedded_mode_leaves_retries_to_the_sweeper(operator, settings, monkeypatch):
    """In-process mode has no timer for countdowns: a due retry is run by the periodic sweep."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ACTION_REQUEUE_AFTER_SECONDS = 0
    applied = []
    from portal import tasks

    monkeypatch.setattr(tasks.run_action, "apply_async", lambda args, **kw: applied.append(args))
    action_services.send_action_task(41, countdown=5)
    assert applied == []
    action_services.send_action_task(41)
    assert applied == [(41,)]


def test_a_send_the_broker_refused_is_due_at_the_next_sweep(operator, settings, monkeypatch):
    """The request does not wait for the broker, and the sweeper does not wait for the
    Action to look lost (ACTION_REQUEUE_AFTER_SECONDS) when its send is known to have failed."""
    from kombu.exceptions import OperationalError

    from portal import tasks

    settings.ACTION_REQUEUE_AFTER_SECONDS = 120

    def broker_down(args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.run_action, "apply_async", broker_down)
    undelivered, _ = enqueue(operator=operator, target="broker down")
    action_services.send_action_task(undelivered.pk)
    with monkeypatch.context() as quiet:
        quiet.setattr(tasks.run_action, "apply_async", lambda args, **kwargs: None)
        delivered, _ = enqueue(operator=operator, target="broker up")
        action_services.send_action_task(delivered.pk)
        resent = []
        quiet.setattr(
            tasks.run_action, "apply_async", lambda args, **kwargs: resent.append(args[0])
        )
        assert sweep_stuck_actions()["requeued"] == 1
    assert resent == [undelivered.pk]  # the delivered one is not flooded with copies


def test_a_claim_that_committed_before_its_connection_dropped_is_carried_on(operator, sent):
    """The worker repeats a claim whose commit it did not hear back; the row is already its."""
    action, _ = enqueue(operator=operator)
    claimed = action_services._claim(action.pk, "token-1", "worker1")
    assert not isinstance(claimed, str)
    again = action_services._claim(action.pk, "token-1", "worker1")
    assert not isinstance(again, str) and again[0].attempts == 1
    assert action_services._finish(action.pk, "token-1", result={"ok": True}) == "succeeded"
    # ... and a finish repeated the same way keeps the first outcome.
    assert action_services._finish(action.pk, "token-1", result={"ok": True}) == (
        "recorded: succeeded"
    )
    action.refresh_from_db()
    assert (action.status, action.attempts, action.attempt_log.count()) == ("succeeded", 1, 1)

"""Actions through a real broker and a real Celery worker process: nothing lost, nothing twice."""


import pytest
from django.db import transaction

from portal.models import Action, ActionStatus, Role
from portal.services import actions as action_services
from portal.services.actions import enqueue_action, sweep_stuck_actions
from tests.support import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def status_of(action_id: int) -> str:
    return Action.objects.get(pk=action_id).status


def test_canary_over_the_api_runs_on_the_worker(celery_worker_process, api_as):
    celery_worker_process.start()
    client = api_as(Role.OPERATOR)
    response = client.post("/api/actions/canary/", {"reason": "post-deploy check"}, format="json")
    assert response.status_code == 202
    assert response["Location"].endswith(f"/api/actions/{response.data['id']}/")
    action_id = response.data["id"]
    wait_for(lambda: status_of(action_id) == ActionStatus.SUCCEEDED, 20, "the canary to succeed")
    detail = client.get(response["Location"]).json()
    assert detail["status"] == "succeeded"
    assert detail["attempts"] == 1
    assert detail["attempt_log"][0]["worker"].startswith("worker1@")
    assert detail["result"]["held_seconds"] == 0


def test_a_redelivered_task_does_not_run_a_succeeded_action_again(celery_worker_process, make_user):
    from portal.tasks import run_action

    celery_worker_process.start()
    with transaction.atomic():
        action, _ = enqueue_action(
            kind="portal.canary",
            target="worker pipeline",
            reason="redelivery",
            requested_by=make_user(Role.OPERATOR),
        )
    wait_for(lambda: status_of(action.pk) == ActionStatus.SUCCEEDED, 20, "the first run")
    redelivered = run_action.apply_async((action.pk,), ignore_result=False)  # read it here
    assert redelivered.get(timeout=20) == "skipped: already succeeded"
    action.refresh_from_db()
    assert action.attempts == 1
    assert action.attempt_log.count() == 1


def test_a_dropped_broker_message_is_recovered_by_the_sweeper(
    celery_worker_process, make_user, settings, monkeypatch
):
    celery_worker_process.start()
    settings.ACTION_REQUEUE_AFTER_SECONDS = 0
    with monkeypatch.context() as dropped:
        dropped.setattr(action_services, "send_action_task", lambda *args, **kwargs: None)
        with transaction.atomic():
            action, _ = enqueue_action(
                kind="portal.canary",
                target="worker pipeline",
                reason="lost message",
                requested_by=make_user(Role.OPERATOR),
            )
    # A barrier instead of a pause: once an Action sent after it has been run, the worker has
    # been taking messages, and the dropped one is still queued because none reached the broker.
    with transaction.atomic():
        later, _ = enqueue_action(
            kind="portal.canary",
            target="worker pipeline",
            reason="sent normally",
            requested_by=make_user(Role.OPERATOR),
        )
    wait_for(lambda: status_of(later.pk) == ActionStatus.SUCCEEDED, 20, "the Action sent after")
    assert status_of(action.pk) == ActionStatus.QUEUED
    assert sweep_stuck_actions()["requeued"] == 1
    wait_for(lambda: status_of(action.pk) == ActionStatus.SUCCEEDED, 20, "the swept Action")
    assert Action.objects.get(pk=action.pk).attempts == 1


def test_a_killed_worker_does_not_lose_the_action(celery_worker_process, make_user):
    celery_worker_process.start("worker1")
    with transaction.atomic():
        action, _ = enqueue_action(
            kind="portal.canary",
            target="worker pipeline",
            reason="kill the worker mid-run",
            requested_by=make_user(Role.OPERATOR),
            parameters={"hold_seconds": 3},
        )
    wait_for(lambda: status_of(action.pk) == ActionStatus.RUNNING, 20, "the worker to claim it")
    celery_worker_process.kill()
    assert status_of(action.pk) == ActionStatus.RUNNING  # claimed by a worker that no longer exists

    celery_worker_process.start("worker2")

    # The lease (hold + 5 s) expires; the periodic sweeper then hands the Action to worker2.
    def recovered():
        sweep_stuck_actions()
        return status_of(action.pk) == ActionStatus.SUCCEEDED

    wait_for(recovered, 40, "recovery on the second worker", poll=1.0)
    action.refresh_from_db()
    attempts = list(action.attempt_log.order_by("number").values_list("outcome", "worker"))
    assert [outcome for outcome, _ in attempts] == ["abandoned", "succeeded"]
    assert attempts[0][1].startswith("worker1@") and attempts[1][1].startswith("worker2@")


def test_transient_errors_are_retried_by_the_worker_until_success(celery_worker_process, make_user):
    celery_worker_process.start()
    with transaction.atomic():
        action, _ = enqueue_action(
            kind="test.flaky",
            target="gpu001",
            reason="controller flaps",
            requested_by=make_user(Role.OPERATOR),
            parameters={"succeed_on_attempt": 3},
        )
    wait_for(lambda: status_of(action.pk) == ActionStatus.SUCCEEDED, 30, "the retries")
    action.refresh_from_db()
    assert action.attempts == 3
    assert list(action.attempt_log.values_list("outcome", flat=True)) == [
        "retry",
        "retry",
        "succeeded",
    ]


def test_the_worker_keeps_its_database_session_across_actions_and_outlives_its_end(
    celery_worker_process, make_user
):
    # Celery's Django fixup opened a PostgreSQL session for every task (~1.5 ms of each
    # claim): the worker now keeps one, checked before each task as Django checks a request's.
    from django.db import connection

    celery_worker_process.start()  # worker tests run on PostgreSQL (tests/conftest.py)
    requester = make_user(Role.OPERATOR)

    def run_one(label: str) -> int:
        with transaction.atomic():
            action, _ = enqueue_action(kind="test.backend", target="database", reason=label,
                                       requested_by=requester)
        wait_for(lambda: status_of(action.pk) == ActionStatus.SUCCEEDED, 20, label)
        action.refresh_from_db()
        return action.result["backend_pid"]

    first = run_one("first")
    assert run_one("second") == first == run_one("third")
    # Its session ended under it (a failover, an administrator): the next Action still runs,
    # in a new session, with no attempt lost to the dead one.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    wait_for(lambda: not _backend_alive(first), 10, "the session to end")
    after = run_one("after the session ended")
    assert after != first
    assert Action.objects.get(reason="after the session ended").attempts == 1


def _backend_alive(pid: int) -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0] == 1

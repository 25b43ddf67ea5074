"""Redis (broker, channel layer, cache) stopped under a running portal: requests never wait on
it, and the Actions asked for meanwhile are carried out once when it is back.

The web server, worker and beat all use a private redis-server that the test kills and starts
again on the same port; the shared Redis is never touched.
"""

from __future__ import annotations

import threading
import time

import pytest

from portal.models import Action, ActionStatus
from tests.chaos.support import http, percentile, tally
from tests.support import wait_for

pytestmark = [pytest.mark.chaos, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CANARY = "/api/actions/canary/"
OUTAGE_SECONDS = 20


def statuses(action_ids: list[int]) -> dict[int, str]:
    return dict(Action.objects.filter(pk__in=action_ids).values_list("pk", "status"))


def all_succeeded(action_ids: list[int]):
    def check() -> bool:
        found = statuses(action_ids)
        return len(found) == len(action_ids) and set(found.values()) == {ActionStatus.SUCCEEDED}

    return check


def test_action_requests_answer_within_a_second_while_redis_is_down(
    stack, private_redis, operator_token, monkeypatch
):
    """Requests never wait on the broker: before the Action row became the outbox, each
    request waited 16-19 s on Celery's result backend."""
    # The default sweeper margin (120 s): a message that never reached the broker must not
    # wait for it.
    stack.env.update({"REDIS_URL": private_redis.url, "ACTION_SWEEP_INTERVAL": "1"})
    stack.start_worker()
    server = stack.start_server(monkeypatch)
    stack.start_beat()

    # A process that has sent Actions before, as every long-running web server has.
    warm = http("POST", server.url + CANARY, operator_token, {"reason": "before the outage"})
    assert warm.status == 202, warm.body
    wait_for(all_succeeded([warm.body["id"]]), 30, "the first canary")

    private_redis.stop()
    replies = []
    for n in range(20):
        replies.append(http("POST", server.url + CANARY, operator_token, {"reason": f"outage {n}"}))
        if replies[-1].seconds > 5:
            break  # main waited ~19 s per request: one is proof enough
    latencies = [reply.seconds for reply in replies]
    print(
        f"CHAOS | Action latency with Redis down | p50 {percentile(latencies, 0.5):.3f}s | "
        f"p99 {percentile(latencies, 0.99):.3f}s | n {len(latencies)}"
    )
    assert percentile(latencies, 0.99) < 1.0, latencies
    assert [reply.status for reply in replies] == [202] * 20, [r.body for r in replies]
    outage_ids = [reply.body["id"] for reply in replies]
    assert set(statuses(outage_ids).values()) == {ActionStatus.QUEUED}  # saved, not sent

    private_redis.start()
    # Worker reconnects (its backoff reaches ~10 s), beat sends the sweeper every second.
    wait_for(all_succeeded(outage_ids), 60, "the sweeper to send the outage's Actions")
    result = tally("Redis stopped, 20 Action requests", [warm.body["id"], *outage_ids])
    assert (result.lost, result.done_twice) == (0, 0)
    assert set(Action.objects.filter(pk__in=outage_ids).values_list("attempts", flat=True)) == {1}


def test_redis_down_for_20_seconds_during_a_burst_of_50_actions(
    stack, private_redis, operator_token, monkeypatch
):
    """None lost, none twice. The restarted Redis has lost the queued messages too (no
    persistence), so the sweeper must find those Actions as well; its margin is short here so
    the test does not wait two minutes for it."""
    stack.env.update(
        {
            "REDIS_URL": private_redis.url,
            "ACTION_SWEEP_INTERVAL": "1",
            "ACTION_REQUEUE_AFTER_SECONDS": "8",
        }
    )
    stack.start_worker()
    server = stack.start_server(monkeypatch)
    stack.start_beat()

    replies = []

    def burst() -> None:
        for n in range(50):
            replies.append(
                http(
                    "POST",
                    server.url + CANARY,
                    operator_token,
                    {"reason": f"burst {n}", "hold_seconds": 0.1},
                )
            )
            time.sleep(0.5)

    def succeeded_so_far() -> bool:
        sent = [reply.body["id"] for reply in list(replies) if reply.status == 202]
        return ActionStatus.SUCCEEDED in statuses(sent).values()

    sender = threading.Thread(target=burst)
    sender.start()
    # Stop Redis mid-burst: once some Actions are done, while others are still being sent.
    wait_for(succeeded_so_far, 30, "the burst's first Action to succeed")
    sent_before_outage = len(replies)
    private_redis.stop()
    # The outage is the scenario's length, not a wait for something to happen.
    time.sleep(OUTAGE_SECONDS)
    sent_during_outage = len(replies) - sent_before_outage
    private_redis.start()
    sender.join(timeout=120)

    assert sent_during_outage > 0, "no Action was asked for while Redis was down"

    assert len(replies) == 50
    assert [reply.status for reply in replies] == [202] * 50, [r.body for r in replies]
    assert max(reply.seconds for reply in replies) < 1.0, [r.seconds for r in replies]
    action_ids = [reply.body["id"] for reply in replies]
    try:
        wait_for(all_succeeded(action_ids), 90, "every Action of the burst")
    finally:
        result = tally("Redis down 20 s during a burst", action_ids)
    assert (result.sent, result.done, result.lost, result.done_twice) == (50, 50, 0, 0)

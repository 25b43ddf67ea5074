"""The portal's PostgreSQL sessions ended under it (pg_terminate_backend), as a database
failover, a restart or an idle-session reaper does: the web server and the worker carry on
without a restart.

Both ways of holding connections are checked: persistent connections with health checks (the
default) and the psycopg pool (DATABASE_POOL_SIZE).
"""

from __future__ import annotations

import pytest
from django.db import connection

from portal.models import Action, ActionStatus, Role
from tests.chaos.support import http, session_cookie_for, tally
from tests.support import wait_for

pytestmark = [pytest.mark.chaos, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def portal_sessions() -> list[tuple]:
    """Every session on the test database but this test's own: (pid, application, state)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, application_name, state FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchall()


def wait_for_web_and_worker_sessions() -> None:
    """The kill below must hit the web server's session and the worker's. A clean-clone run
    once found only one of them open just after the warm-up's canary had succeeded (the test
    passed on every rerun): wait for both rather than kill half of what it means to."""
    wait_for(lambda: len(portal_sessions()) >= 2, 10,
             "the web server's and the worker's database sessions", 0.05)


def terminate_portal_sessions() -> int:
    """End every session on the test database but this test's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def requests_of_each_kind(server, token: str, session_key: str, round_number: int) -> list:
    return [
        http("GET", server.url + "/api/actions/", token),
        http("GET", server.url + "/", session_key=session_key),  # the dashboard page
        http(
            "POST",
            server.url + "/api/actions/canary/",
            token,
            {"reason": f"after the sessions were killed, round {round_number}"},
        ),
    ]


@pytest.mark.parametrize("pool_size", ["0", "4"], ids=["persistent-connections", "pool"])
def test_web_and_worker_recover_from_killed_database_sessions(
    stack, operator_token, make_user, monkeypatch, pool_size
):
    stack.env.update({"DATABASE_POOL_SIZE": pool_size})
    stack.start_worker()
    server = stack.start_server(monkeypatch)
    session_key = session_cookie_for(make_user(Role.OPERATOR))

    before = requests_of_each_kind(server, operator_token, session_key, 0)
    assert [reply.status for reply in before] == [200, 200, 202], [r.body for r in before]
    canaries = [before[2].body["id"]]
    wait_for(lambda: Action.objects.get(pk=canaries[0]).status == "succeeded", 30, "warm-up")

    replies = []
    for round_number in range(1, 4):
        wait_for_web_and_worker_sessions()
        assert terminate_portal_sessions() >= 2  # the web server's and the worker's at least
        for reply in requests_of_each_kind(server, operator_token, session_key, round_number):
            replies.append(reply)
        canaries.append(replies[-1].body["id"] if replies[-1].status == 202 else None)

    # The worker's session killed while a handler runs: the outcome is recorded on a new
    # connection, not left to the sweeper's deadline.
    held = http(
        "POST",
        server.url + "/api/actions/canary/",
        operator_token,
        {"reason": "sessions killed mid-Action", "hold_seconds": 2},
    )
    assert held.status == 202, held.body
    wait_for(lambda: Action.objects.get(pk=held.body["id"]).status == "running", 30, "the claim")
    assert terminate_portal_sessions() >= 1
    canaries.append(held.body["id"])

    statuses = [reply.status for reply in replies]
    server_errors = [index for index, status in enumerate(statuses) if status >= 500]
    # A client may see the first request after the kill fail; its retry and everything after
    # must not.
    assert server_errors in ([], [0]), (statuses, [replies[i].body for i in server_errors])
    sent = [action_id for action_id in canaries if action_id is not None]
    wait_for(
        lambda: (
            set(Action.objects.filter(pk__in=sent).values_list("status", flat=True))
            == {ActionStatus.SUCCEEDED}
        ),
        30,
        "the worker to run the canaries sent after the kills",
    )
    assert set(Action.objects.filter(pk__in=sent).values_list("attempts", flat=True)) == {1}
    result = tally(f"PostgreSQL sessions killed x3 (pool {pool_size})", sent)
    assert (result.lost, result.done_twice) == (0, 0)
    print(f"CHAOS | statuses after the kills (pool {pool_size}): {statuses}")

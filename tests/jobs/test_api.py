"""Drain/resume through the API (one Action per request, 202 + Location), bad input, guards,
roles; the job list's visibility and its query count."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import Node
from jobs import hooks
from jobs.models import Job
from jobs.services import DRAIN_ACTION, RESUME_ACTION
from jobs.sync import sync_node_states
from portal.models import Action, ActionStatus, Role
from portal.services.actions import run_action

DRAIN_URL = "/api/jobs/nodes/drain"
RESUME_URL = "/api/jobs/nodes/resume"


@pytest.fixture(autouse=True)
def through_a_worker(settings):
    """These tests play the worker's part by hand (run_action on the queued Action): the
    request process does not claim a drain for its own runner here (tests/portal/
    test_actions_runner.py covers that path)."""
    settings.ACTION_RUNNER_THREADS = 0


@pytest.fixture
def nodes(db):
    return [Node.objects.create(hostname=f"gpu{number:03d}") for number in range(1, 21)]


@pytest.fixture
def simulator(make_simulator, monkeypatch):
    """The simulator the Action handlers (and the sync) use in these tests."""
    driver = make_simulator(nodes=20)
    monkeypatch.setattr("jobs.action_handlers.get_slurm_driver", lambda: driver)
    monkeypatch.setattr("jobs.sync.get_slurm_driver", lambda: driver)
    monkeypatch.setattr("jobs.action_handlers._refresh_node_states", lambda nodes: None)
    return driver


@pytest.fixture
def guard():
    """A resume guard like the faults app's: gpu003 has an open ticket."""

    def open_ticket(nodes):
        return {n.hostname: "open fault ticket #7" for n in nodes if n.hostname == "gpu003"}

    hooks.register_resume_guard(open_ticket)
    yield open_ticket
    hooks._resume_guards.remove(open_ticket)


def by_name(states):
    return {state.name: state for state in states}


@pytest.mark.parametrize("role", [Role.ADMIN, Role.OPERATOR, Role.ONCALL])
def test_drain_by_hostlist_queues_one_action_for_all_nodes(api_as, nodes, role):
    client = api_as(role)
    response = client.post(DRAIN_URL, {"hostlist": "gpu[001-016]", "reason": "rail 3 flaps"})
    assert response.status_code == 202, response.content
    action = Action.objects.get()
    assert response["Location"].endswith(f"/api/actions/{action.pk}/")
    assert response.json()["id"] == action.pk
    assert action.kind == DRAIN_ACTION
    assert action.parameters["nodes"] == [f"gpu{number:03d}" for number in range(1, 17)]
    assert action.target == "gpu[001-016]"
    assert action.requested_by == client.user


def test_drain_by_node_ids(operator_api, nodes):
    response = operator_api.post(
        DRAIN_URL, {"node_ids": [nodes[4].pk, nodes[1].pk], "reason": "x"}, format="json"
    )
    assert response.status_code == 202
    assert Action.objects.get().parameters["nodes"] == ["gpu002", "gpu005"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hostlist": "gpu[001-003],gpu999", "reason": "x"}, "hostlist"),
        ({"hostlist": "gpu[001-", "reason": "x"}, "hostlist"),
        ({"hostlist": "gpu001", "reason": ""}, "reason"),
        ({"hostlist": "gpu001", "reason": "   "}, "reason"),
        ({"hostlist": "gpu001"}, "reason"),
        ({"reason": "x"}, "hostlist"),
        ({"node_ids": [999999], "reason": "x"}, "node_ids"),
        ({"hostlist": "gpu001", "reason": "x", "force": True}, "force"),
    ],
)
def test_bad_drain_input_is_a_400_naming_the_field(operator_api, nodes, body, field):
    response = operator_api.post(DRAIN_URL, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not Action.objects.exists()


def test_unknown_nodes_are_named(operator_api, nodes):
    response = operator_api.post(DRAIN_URL, {"hostlist": "gpu[019-023]", "reason": "x"})
    assert "gpu[021-023]" in response.json()["hostlist"][0]


@pytest.mark.parametrize("role", [Role.VIEWER, Role.TENANT_ADMIN])
def test_viewers_and_tenant_admins_cannot_drain_or_resume(api_as, nodes, role):
    client = api_as(role)
    for url in (DRAIN_URL, RESUME_URL):
        assert client.post(url, {"hostlist": "gpu001", "reason": "x"}).status_code == 403
    assert not Action.objects.exists()


def test_shell_metacharacters_reach_slurm_verbatim(operator_api, nodes, simulator):
    reason = "'; rm -rf / #\" $(reboot) `id` | tee && echo >/etc/passwd"
    response = operator_api.post(DRAIN_URL, {"hostlist": "gpu002", "reason": reason})
    assert response.status_code == 202
    action = Action.objects.get()
    assert action.reason == reason
    assert run_action(action_id=action.pk) == "succeeded"
    assert by_name(simulator.nodes())["gpu002"].reason == reason


def test_drain_then_resume_through_the_worker_path(operator_api, nodes, simulator):
    operator_api.post(DRAIN_URL, {"hostlist": "gpu[001-004]", "reason": "firmware"})
    drain = Action.objects.get(kind=DRAIN_ACTION)
    assert run_action(action_id=drain.pk) == "succeeded"
    sync_node_states()
    assert set(
        Node.objects.filter(hostname__in=["gpu001", "gpu004"]).values_list("slurm_state", flat=True)
    ) == {"drained"}
    # Draining again is a success too (idempotent).
    operator_api.post(DRAIN_URL, {"hostlist": "gpu001", "reason": "again"})
    assert run_action(action_id=Action.objects.latest("id").pk) == "succeeded"

    response = operator_api.post(RESUME_URL, {"hostlist": "gpu[001-004]", "reason": "fixed"})
    assert response.status_code == 202
    resume = Action.objects.get(kind=RESUME_ACTION)
    assert run_action(action_id=resume.pk) == "succeeded"
    assert {s.display_state for s in simulator.nodes(["gpu001", "gpu004"])} == {"idle"}


def test_controller_down_retries_and_succeeds_once_it_is_back(operator_api, nodes, simulator):
    operator_api.post(DRAIN_URL, {"hostlist": "gpu005", "reason": "retry me"})
    action = Action.objects.get()
    simulator.set_controller_up(False)
    assert run_action(action_id=action.pk).startswith("retry")
    action.refresh_from_db()
    assert action.status == ActionStatus.QUEUED
    assert "unreachable" in action.last_error
    simulator.set_controller_up(True)
    Action.objects.filter(pk=action.pk).update(not_before=timezone.now() - timedelta(seconds=5))
    assert run_action(action_id=action.pk) == "succeeded"
    assert by_name(simulator.nodes())["gpu005"].display_state == "drained"


def test_resume_of_a_guarded_node_needs_override(operator_api, nodes, guard):
    response = operator_api.post(RESUME_URL, {"hostlist": "gpu[002-004]", "reason": "done"})
    assert response.status_code == 409
    body = response.json()
    assert body["blocked_nodes"] == ["gpu003"]
    assert "open fault ticket #7" in body["override"][0]
    assert not Action.objects.exists()

    response = operator_api.post(
        RESUME_URL, {"hostlist": "gpu[002-004]", "reason": "done", "override": True},
        format="json",
    )
    assert response.status_code == 202
    assert Action.objects.get().parameters == {
        "nodes": ["gpu002", "gpu003", "gpu004"], "override": True,
        "overridden": [f"gpu003: {body['override'][0].split(': ', 1)[1]}"],
    }


def test_repeating_a_request_with_an_idempotency_key_gives_the_same_action(operator_api, nodes):
    body = {"hostlist": "gpu001", "reason": "x", "idempotency_key": "drain-gpu001-1"}
    first = operator_api.post(DRAIN_URL, body)
    second = operator_api.post(DRAIN_URL, body)
    assert first.json()["id"] == second.json()["id"]
    assert Action.objects.count() == 1


# -- jobs ----------------------------------------------------------------------------------------


def make_jobs(count, *, tenant=None, account="tenant-a", nodes=(), start=1):
    jobs = []
    now = timezone.now()
    for number in range(start, start + count):
        job = Job.objects.create(
            job_id=str(number),
            name=f"job{number}",
            user="alice",
            account=account,
            partition="gpu",
            state="RUNNING",
            submit_time=now - timedelta(minutes=number),
            start_time=now - timedelta(minutes=number),
            gpus=8 * max(len(nodes), 1),
            node_count=max(len(nodes), 1),
            nodelist=",".join(node.hostname for node in nodes),
            tenant=tenant,
            source=Job.Source.SQUEUE,
        )
        job.nodes.set(nodes)
        jobs.append(job)
    return jobs


def test_tenant_admins_see_only_their_jobs_and_viewers_none(api_as, tenant_a, tenant_b):
    mine = make_jobs(2, tenant=tenant_a)
    theirs = make_jobs(1, tenant=tenant_b, account="tenant-b", start=100)
    client = api_as(Role.TENANT_ADMIN, tenant=tenant_a)
    listed = client.get("/api/jobs/jobs/").json()["results"]
    assert sorted(row["job_id"] for row in listed) == sorted(job.job_id for job in mine)
    assert client.get(f"/api/jobs/jobs/{mine[0].job_id}/").status_code == 200
    assert client.get(f"/api/jobs/jobs/{theirs[0].job_id}/").status_code == 404
    assert api_as(Role.VIEWER).get("/api/jobs/jobs/").status_code == 403
    operator = api_as(Role.OPERATOR).get("/api/jobs/jobs/").json()
    assert operator["count"] == 3


def test_job_list_filters(operator_api, nodes, tenant_a):
    make_jobs(3, tenant=tenant_a, nodes=nodes[:1])
    make_jobs(2, tenant=tenant_a, nodes=nodes[:4], start=10)
    Job.objects.filter(job_id="1").update(state="FAILED", exit_code=1)
    assert operator_api.get("/api/jobs/jobs/?size=3-4").json()["count"] == 2
    assert operator_api.get("/api/jobs/jobs/?size=1").json()["count"] == 3
    assert operator_api.get("/api/jobs/jobs/?state=failed").json()["count"] == 1
    assert operator_api.get("/api/jobs/jobs/?live=true").json()["count"] == 4
    assert operator_api.get("/api/jobs/jobs/?node=gpu004").json()["count"] == 2
    response = operator_api.get("/api/jobs/jobs/?size=huge")
    assert response.status_code == 400 and "size" in response.json()


def test_running_job_gpu_time_counts_up(operator_api, nodes):
    job = make_jobs(1, nodes=nodes[:2])[0]
    row = operator_api.get(f"/api/jobs/jobs/{job.job_id}/").json()
    assert row["runtime_seconds"] >= 60
    assert row["gpu_seconds"] == row["runtime_seconds"] * 16
    assert row["size_bucket"] == "2"
    assert [node["hostname"] for node in row["hardware"]["nodes"]] == ["gpu001", "gpu002"]


def test_job_list_query_count_does_not_grow_with_page_size(operator_api, nodes, tenant_a):
    make_jobs(30, tenant=tenant_a, nodes=nodes[:2])
    operator_api.get("/api/jobs/jobs/?page_size=1")  # the token's first use writes last_used_at
    counts = []
    for size in (3, 30):
        with CaptureQueriesContext(connection) as queries:
            response = operator_api.get(f"/api/jobs/jobs/?page_size={size}")
        assert len(response.json()["results"]) == size
        counts.append(len(queries))
    assert counts[0] == counts[1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", [DRAIN_ACTION, RESUME_ACTION])
def test_the_node_sync_follows_a_drain_or_resume_once_its_success_is_committed(
    nodes, simulator, monkeypatch, kind
):
    """The sync was sent from inside the handler, before the Action finished: the worker held
    the Action's success (and its event) back for a broker send that is not part of it."""
    from jobs.services import request_drain, request_resume

    seen = []

    def refresh(names):
        seen.append((names, Action.objects.get(pk=action.pk).status))
        raise RuntimeError("the broker is away")  # a follow-up that fails changes nothing

    monkeypatch.setattr("jobs.action_handlers._refresh_node_states", refresh)
    request = request_drain if kind == DRAIN_ACTION else request_resume
    action, _ = request(nodes=nodes[:2], reason="follow-up order")
    assert run_action(action_id=action.pk) == "succeeded"
    assert seen == [(["gpu001", "gpu002"], ActionStatus.SUCCEEDED)]
    assert Action.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED

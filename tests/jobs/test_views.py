"""Job pages, the node's Slurm panel and the drain/resume forms behind it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import Allocation, Node
from jobs.models import Job
from jobs.services import DRAIN_ACTION, RESUME_ACTION
from portal.models import Action, Role
from tests.jobs.test_api import make_jobs


@pytest.fixture
def login(make_user):
    def client_for(role, tenant=None) -> Client:
        client = Client()
        client.force_login(make_user(role, tenant=tenant))
        return client

    return client_for


@pytest.fixture
def nodes(db):
    return [Node.objects.create(hostname=f"gpu{number:03d}") for number in range(1, 9)]


def test_job_list_shows_live_jobs_by_default_and_filters(login, nodes, tenant_a):
    make_jobs(2, tenant=tenant_a, nodes=nodes[:1])
    finished = make_jobs(1, tenant=tenant_a, nodes=nodes[:4], start=50)[0]
    Job.objects.filter(pk=finished.pk).update(state="COMPLETED", exit_code=0, signal=0)
    client = login(Role.OPERATOR)
    page = client.get("/jobs/").content.decode()
    assert 'data-live-groups="jobs"' in page
    assert ">1</a>" in page and ">2</a>" in page and ">50</a>" not in page
    assert "data-runtime-since" in page  # running jobs tick in the browser
    finished_page = client.get("/jobs/?live=0").content.decode()
    assert ">50</a>" in finished_page and ">1</a>" not in finished_page
    sized = client.get("/jobs/?live=&size=3-4").content.decode()
    assert ">50</a>" in sized and ">2</a>" not in sized
    bad = client.get("/jobs/?size=huge")
    assert bad.status_code == 200 and "unknown size" in bad.content.decode()


def test_job_pages_respect_tenants_and_roles(login, tenant_a, tenant_b):
    mine = make_jobs(1, tenant=tenant_a)[0]
    theirs = make_jobs(1, tenant=tenant_b, account="tenant-b", start=9)[0]
    client = login(Role.TENANT_ADMIN, tenant=tenant_a)
    page = client.get("/jobs/").content.decode()
    assert f">{mine.job_id}</a>" in page and f">{theirs.job_id}</a>" not in page
    assert client.get(f"/jobs/{mine.job_id}/").status_code == 200
    assert client.get(f"/jobs/{theirs.job_id}/").status_code == 404
    assert login(Role.VIEWER).get("/jobs/").status_code == 403


def test_job_list_page_query_count_does_not_grow_with_rows(login, nodes, tenant_a):
    client = login(Role.OPERATOR)
    make_jobs(3, tenant=tenant_a, nodes=nodes[:2])
    client.get("/jobs/")
    with CaptureQueriesContext(connection) as few:
        client.get("/jobs/")
    make_jobs(40, tenant=tenant_a, nodes=nodes[:2], start=100)
    with CaptureQueriesContext(connection) as many:
        client.get("/jobs/")
    assert len(many) == len(few)


def test_node_panel_shows_state_running_jobs_and_forms_for_operators(login, nodes):
    node = nodes[0]
    Node.objects.filter(pk=node.pk).update(slurm_state="draining", slurm_reason="PSU swap")
    job = make_jobs(1, nodes=[node])[0]
    page = login(Role.OPERATOR).get(f"/jobs/nodes/{node.hostname}/slurm/").content.decode()
    assert "draining" in page and "PSU swap" in page
    assert f"/jobs/{job.job_id}/" in page
    assert 'action="/jobs/nodes/drain/"' in page and 'action="/jobs/nodes/resume/"' in page
    assert f'data-live-groups="node.{node.pk}"' in page
    viewer_page = login(Role.VIEWER).get(f"/jobs/nodes/{node.hostname}/slurm/").content.decode()
    assert "draining" in viewer_page and "/jobs/nodes/drain/" not in viewer_page
    assert f"/jobs/{job.job_id}/" not in viewer_page  # jobs are tenant data


def test_tenant_admin_sees_only_allocated_nodes_panel(login, nodes, tenant_a):
    allocation = Allocation.objects.create(tenant=tenant_a, start=timezone.now() - timedelta(1))
    allocation.nodes.add(nodes[0])
    client = login(Role.TENANT_ADMIN, tenant=tenant_a)
    assert client.get(f"/jobs/nodes/{nodes[0].hostname}/slurm/").status_code == 200
    assert client.get(f"/jobs/nodes/{nodes[1].hostname}/slurm/").status_code == 404


def test_drain_form_needs_confirmation_and_a_reason(login, nodes):
    client = login(Role.ONCALL)
    back = f"/jobs/nodes/{nodes[0].hostname}/slurm/"
    response = client.post(
        "/jobs/nodes/drain/", {"node_id": nodes[0].pk, "reason": "x", "next": back}
    )
    # Back to the form, with the typed reason to fill it in again.
    assert response.status_code == 302 and response["Location"] == f"{back}?drain_reason=x"
    response = client.post(
        "/jobs/nodes/drain/",
        {"node_id": nodes[0].pk, "reason": "  ", "confirm": "yes", "next": back},
        follow=True,
    )
    assert "reason" in response.content.decode()
    assert not Action.objects.exists()

    response = client.post(
        "/jobs/nodes/drain/",
        {"node_id": nodes[0].pk, "reason": "ECC storm", "confirm": "yes", "next": back},
    )
    action = Action.objects.get()
    assert response["Location"] == f"/actions/{action.pk}/"
    assert action.kind == DRAIN_ACTION and action.parameters["nodes"] == ["gpu001"]


def test_bulk_drain_form_takes_a_hostlist(login, nodes):
    client = login(Role.OPERATOR)
    page = client.get("/jobs/nodes/bulk-drain/").content.decode()
    assert 'name="hostlist"' in page and 'name="reason"' in page
    response = client.post(
        "/jobs/nodes/drain/",
        {"hostlist": "gpu[001-008]", "reason": "leaf reboot", "confirm": "yes"},
    )
    assert response.status_code == 302
    assert Action.objects.get().parameters["nodes"] == [f"gpu{n:03d}" for n in range(1, 9)]
    response = client.post(
        "/jobs/nodes/drain/", {"hostlist": "gpu[001-009]", "reason": "x", "confirm": "yes"},
        follow=True,
    )
    assert "gpu009" in response.content.decode()
    assert Action.objects.count() == 1


def test_resume_form_reports_guards_and_honours_override(login, nodes):
    from jobs import hooks

    def guard(guarded):
        return {node.hostname: "ticket #3 open" for node in guarded}

    hooks.register_resume_guard(guard)
    try:
        client = login(Role.OPERATOR)
        form = {"node_id": nodes[1].pk, "reason": "fixed", "confirm": "yes"}
        response = client.post("/jobs/nodes/resume/", form, follow=True)
        assert "ticket #3 open" in response.content.decode()
        assert not Action.objects.exists()
        client.post("/jobs/nodes/resume/", {**form, "override": "yes"})
        assert Action.objects.get().kind == RESUME_ACTION
    finally:
        hooks._resume_guards.remove(guard)


@pytest.mark.parametrize("role", [Role.VIEWER, Role.TENANT_ADMIN])
def test_forms_refuse_roles_that_may_not_act(login, nodes, role):
    response = login(role).post(
        "/jobs/nodes/drain/", {"hostlist": "gpu001", "reason": "x", "confirm": "yes"}
    )
    assert response.status_code == 403
    assert not Action.objects.exists()


def test_drain_form_ignores_a_foreign_next_url(login, nodes):
    response = login(Role.OPERATOR).post(
        "/jobs/nodes/drain/", {"hostlist": "gpu001", "reason": "x", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/jobs/nodes/bulk-drain/?hostlist=gpu001&drain_reason=x"


def test_node_list_offers_a_bulk_drain_of_its_hostlist_to_responders(make_user):
    from django.test import Client

    from portal.models import Role

    responder, viewer = Client(), Client()
    responder.force_login(make_user(Role.ONCALL))
    viewer.force_login(make_user(Role.VIEWER))
    listing = responder.get("/inventory/?hostlist=gpu[001-016]").content.decode()
    assert "/jobs/nodes/bulk-drain/?hostlist=gpu%5B001-016%5D" in listing
    assert "bulk-drain" not in viewer.get("/inventory/").content.decode()
    form = responder.get("/jobs/nodes/bulk-drain/?hostlist=gpu[001-016]").content.decode()
    assert 'value="gpu[001-016]"' in form

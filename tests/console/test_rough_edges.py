"""Rough edges operators met on the pages, each with the test that failed before its fix."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from faults.workflow import Status
from portal.models import Role
from tests.faults.test_workflow import ticket_in

pytestmark = pytest.mark.django_db
REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture
def browser_as(make_user):
    def login(role, tenant=None):
        browser = Client()
        browser.force_login(make_user(role, tenant=tenant))
        return browser

    return login


def test_a_refused_transition_names_states_by_their_labels(api_as):
    ticket = ticket_in(Status.AWAITING_VENDOR)
    response = api_as(Role.ONCALL).post(
        f"/api/faults/tickets/{ticket.pk}/transition/", {"to_status": "false_positive"},
        format="json")
    assert response.status_code == 409
    message = response.json()["to_status"][0]
    assert message == (f"FT-{ticket.pk} is Awaiting vendor: cannot go to False positive. "
                       "Allowed: Resolved, Mitigating.")
    assert response.json()["allowed"] == ["resolved", "mitigating"]  # values stay for machines


def test_a_resolution_without_a_method_lists_the_methods_by_label(api_as):
    ticket = ticket_in(Status.TRIAGED, category="gpu")
    response = api_as(Role.ONCALL).post(
        f"/api/faults/tickets/{ticket.pk}/transition/", {"to_status": "resolved"}, format="json")
    assert response.status_code == 400
    assert "Warm reboot, Cold reboot, GPU reset" in response.json()["recovery_method"][0]
    assert "warm_reboot" not in response.json()["recovery_method"][0]


@pytest.mark.parametrize("role", [Role.ADMIN, Role.VIEWER, Role.TENANT_ADMIN])
def test_every_page_links_the_api_docs(browser_as, role):
    html = browser_as(role).get("/").content.decode()
    assert '<a class="topbar-link" href="/api/docs/">API</a>' in html


def test_the_demo_writes_its_logins_for_demo_run_to_print_last(tmp_path, capsys):
    logins = tmp_path / "demo-logins.txt"
    call_command("seed_demo", password="s3cret-demo", logins_file=str(logins))
    text = logins.read_text()
    assert "demo-operator" in text and "password: s3cret-demo" in text
    assert stat.S_IMODE(logins.stat().st_mode) == 0o600
    makefile = (REPOSITORY / "Makefile").read_text()
    # The import's 40 lines of progress come before the logins, not after them.
    assert makefile.index("manage.py import_topology") < makefile.index("manage.py seed_demo")


SORTABLE = {
    "/inventory/": ["hostname", "pod", "rack", "status", "slurm_state", "gpus", "model", "serial"],
    "/inventory/switches/": ["hostname", "role", "pod", "rail", "status", "model", "nos",
                             "management", "ports"],
    "/inventory/cables/": ["id", "type", "length", "status", "label"],
    "/jobs/": ["job", "name", "user", "account", "partition", "state", "nodes", "gpus",
               "submitted", "exit"],
    "/faults/tickets/": ["ticket", "status", "severity", "category", "summary", "detected",
                         "recovery"],
    "/actions/": ["id", "kind", "target", "status", "attempts", "by", "created"],
    "/audit/": ["when", "who", "via", "operation", "object"],
    "/tenants/": ["name", "slug", "account", "vni", "users"],
    "/fabric/lldp/": ["kind", "what", "first_seen", "last_seen"],
}


@pytest.mark.parametrize("path", sorted(SORTABLE))
def test_every_list_sorts_by_each_column_header(browser_as, path):
    browser = browser_as(Role.ADMIN)
    first = browser.get(path, {"live": ""}).content.decode()
    for column in SORTABLE[path]:
        assert f"ordering={column}" in first or f"ordering=-{column}" in first, (path, column)
        response = browser.get(path, {"ordering": f"-{column}", "live": ""})
        assert response.status_code == 200, (path, column)
        html = response.content.decode()
        assert 'aria-sort="descending"' in html and f"ordering={column}" in html, (path, column)
    # A column the list does not offer is ignored: the default order, no error.
    assert browser.get(path, {"ordering": "password"}).status_code == 200


def test_sorting_orders_the_rows_and_keeps_the_filters(browser_as, tenant_a, tenant_b):
    from tests.jobs.test_api import make_jobs

    make_jobs(1, tenant=tenant_a, start=999)
    make_jobs(1, tenant=tenant_a, start=1098)
    browser = browser_as(Role.OPERATOR)
    by_id = browser.get("/jobs/", {"ordering": "job", "user": "alice"}).content.decode()
    assert by_id.index(">999</a>") < by_id.index(">1098</a>")  # numbers, not text
    assert re.search(r'href="\?(ordering=-job&amp;user=alice|user=alice&amp;ordering=-job)"', by_id)
    newest_first = browser.get("/tenants/", {"ordering": "-name"}).content.decode()
    assert newest_first.index("Tenant B") < newest_first.index("Tenant A")


def test_pages_show_24_hour_times_with_the_time_zone(browser_as):
    from portal.services.actions import enqueue_action

    enqueue_action(kind="portal.canary", target="clock", reason="times")
    html = browser_as(Role.OPERATOR).get("/actions/").content.decode()
    assert re.search(r">\d{4}-\d\d-\d\d [012]\d:[0-5]\d:[0-5]\d UTC</time>", html)
    live_js = (REPOSITORY / "static/js/live.js").read_text()
    assert 'replace("T", " ")} UTC`' in live_js  # rows added live read the same


def test_an_empty_chart_says_no_data_instead_of_an_empty_frame(browser_as, tenant_a):
    browser = browser_as(Role.OPERATOR)
    statistics = browser.get("/faults/statistics/").content.decode()
    assert 'id="fault-month-chart-empty"' in statistics and "No fault tickets yet." in statistics
    assert 'id="fault-month-chart"' not in statistics
    analytics = browser.get("/jobs/analytics/").content.decode()
    assert analytics.count("No finished jobs in this period.</p>") >= 3
    assert "No jobs submitted in this period." in analytics
    tenant = browser.get(f"/tenants/{tenant_a.slug}/").content.decode()
    assert "No GPU-hours used or allocated in this period." in tenant
    assert 'id="usage-chart"' not in tenant


def test_a_refused_ticket_form_keeps_what_was_typed(browser_as):
    ticket = ticket_in(Status.TRIAGED, category="gpu")
    browser = browser_as(Role.ONCALL)
    refused = browser.post(f"/faults/{ticket.pk}/transition/", {
        "to_status": "resolved", "category": "gpu", "subtype": "ecc", "recovery_method": "",
        "rma_part": "GPU tray", "note": "swapped after XID 79"})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "Say how it was fixed" in html  # the refusal, on the page
    assert 'value="swapped after XID 79"' in html and 'value="GPU tray"' in html
    assert '<option value="resolved" selected>Resolved</option>' in html
    ticket.refresh_from_db()
    assert ticket.status == Status.TRIAGED


def test_a_refused_drain_form_comes_back_filled_in(browser_as):
    from inventory.models import Node

    Node.objects.create(hostname="gpu001")
    browser = browser_as(Role.OPERATOR)
    refused = browser.post("/jobs/nodes/drain/", {
        "hostlist": "gpu[001-003]", "reason": "XID 79 on two", "confirm": "yes",
        "next": "/jobs/nodes/bulk-drain/"}, follow=True)
    html = refused.content.decode()
    assert "Nothing was queued" in html and "unknown node(s): gpu[002-003]" in html
    assert 'value="gpu[001-003]"' in html and 'value="XID 79 on two"' in html

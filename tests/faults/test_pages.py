"""The fault pages: board (filters, acknowledge and transition in place), ticket page (timeline,
history, Actions), the report form, statistics, and the node panel for other apps' pages."""

from __future__ import annotations

import json
import re

import pytest
from django.template import Context, Template
from django.test import Client, RequestFactory
from django.utils import timezone

from faults.models import FaultTicket, TimelineKind
from faults.selectors import is_repeat_offender
from faults.services.intake import receive_platform_event
from faults.services.tickets import transition_ticket
from faults.workflow import Status, is_reopenable
from inventory.models import GPU
from portal.models import Action, Role
from tests.faults.conftest import post_json, xid_event


@pytest.fixture
def oncall_page(make_user):
    client = Client()
    client.user = make_user(Role.ONCALL)
    client.force_login(client.user)
    return client


def deliver(**fields):
    return receive_platform_event(raw_body=json.dumps(xid_event(**fields)))[0]


def test_board_shows_open_tickets_in_their_columns_and_filters(fleet, oncall_page):
    gpu_fault = deliver()
    switch_fault = receive_platform_event(
        raw_body=json.dumps({"kind": "switch_reboot", "switch": "leaf-p1-r0"}))[0]
    transition_ticket(ticket=switch_fault, to_status="triaged", actor=oncall_page.user)
    page = oncall_page.get("/faults/")
    assert page.status_code == 200
    columns = {status: [t.pk for t in tickets] for status, tickets in page.context["columns"]}
    assert columns["new"] == [gpu_fault.pk] and columns["triaged"] == [switch_fault.pk]
    html = page.content.decode()
    assert 'data-live-groups="faults"' in html and "faults.css" in html and "faults.js" in html
    filtered = oncall_page.get("/faults/", {"category": "interconnect_switch"}).context["columns"]
    assert [t.pk for _, tickets in filtered for t in tickets] == [switch_fault.pk]
    by_pod = oncall_page.get("/faults/", {"pod": "pod1"}).context["columns"]
    assert {t.pk for _, tickets in by_pod for t in tickets} == {gpu_fault.pk, switch_fault.pk}
    assert not [t for _, ts in oncall_page.get("/faults/", {"pod": "pod2"}).context["columns"]
                for t in ts]
    by_component = oncall_page.get("/faults/", {"component": "gpu"}).context["columns"]
    assert [t.pk for _, tickets in by_component for t in tickets] == [gpu_fault.pk]


def test_board_query_count_does_not_grow_with_tickets(fleet, oncall_page,
                                                      django_assert_max_num_queries):
    deliver()
    with django_assert_max_num_queries(30) as few:
        oncall_page.get("/faults/")
    baseline_count = len(few.captured_queries)  # now: a later request resets the log
    assert baseline_count > 0
    for index in range(6):
        deliver(node="gpu002", gpu=index)
    with django_assert_max_num_queries(baseline_count):
        oncall_page.get("/faults/")


def test_acknowledge_and_transition_in_place_with_htmx(fleet, oncall_page):
    ticket = deliver()
    htmx = {"HTTP_HX_REQUEST": "true"}
    card = oncall_page.post(f"/faults/{ticket.pk}/acknowledge/", **htmx)
    assert card.status_code == 200
    assert f'id="ticket-card-{ticket.pk}"' in card.content.decode()
    assert oncall_page.user.username in card.content.decode()
    refused = oncall_page.post(f"/faults/{ticket.pk}/transition/", {"to_status": "closed"}, **htmx)
    assert "Allowed: Triaged, False positive" in refused.content.decode()
    moved = oncall_page.post(
        f"/faults/{ticket.pk}/transition/", {"to_status": "triaged", "note": "XID 79 real"}, **htmx)
    assert moved.status_code == 200
    ticket.refresh_from_db()
    assert ticket.status == "triaged" and ticket.responder == oncall_page.user
    # Without htmx: a redirect to the ticket with a message.
    response = oncall_page.post(f"/faults/{ticket.pk}/transition/", {
        "to_status": "mitigating", "note": "drained by policy"})
    assert response.status_code == 302 and response.url == f"/faults/{ticket.pk}/"


def test_ticket_page_shows_timeline_actions_and_repeat_offender(fleet, oncall_page):
    first = deliver()
    transition_ticket(ticket=first, to_status="false_positive", actor=oncall_page.user)
    second = deliver()
    transition_ticket(ticket=second, to_status="false_positive", actor=oncall_page.user)
    third = deliver()
    page = oncall_page.get(f"/faults/{third.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert [t.pk for t in page.context["history"]] == [second.pk, first.pk]
    assert "repeat offender" in html
    drain = Action.objects.get(kind="slurm.drain", fault_tickets=first)
    assert f"/actions/{drain.pk}/" in oncall_page.get(f"/faults/{first.pk}/").content.decode()
    assert "XID 79 GPU fell off the bus" in html
    assert oncall_page.post(f"/faults/{third.pk}/notes/", {"text": "reseated"}).status_code == 302
    assert third.timeline.filter(kind="note", text="reseated").exists()


def history_heading(client, ticket) -> str:
    html = client.get(f"/faults/{ticket.pk}/").content.decode()
    return re.search(r'id="history-title">(.*?)</h2>', html, re.DOTALL).group(1)


def vendor_proposed_on_repeat(ticket) -> bool:
    return ticket.timeline.filter(kind=TimelineKind.PROPOSAL,
                                  text__contains="repeat offender").exists()


@pytest.mark.parametrize("threshold", [2, 3])
def test_page_and_policy_agree_on_the_repeat_offender(fleet, oncall_page, settings, threshold):
    """The page shows the policy's answer: earlier tickets against FAULTS_REPEAT_THRESHOLD. The
    first ticket has two later ones in its history, which does not make it a repeat offender."""
    settings.FAULTS_REPEAT_THRESHOLD = threshold
    tickets = []
    for _ in range(3):
        tickets.append(deliver())
        transition_ticket(ticket=tickets[-1], to_status="false_positive", actor=oncall_page.user)
    first, _, third = tickets
    assert vendor_proposed_on_repeat(third) == (threshold == 2)
    assert not vendor_proposed_on_repeat(first)
    for ticket in tickets:
        said = "repeat offender" in history_heading(oncall_page, ticket)
        assert said == is_repeat_offender(ticket) == vendor_proposed_on_repeat(ticket)
    assert "2 other tickets" in history_heading(oncall_page, first)


def test_page_offers_reopen_where_the_workflow_allows_it(fleet, oncall_page):
    ticket = deliver()
    reopen = f'action="/faults/{ticket.pk}/reopen/"'
    for status in Status.values:
        FaultTicket.objects.filter(pk=ticket.pk).update(status=status, resolved_at=timezone.now())
        html = oncall_page.get(f"/faults/{ticket.pk}/").content.decode()
        assert (reopen in html) == is_reopenable(status), status


def test_form_and_api_name_the_reported_gpu_alike(fleet, oncall_page, api_as):
    GPU.objects.filter(node__hostname="gpu001", index=5).delete()
    api = api_as(Role.ONCALL)
    for fields, expected in (
        ({"gpu": 3}, "Name the node the GPU is in."),
        ({"node": "gpu001", "gpu": 5}, "gpu001 has no GPU5."),
    ):
        refused = post_json(api, "/api/faults/tickets/", {"summary": "NCCL hangs", **fields})
        assert refused.status_code == 400 and refused.json()["gpu"] == [expected]
        page = oncall_page.post("/faults/report/", {"summary": "NCCL hangs", **fields})
        assert page.status_code == 400 and page.context["form"].errors["gpu"] == [expected]
    assert not FaultTicket.objects.exists()


def test_report_form_opens_a_ticket_and_refuses_bad_input(fleet, oncall_page):
    assert oncall_page.get("/faults/report/").status_code == 200
    bad = oncall_page.post("/faults/report/", {"summary": "", "node": "gpu001"})
    assert bad.status_code == 400 and bad.context["form"].errors["summary"]
    no_gpu = oncall_page.post("/faults/report/", {"summary": "x", "node": "gpu001", "gpu": "7",
                                                  "category": "nope"})
    assert no_gpu.status_code == 400
    response = oncall_page.post("/faults/report/", {
        "summary": "NCCL timeouts on gpu002", "node": "gpu002", "gpu": "4", "category": "gpu"})
    ticket = FaultTicket.objects.get()
    assert response.status_code == 302 and response.url == f"/faults/{ticket.pk}/"
    assert ticket.sources == ["user_report"] and ticket.gpu.index == 4


def test_statistics_page_renders_table_and_chart_data(fleet, oncall_page):
    deliver()
    page = oncall_page.get("/faults/statistics/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "vendor/uplot/uPlot.iife.min.js" in html and 'id="fault-chart-data"' in html
    assert "GPU (ECC / HW error / unresponsive)" in html and "100.0" in html


def test_ticket_list_filters_by_node(fleet, oncall_page):
    deliver()
    deliver(node="gpu002")
    page = oncall_page.get("/faults/tickets/", {"node": "gpu002"})
    assert [t.node.hostname for t in page.context["tickets"]] == ["gpu002"]


def test_node_panel_for_other_apps(fleet, make_user):
    ticket = deliver()
    template = Template('{% include "faults/_node_faults_panel.html" %}')
    request = RequestFactory().get("/")
    request.user = make_user(Role.VIEWER)
    html = template.render(Context({"node": fleet.nodes[0], "request": request}))
    assert ticket.reference in html and "/faults/tickets/?node=gpu001" in html
    quiet = template.render(Context({"node": fleet.nodes[1], "request": request}))
    assert "No open fault tickets" in quiet
    request.user = make_user(Role.TENANT_ADMIN)
    assert template.render(Context({"node": fleet.nodes[0], "request": request})).strip() == ""

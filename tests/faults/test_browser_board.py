"""The on-call board in real headless Chromium against a real server, worker and channel layer:
a platform event appears without a reload, and a ticket is triaged in place."""

from __future__ import annotations

import json
import urllib.request

import pytest

from faults.models import FaultTicket
from portal.models import Role
from portal.services.accounts import api_token_create
from tests.conftest import ARTIFACTS
from tests.faults.conftest import build_fleet, xid_event

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]
PASSWORD = "correct-horse-battery"  # the make_user fixture's password


def post_json(url: str, body: dict, token: str) -> int:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def test_board_updates_live_and_triages_in_place(portal_server, browser_page, make_user):
    build_fleet()
    page = browser_page
    oncall = make_user(Role.ONCALL)
    page.goto(f"{portal_server.url}/login/")
    page.fill("#id_username", oncall.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{portal_server.url}/")
    page.goto(f"{portal_server.url}/faults/")
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)

    _, key = api_token_create(user=make_user(Role.OPERATOR), name="node agent")
    assert post_json(f"{portal_server.url}/api/faults/events/", xid_event(), key) == 201
    ticket = FaultTicket.objects.get()
    card = f"[data-status=new] #ticket-card-{ticket.pk}"
    page.wait_for_selector(card, timeout=15_000)
    page.screenshot(path=str(ARTIFACTS / "faults-board-live.png"), full_page=True)

    page.select_option(f"#to-{ticket.pk}", "triaged")
    page.fill(f"#note-{ticket.pk}", "real XID 79")
    page.click(f"#ticket-card-{ticket.pk} .fault-transition button[type=submit]")
    page.wait_for_selector(f"[data-status=triaged] #ticket-card-{ticket.pk}", timeout=15_000)
    ticket.refresh_from_db()
    assert ticket.status == "triaged" and ticket.responder == oncall

    page.goto(f"{portal_server.url}/faults/{ticket.pk}/")
    page.get_by_text("drain of gpu001 queued").wait_for(timeout=5_000)
    page.screenshot(path=str(ARTIFACTS / "faults-ticket.png"), full_page=True)
    page.goto(f"{portal_server.url}/faults/statistics/")
    page.wait_for_selector("#fault-month-chart canvas", timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "faults-statistics.png"), full_page=True)

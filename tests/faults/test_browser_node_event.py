"""An XID reported from the node page, in real headless Chromium against a real server and
worker (issue 26 item 7's second story): the on-call engineer picks the GPU from the node's own
GPUs, the ticket opens and drains the node (the node page says drained, with the ticket's
reason), and the ticket page asks before a resume."""

from __future__ import annotations

import pytest

from faults.models import FaultTicket, Source
from portal.models import Role
from tests.conftest import ARTIFACTS
from tests.faults.conftest import build_fleet
from tests.support import sign_in_page, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

PLACEMENT = "section[aria-labelledby=placement-heading]"  # the node page's Slurm state and reason


@pytest.mark.parametrize("width", [1280, 1920])
def test_an_xid_reported_from_the_node_page_opens_a_ticket_that_asks_before_resuming(
    portal_server, browser_page, make_user, width
):
    build_fleet()
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    sign_in_page(page, portal_server.url, make_user(Role.ONCALL))
    page.goto(f"{portal_server.url}/inventory/nodes/gpu001/")
    panel = page.locator("#node-report-event")
    # The heading sits beside its disclosure triangle (faults.css styles the panel on the
    # inventory's page too; without it the triangle stood on a line of its own).
    assert panel.locator("summary h2").evaluate("e => getComputedStyle(e).display") == "inline"
    panel.locator("summary").click()
    form = panel.locator("form")
    form.locator("select[name=kind]").select_option("xid")
    # Only what an XID needs shows: the GPU and the XID, not the NIC or the ECC counts.
    assert form.locator("[data-event-field=nic]").is_hidden()
    assert form.locator("[data-event-field=double_bit]").is_hidden()
    form.locator("select[name=gpu]").select_option("3")
    assert "serial 1654322001" in form.locator("select[name=gpu] option:checked").inner_text()
    form.locator("select[name=xid]").select_option("79")
    form.locator("input[name=message]").fill("NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off")
    page.screenshot(path=str(ARTIFACTS / f"faults-node-event-form-{width}.png"), full_page=True)
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/faults/*/", timeout=15_000)

    ticket = FaultTicket.objects.get()
    assert ticket.sources == [Source.USER_REPORT] and ticket.gpu.index == 3
    page.get_by_text("drain of gpu001 queued").wait_for(timeout=10_000)
    # A fresh critical ticket: no one-click resume; the resume asks first.
    assert page.locator("#ticket-recovery form.inline-form [data-step=resume]").count() == 0
    page.screenshot(path=str(ARTIFACTS / f"faults-node-event-ticket-{width}.png"), full_page=True)

    # The drain is done, not only queued: the node page says drained, with the ticket's reason,
    # and lists the ticket among its open faults.
    page.locator("#ticket-facts a[href='/inventory/nodes/gpu001/']").click()
    page.wait_for_url("**/inventory/nodes/gpu001/", timeout=15_000)

    def node_page_says_drained() -> bool:
        page.reload()
        return "drained" in page.locator(PLACEMENT).inner_text()

    wait_for(node_page_says_drained, 30, "the node page to show gpu001 drained", poll=1)
    assert f"{ticket.reference}: XID 79 GPU fell off the bus" in (
        page.locator(PLACEMENT).inner_text())
    assert ticket.reference in page.locator(".fault-node-panel").inner_text()
    page.screenshot(path=str(ARTIFACTS / f"faults-node-event-drained-{width}.png"),
                    full_page=True)

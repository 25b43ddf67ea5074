"""The job list in headless Chromium: rows arrive live over the websocket, runtimes tick."""

from __future__ import annotations

import pytest

from inventory.models import Node
from jobs.models import Job
from jobs.sync import sync_live_jobs
from portal.models import Role
from tests.conftest import ARTIFACTS
from tests.portal.test_browser_live import log_in

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_new_jobs_appear_without_a_reload_and_runtimes_tick(
    portal_server, browser_page, make_user, make_simulator, clock
):
    for number in range(1, 9):
        Node.objects.create(hostname=f"gpu{number:03d}")
    driver = make_simulator(nodes=8, mean_arrival_seconds=60)
    page = browser_page
    log_in(page, portal_server, make_user(Role.OPERATOR).username)
    page.goto(f"{portal_server.url}/jobs/")
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    assert page.locator("#job-rows tr[data-job-id]").count() == 0

    clock.advance(minutes=30)
    sync_live_jobs(driver=driver)  # publishes on "jobs"; the open page refreshes its rows
    running = Job.objects.filter(state="RUNNING").order_by("job_id").first()
    assert running is not None
    row = f"#job-row-{running.pk}"
    page.wait_for_selector(row, timeout=15_000)
    ticking = page.locator(f"{row} [data-runtime-since]")
    before = ticking.inner_text()
    page.wait_for_timeout(2_200)
    assert ticking.inner_text() != before
    page.screenshot(path=str(ARTIFACTS / "jobs-list-live.png"), full_page=True)

"""The maintenance calendar in real headless Chromium, as an operator uses it: a leaf window
planned for later appears on the calendar as scheduled, is started from the page and shows as
running, with its switch's maintenance linked; screenshots at 1280 and 1920 px (issue 26
items 2 and 7). The drain, the wait for jobs, the shut and the end against the real slurmctld
are tests/fabric/test_maintenance_real_slurm.py and test_maintenance_windows_real_slurm.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from fabric.models import MaintenanceWindow
from portal.models import Role
from tests.support import sign_in_page

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: a small fleet and the emulated fabric
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LEAF = "leaf-p1-r3"


def test_a_leaf_window_planned_for_later_is_on_the_calendar_and_started_from_it(
    live_server, browser_page, make_user, small_fleet, emulated, tmp_path
):
    page = browser_page
    sign_in_page(page, live_server.url, make_user(Role.OPERATOR))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/")
    page.locator(".mainnav a").filter(has_text="Maintenance").click()
    expect(page.locator("h1")).to_have_text("Maintenance calendar")

    start = (timezone.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    page.fill("#planned_start", start.strftime("%Y-%m-%dT%H:%M"))
    page.fill("#planned_end", (start + timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M"))
    page.fill("#switches", LEAF)
    page.fill("#reason", "replace the PSU of the leaf")
    page.locator("#plan-window button[type=submit]").click()
    window = MaintenanceWindow.objects.get()
    row = page.locator(f'tr[data-window="{window.pk}"]')
    expect(row).to_contain_text("scheduled")
    expect(row).to_contain_text(LEAF)
    expect(page.locator(".calendar-scheduled").first).to_contain_text(f"#{window.pk}")
    page.screenshot(path=str(tmp_path / "calendar-scheduled-1280.png"), full_page=True)

    row.get_by_role("button", name="Start now").click()
    expect(row).to_contain_text("running")
    expect(row.get_by_role("button", name="End now")).to_be_visible()
    expect(row.locator("a").filter(has_text=f"{LEAF}: starting")).to_be_visible()
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.screenshot(path=str(tmp_path / "calendar-running-1920.png"), full_page=True)
    print(f"screenshots: {tmp_path}")

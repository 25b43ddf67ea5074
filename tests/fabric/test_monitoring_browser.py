"""The fabric pages in real headless Chromium against a real server and channel layer: the
overview's row of a switch changes without a reload when a poll sees a port's load change, and
the switch detail draws its history charts from the API."""

import re
import threading

import pytest

from portal.models import Role
from tests.conftest import ARTIFACTS
from tests.fabric.monitoring_support import FakeClock, import_fleet, poll_every_minute

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]
PASSWORD = "correct-horse-battery"  # the make_user fixture's password


@pytest.fixture
def live_fabric(settings):
    import time

    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric

    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    import_fleet(4)
    clock = FakeClock(float(int(time.time()) // 60 * 60 - 600))
    fabric = build_emulated_fabric(clock=clock)
    fabric.fake_clock = clock
    poll_every_minute(fabric, 3)
    yield fabric
    reset_emulated_fabric()


def poll_outside_the_browser_loop(fabric) -> None:
    """Poll in a thread of its own: Playwright's event loop in this thread would make the
    publish on commit refuse to run (async_to_sync inside a running loop)."""
    from django.db import connection

    failures = []

    def poll():
        try:
            poll_every_minute(fabric, 1)
        except Exception as error:  # surfaced in the test's thread below
            failures.append(error)
        finally:
            connection.close()

    worker = threading.Thread(target=poll)
    worker.start()
    worker.join(timeout=60)
    assert not failures, failures


def log_in(page, server, username):
    page.goto(f"{server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def test_overview_moves_live_and_the_detail_draws_history(
    live_fabric, portal_server, browser_page, make_user
):
    page = browser_page
    frames: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda f: frames.append(f)))
    log_in(page, portal_server, make_user(Role.OPERATOR).username)
    page.goto(f"{portal_server.url}/fabric/")
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    row = '#switch-rows tr[data-switch="leaf-p1-r1"]'
    assert page.get_attribute(row, "data-state") == "ok"
    page.screenshot(path=str(ARTIFACTS / "fabric-overview.png"), full_page=True)

    live_fabric.switches["leaf-p1-r1"].set_utilization("Ethernet4", 0.96)
    poll_outside_the_browser_loop(live_fabric)  # committed: the events leave now
    # The delta itself reached the browser (a reconnect's page refresh would also move the row).
    for _ in range(100):
        if any('"fabric.overview"' in str(frame) and "leaf-p1-r1" in str(frame)
               for frame in frames):
            break
        page.wait_for_timeout(100)
    else:
        pytest.fail("no fabric.overview event reached the browser")
    page.wait_for_selector(f'{row}[data-state="hot"]', timeout=10_000)
    worst = re.fullmatch(r"Ethernet4 (\d+)%", page.text_content(f"{row} [data-cell=worst]"))
    assert worst and int(worst.group(1)) >= 90

    # A pod's port cells carry no title in the HTML: it is written from the cell's data when
    # the pointer reaches it, with the load the live event brought.
    page.goto(f"{portal_server.url}/fabric/?pod=p1")
    cell = ('#fabric-heatmap .fabric-switch[data-switch="leaf-p1-r1"] '
            '.port-cell[data-port="Ethernet4"]')
    assert page.get_attribute(cell, "title") is None
    page.hover(cell)
    title = re.fullmatch(r"Ethernet4: up, (\d+)% load, host-facing",
                         page.get_attribute(cell, "title") or "")
    assert title and int(title.group(1)) >= 90

    page.goto(f"{portal_server.url}/fabric/")
    page.click(f"{row} a")  # drill down to the switch's ports
    page.wait_for_selector("#chart-throughput canvas", timeout=15_000)
    page.wait_for_selector("#chart-congestion canvas", timeout=5_000)
    assert "samples" in page.text_content("#chart-status")
    # The chart's times are 24-hour and name the zone, like the pages.
    page.hover("#chart-throughput .u-over")
    when = page.text_content("#chart-throughput .u-legend .u-series:first-child .u-value")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d [012]\d:[0-5]\d UTC", when.strip()), when
    assert page.locator('#port-rows tr[data-port="Ethernet4"]').count() == 1
    page.screenshot(path=str(ARTIFACTS / "fabric-switch-detail.png"), full_page=True)

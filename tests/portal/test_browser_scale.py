"""At scale 20 (2,000 nodes, 330 switches) in real headless Chromium against a real
server (daphne) and the Redis channel layer: the fabric overview and its live delta after a poll,
the cluster grid's compact mode and its problems-only view.

The scale-20 fleet is imported, polled and given its problems once per module (committed, and
deleted at the end): each test only loads pages, so the module stays within seconds of that
setup. No Celery worker is needed: polls run in this process and publish through Redis.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import ARTIFACTS, CHROMIUM_FLAGS, PortalServerProcess
from tests.support import outside_the_browser_loop

# django_db: the database is set up for this module (its data is committed by the fixture).
pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db]
SCALE = 20
PASSWORD = "correct-horse-battery"
EMULATED = "fabric.drivers.emulated.EmulatedDriver"
# Polled as a whole fabric would be, but only these: a full scale-20 poll (43,000 ports) takes
# tens of seconds on the shared 2-core machine, and the overview treats the rest as not polled.
POLLED = ["leaf-p1-r0", "leaf-p1-r1", "leaf-p2-r0", "leaf-p2-r3", "spine-1", "spine-2"]


def truncate_inventory() -> None:
    """Empty the inventory and what hangs off it (fabric counters, fault tickets, job nodes) in
    one statement: deleting scale 20 row by row takes longer than the tests themselves."""
    from django.db import connection

    from fabric.models import PortCounterHistory
    from inventory.models import Node, Pod, Switch, TopologyImportRun
    from portal.models import AuditEntry

    tables = [model._meta.db_table
              for model in (Pod, Node, Switch, TopologyImportRun, PortCounterHistory)]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")
    AuditEntry.objects.filter(object_type="inventory.topologyimportrun").delete()


@pytest.fixture(scope="module")
def scale_world(django_db_setup, django_db_blocker):
    """Scale 20 imported once, some switches polled twice a minute apart, nodes drained, down
    and ticketed, an operator; the real server on the test database; Chromium logged in."""
    if not os.environ.get("REDIS_URL"):
        pytest.fail("these tests need REDIS_URL (the server and the tests share its channel layer)")
    from django.conf import settings
    from django.test import override_settings
    from django.utils import timezone
    from playwright.sync_api import sync_playwright

    from fabric.drivers.emulated import (
        build_emulated_fabric,
        reset_emulated_fabric,
        specs_from_inventory,
    )
    from faults.models import FaultTicket
    from inventory.models import Node
    from inventory.topology.importer import import_topology
    from portal.models import Role, User
    from portal.services.accounts import user_create
    from tests.fabric.monitoring_support import FakeClock, fleet_spec, poll_every_minute

    started = time.monotonic()
    with django_db_blocker.unblock(), override_settings(FABRIC_DRIVER=EMULATED):
        truncate_inventory()
        # The emulator is built from the scale-1 inventory (pods p1, p2, the spines), which the
        # scale-20 import then extends in place: reading every switch of scale 20 into emulator
        # specs costs ten seconds, and only the switches in POLLED are polled.
        import_topology(fleet_spec())
        specs = [spec for spec in specs_from_inventory() if spec.hostname in POLLED]
        fabric = build_emulated_fabric(specs, clock=FakeClock(float(int(time.time()) // 60 * 60)))
        fabric.fake_clock = fabric.clock
        fabric.switches["leaf-p2-r3"].set_link_up("Ethernet0", False)
        import_topology(fleet_spec(), scale=SCALE)
        print(f"\nimported and emulated in {time.monotonic() - started:.1f}s")
        poll_every_minute(fabric, 2, POLLED)
        Node.objects.filter(hostname__in=["gpu117", "gpu1999"]).update(slurm_state="drained",
                                                                       slurm_reason="NVLink")
        Node.objects.filter(hostname="gpu500").update(slurm_state="down")
        Node.objects.exclude(slurm_state__in=["drained", "down"]).update(slurm_state="allocated")
        FaultTicket.objects.create(node=Node.objects.get(hostname="gpu042"), category="gpu",
                                   summary="XID 79", detected_at=timezone.now())
        user = user_create(username="scale-operator", role=Role.OPERATOR, password=PASSWORD)
        # The node grid of 2,000 cells, as a site that raises the dashboard's aggregate
        # threshold gets it (by default 2,000 nodes are drawn as pods: tests/console/
        # test_dashboard_fleet.py); these tests are about that grid at this size.
        server = PortalServerProcess(settings.DATABASES["default"]["NAME"],
                                     extra_env={"DASHBOARD_AGGREGATE_ABOVE_NODES": "5000"})
        server.start()
        print(f"server up in {time.monotonic() - started:.1f}s")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "1"  # ORM calls beside Playwright's loop
    ARTIFACTS.mkdir(exist_ok=True)
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=CHROMIUM_FLAGS)
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")
    print(f"\nscale {SCALE} world ready in {time.monotonic() - started:.1f}s")
    try:
        yield {"server": server, "page": page, "fabric": fabric, "blocker": django_db_blocker}
    finally:
        browser.close()
        playwright.stop()
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        server.stop()
        reset_emulated_fabric()
        with django_db_blocker.unblock():
            truncate_inventory()
            User.objects.filter(username=user.username).delete()


def test_fabric_overview_is_small_problems_first_and_follows_a_poll(scale_world):
    server, page, fabric = scale_world["server"], scale_world["page"], scale_world["fabric"]
    frames: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda f: frames.append(f)))
    response = page.goto(f"{server.url}/fabric/")
    assert len(response.body()) <= 300_000
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    page.evaluate("window.__sameDocument = 'yes'")  # gone if anything reloads the page
    assert page.locator("#switch-rows tr[data-switch]").count() == 330
    first = page.locator("#switch-rows tr[data-switch]").first
    assert first.get_attribute("data-switch") == "leaf-p2-r3"  # its cable is cut
    assert first.locator("[data-cell=worst]").text_content() == "Ethernet0 down"
    assert page.get_attribute("#group-rows tr:first-child", "data-group") == "p2"
    assert page.text_content('#switch-rows tr[data-switch="leaf-p9-r0"] [data-cell=traffic]') == "—"
    page.screenshot(path=str(ARTIFACTS / "scale20-fabric-overview.png"))

    def hot_port_and_poll():
        with scale_world["blocker"].unblock(), _emulated():
            from tests.fabric.monitoring_support import poll_every_minute

            fabric.switches["leaf-p1-r1"].set_utilization("Ethernet8", 0.97)
            poll_every_minute(fabric, 1, POLLED)

    requests_before = []
    page.on("request", lambda request: requests_before.append(request.url))
    outside_the_browser_loop(hot_port_and_poll)
    hot = '#switch-rows tr[data-switch="leaf-p1-r1"][data-state="hot"]'
    page.wait_for_selector(hot, timeout=15_000)
    assert page.text_content(f"{hot} [data-cell=worst]").startswith("Ethernet8 9")
    # Problems first, in place: the hot leaf moved up to just below the one with a port down.
    assert page.get_attribute("#switch-rows tr:nth-child(2)", "data-switch") == "leaf-p1-r1"
    deltas = [f for f in frames if '"fabric.overview"' in str(f)]
    assert deltas and len(str(deltas[-1])) < 30_000
    assert page.evaluate("window.__sameDocument") == "yes"
    assert not [url for url in requests_before if "/fabric/" in url]  # no re-read of the page
    page.screenshot(path=str(ARTIFACTS / "scale20-fabric-overview-after-poll.png"))


def test_compact_grid_fits_one_screen_with_details_on_focus(scale_world):
    server, page = scale_world["server"], scale_world["page"]
    page.goto(f"{server.url}/")
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    assert page.locator(".cluster-racks .node-cell").count() == 2000
    pods = page.eval_on_selector_all(
        "details.cluster-pod h3", "heads => heads.map(h => h.firstChild.textContent.trim())"
    )
    assert pods[:3] == ["Pod p1", "Pod p2", "Pod p3"] and pods[9] == "Pod p10"
    page.click("#grid-compact")
    assert page.get_attribute("#grid-compact", "aria-pressed") == "true"
    box = page.eval_on_selector("#cluster-grid-card", "card => card.getBoundingClientRect().height")
    assert box <= 900, f"the compact grid is {box}px tall"
    page.focus("#node-cell-gpu117")
    assert page.text_content("#grid-details").startswith("gpu117: drained")
    page.eval_on_selector("#cluster-grid-card", "card => card.scrollIntoView()")
    page.screenshot(path=str(ARTIFACTS / "scale20-cluster-compact.png"))
    page.click("[data-grid-collapse=all]")
    assert page.locator("details.cluster-pod[open]").count() == 0
    page.reload()  # compact and collapsed pods are remembered by this browser
    assert page.get_attribute("#cluster-view", "data-compact") == "true"
    assert page.locator("details.cluster-pod[open]").count() == 0
    page.click("[data-grid-collapse=none]")
    page.click("#grid-compact")


def test_problems_only_view_by_keyboard(scale_world):
    server, page = scale_world["server"], scale_world["page"]
    page.goto(f"{server.url}/")
    page.focus("#grid-problems")
    page.keyboard.press("Space")
    page.focus("#grid-pod")
    page.keyboard.press("Tab")  # past the checkbox, to "Show"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url("**/?pod=&view=problems")
    cells = page.eval_on_selector_all(".cluster-racks .node-cell", "cells => cells.map(c => c.id)")
    assert cells == ["node-cell-gpu042", "node-cell-gpu117", "node-cell-gpu500",
                     "node-cell-gpu1999"]
    assert page.text_content("[data-state-count=allocated]").strip() == "1997"
    page.screenshot(path=str(ARTIFACTS / "scale20-cluster-problems-only.png"), full_page=True)


class _emulated:
    """FABRIC_DRIVER pointed at the emulator for a block run on another thread."""

    def __enter__(self):
        from django.test import override_settings

        self.override = override_settings(FABRIC_DRIVER=EMULATED)
        self.override.enable()

    def __exit__(self, *exc):
        self.override.disable()

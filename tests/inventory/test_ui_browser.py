"""The inventory pages in headless Chromium against the real server: htmx filtering, the lazy
cable trace, and screenshots of the node and topology pages (test-artifacts/)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.conftest import ARTIFACTS, PortalServerProcess

# The plain `db` mark makes pytest-django create the test database; the test itself writes
# nothing, and what the server must see is committed by the module-scoped fixture below, outside
# the test's transaction (a transactional test would flush the fleet other tests share).
pytestmark = [pytest.mark.browser, pytest.mark.django_db]
PASSWORD = "correct-horse-battery"
USERNAME = "inventory-ui-browser"
BMC_NODE = "gpu003"  # given a BMC address for this module only


@pytest.fixture(scope="module")
def inventory_server(sakuraone, django_db_setup, django_db_blocker, tmp_path_factory):
    """The portal serving the committed SAKURAONE fleet, and an operator committed beside it
    (the server is another process: it sees only committed rows). Both are removed afterwards,
    so the package's other tests find the database as the `sakuraone` fixture left it."""
    from inventory.models import Node
    from portal.models import Role, User
    from portal.services.accounts import user_create

    with django_db_blocker.unblock():
        User.objects.filter(username=USERNAME).delete()
        user_create(username=USERNAME, role=Role.OPERATOR, password=PASSWORD)
        had_address = Node.objects.get(hostname=BMC_NODE).bmc_address
        Node.objects.filter(hostname=BMC_NODE).update(bmc_address="10.10.0.3")
        # The demo's simulated BMCs, their state kept out of the checkout's var/.
        bmc_state = tmp_path_factory.mktemp("bmc") / "bmc-simulator.json"
        server = PortalServerProcess(
            connection.settings_dict["NAME"],
            extra_env={"BMC_DRIVER": "inventory.bmc.drivers.simulated.SimulatedDriver",
                       "BMC_SIMULATOR_STATE_FILE": str(bmc_state)},
        )
    server.start()
    yield server
    server.stop()
    with django_db_blocker.unblock():
        User.objects.filter(username=USERNAME).delete()
        Node.objects.filter(hostname=BMC_NODE).update(bmc_address=had_address)


def log_in(page, server) -> None:
    page.goto(f"{server.url}/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def test_node_and_topology_pages_in_a_browser(inventory_server, browser_page):
    page = browser_page
    log_in(page, inventory_server)

    # Typing a hostlist refreshes the table in place (htmx) and the URL follows.
    page.goto(f"{inventory_server.url}/inventory/")
    page.fill("#id_hostlist", "gpu[010-012]")
    # A function, not an expression string: Playwright evals expression strings in the page,
    # which the portal's Content-Security-Policy (no 'unsafe-eval') rightly refuses.
    page.wait_for_function(
        "() => document.querySelectorAll('#node-table tbody tr[data-hostname]').length === 3"
    )
    assert "hostlist=gpu%5B010-012%5D" in page.url
    page.fill("#id_hostlist", "gpu[010-")
    page.wait_for_selector("#filter-errors")
    assert "never closed" in page.inner_text("#filter-errors")

    # The node page; opening a trace loads it from the server.
    page.goto(f"{inventory_server.url}/inventory/nodes/gpu002/")
    assert page.locator("#rail-map-table tbody tr").count() == 8
    page.click("#trace-mlx5_0 > summary")
    page.wait_for_selector("#trace-path-mlx5_0 .trace-uplinks")
    assert "leaf-p1-r0" in page.inner_text("#trace-path-mlx5_0")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, "the node page scrolls sideways at 1366x768"
    page.evaluate("window.scrollTo(0, 0)")  # sticky headers are drawn where the page scrolled
    page.screenshot(path=str(ARTIFACTS / "inventory-node-gpu002.png"), full_page=True)
    page.locator("#rail-map").screenshot(path=str(ARTIFACTS / "inventory-node-rail-map.png"))

    # The BMC section arrives after the page (htmx, under the page's CSP) and matches the GPUs
    # the BMC names GPU_SXM_n to the inventory's by serial.
    page.goto(f"{inventory_server.url}/inventory/nodes/{BMC_NODE}/")
    page.wait_for_selector("#bmc-reading[data-bmc-answered=yes]")
    assert page.locator("#bmc-gpus tr[data-gpu-state=matched]").count() == 8
    assert "BIOS" in page.inner_text("#bmc-firmware")
    page.locator("#bmc-reading").screenshot(path=str(ARTIFACTS / "inventory-node-bmc.png"))

    page.goto(f"{inventory_server.url}/inventory/switches/leaf-p1-r0/")
    assert "gpu001" in page.inner_text("#port-Ethernet0")
    page.screenshot(path=str(ARTIFACTS / "inventory-switch-leaf-p1-r0.png"))

    # The switches of the picture are links a keyboard can follow.
    page.goto(f"{inventory_server.url}/inventory/topology/")
    assert page.locator("#fabric-svg a.leaf").count() == 16
    assert page.locator("#fabric-svg a.spine").count() == 8
    page.locator("#fabric-svg a.leaf").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{inventory_server.url}/inventory/switches/leaf-p1-r0/")
    page.goto(f"{inventory_server.url}/inventory/topology/")
    box = page.locator("#fabric-svg").bounding_box()
    assert box["width"] <= 1366 and box["height"] <= 768, box
    page.screenshot(path=str(ARTIFACTS / "inventory-topology-1366.png"), full_page=True)
    page.set_viewport_size({"width": 3840, "height": 2160})
    page.goto(f"{inventory_server.url}/inventory/topology/")
    wide = page.locator("#fabric-svg").bounding_box()
    assert wide["height"] > 2 * box["height"], "the picture scales up on a 4K screen"
    assert wide["height"] <= 2160, "and still fits the screen"
    page.screenshot(path=str(ARTIFACTS / "inventory-topology-4k.png"))

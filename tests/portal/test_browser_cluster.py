"""The dashboard's cluster view in real headless Chromium against a real server, worker and
channel layer: a drain requested from the UI moves the node's cell, and a platform fault event
puts a mark on it and moves the fault counts, both without a reload; the page fits a laptop and a
4K wall screen and its cells are reachable by keyboard."""

from __future__ import annotations

import json
import urllib.request

import pytest

from console.dashboard import gpus_in_use
from faults.models import FaultTicket
from inventory.models import GPU, Node, Pod, Rack
from jobs.sync import sync_live_jobs
from portal.models import Role
from portal.services.accounts import api_token_create
from tests.conftest import ARTIFACTS
from tests.portal.test_browser_live import log_in
from tests.support import outside_the_browser_loop

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def build_cluster() -> list[Node]:
    """Two pods of two racks with four 8-GPU nodes each: the simulator driver (the default
    SLURM_DRIVER, shared with the worker through the database) follows these nodes."""
    nodes = []
    for pod_number in (1, 2):
        pod = Pod.objects.create(name=f"pod{pod_number}")
        for rack_number in (1, 2):
            rack = Rack.objects.create(name=f"p{pod_number}-r{rack_number:02d}", pod=pod)
            for _ in range(4):
                number = len(nodes) + 1
                node = Node.objects.create(hostname=f"gpu{number:03d}", pod=pod, rack=rack)
                GPU.objects.bulk_create(
                    GPU(node=node, index=index, serial=f"16543220{number:02d}{index:02d}")
                    for index in range(8)
                )
                nodes.append(node)
    return nodes


def post_json(url: str, body: dict, token: str) -> int:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def after_letter(page, selector: str) -> str:
    """The state letter a cell shows (CSS ::after content), without its quotes."""
    return page.eval_on_selector(
        selector, "cell => getComputedStyle(cell, '::after').content.replaceAll('\"', '')"
    )


def test_dashboard_follows_a_ui_drain_and_a_fault_event_without_a_reload(
    portal_server, browser_page, make_user
):
    build_cluster()
    operator = make_user(Role.OPERATOR)
    page = browser_page
    log_in(page, portal_server, operator.username)
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    page.evaluate("window.__sameDocument = 'yes'")  # gone if anything reloads the page
    cell = "#node-cell-gpu003"
    assert page.get_attribute(cell, "data-state") == "unknown"  # no Slurm sync has run yet

    # Drain gpu003 from its node page in a second window (same session); the dashboard stays.
    second_window = page.context.browser.new_context()
    second_window.add_cookies(page.context.cookies())
    node_page = second_window.new_page()
    node_page.goto(f"{portal_server.url}/inventory/nodes/gpu003/")
    node_page.click("summary:has-text('Drain gpu003')")
    node_page.fill("#drain-reason-" + str(Node.objects.get(hostname="gpu003").pk), "NVLink check")
    node_page.check("form[action$='/drain/'] input[name=confirm]")
    node_page.click("form[action$='/drain/'] button[type=submit]")
    node_page.wait_for_load_state()

    # The worker drains it in the simulator and its node-state sync publishes the change.
    page.wait_for_selector(
        f"{cell}[data-state=draining], {cell}[data-state=drained]", timeout=30_000
    )
    state = page.get_attribute(cell, "data-state")
    assert after_letter(page, cell) == {"draining": "d", "drained": "D"}[state]
    assert "reason: NVLink check" in page.get_attribute(cell, "title")
    assert page.text_content(f"[data-state-count={state}]").strip() == "1"
    assert page.evaluate("window.__sameDocument") == "yes"
    page.screenshot(path=str(ARTIFACTS / "cluster-dashboard-drained.png"), full_page=True)
    second_window.close()

    # The squeue sync (the beat's job in production) brings the simulator's running jobs in:
    # its "jobs" events make the page re-read the GPU count and the cells' running jobs.
    assert page.text_content("#gpus-in-use").strip() == "0"
    outside_the_browser_loop(sync_live_jobs)
    in_use = gpus_in_use(user=operator)
    assert in_use > 0  # most of the simulated cluster is allocated
    page.wait_for_selector(f"#gpus-in-use:text-is('{in_use}')", timeout=10_000)
    busy = page.locator(".cluster-racks .node-cell[data-jobs]:not([data-jobs=''])").first
    assert "running job " in busy.get_attribute("title")

    # A node agent reports an XID on gpu006: the ticket's mark and the counts arrive live.
    assert not page.locator("#node-cell-gpu006 .fault-mark").count()
    _, key = api_token_create(user=make_user(Role.OPERATOR), name="node agent")
    event = {"kind": "xid", "node": "gpu006", "gpu": 3, "xid": 79}
    assert post_json(f"{portal_server.url}/api/faults/events/", event, key) == 201
    ticket = FaultTicket.objects.get()
    page.wait_for_selector("#node-cell-gpu006 .fault-mark[aria-label='open fault']",
                           timeout=15_000)
    page.wait_for_selector(f"[data-fault-count={ticket.category}]:text-is('1')", timeout=5_000)
    assert page.text_content("#open-fault-total").strip() == "1"
    assert "1 open fault ticket" in page.get_attribute("#node-cell-gpu006", "title")
    assert page.evaluate("window.__sameDocument") == "yes"

    # Laptop and wall screen: no sideways scrolling, and screenshots to look at.
    for width, height, name in ((1366, 768, "1366"), (3840, 2160, "4k")):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(200)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"horizontal scrolling at {name}"
        page.screenshot(path=str(ARTIFACTS / f"cluster-dashboard-{name}.png"), full_page=True)

    # Keyboard: Tab reaches the grid's cells (links), and Enter opens the node.
    page.set_viewport_size({"width": 1366, "height": 768})
    page.evaluate("document.activeElement && document.activeElement.blur()")
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('node-cell')"):
            break
    else:
        pytest.fail("Tab never reached a node cell")
    assert page.evaluate("document.activeElement.id") == "node-cell-gpu001"
    page.screenshot(path=str(ARTIFACTS / "cluster-dashboard-keyboard.png"))
    page.keyboard.press("Enter")
    page.wait_for_url(f"{portal_server.url}/inventory/nodes/gpu001/")


@pytest.fixture
def switches_behind_the_worker(celery_worker_process, tmp_path):
    """leaf01 and spine01 served by the SONiC emulator over real SSH; the worker (started by
    portal_server) reaches them with the production SSH driver, for the Action and the polls."""
    from tests.fabric.driver_contract import (
        CONTRACT_LEAF,
        CONTRACT_SPINE,
        EMULATOR_LOGIN,
        EmulatorThread,
        write_credentials,
    )
    from tests.fabric.test_switch_actions import build_action_inventory

    emulator = EmulatorThread([CONTRACT_LEAF, CONTRACT_SPINE], tmp_path / "host-keys")
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(emulator.known_hosts())
    credentials = write_credentials(tmp_path / "credentials.yaml.json",
                                    {"sonic/leaf": EMULATOR_LOGIN, "sonic/spine": EMULATOR_LOGIN})
    celery_worker_process.extra_env = {
        "FABRIC_DRIVER": "fabric.drivers.ssh.SonicSshDriver",
        "FABRIC_CREDENTIALS_FILE": str(credentials),
        "FABRIC_KNOWN_HOSTS_FILE": str(known_hosts),
        "FABRIC_SWITCH_ENDPOINTS": json.dumps({
            name: f"{emulator.host}:{emulator.port_of(name)}" for name in ("leaf01", "spine01")
        }),
        "FABRIC_SSH_CONNECT_TIMEOUT": "3",
        "FABRIC_SSH_COMMAND_TIMEOUT": "5",
    }
    yield build_action_inventory()
    emulator.stop()


def test_a_port_shut_from_the_ui_shows_on_the_fabric_page_without_a_reload(
    switches_behind_the_worker, portal_server, browser_page, make_user
):
    from fabric.tasks import poll_fabric_counters
    from portal.models import Action, ActionStatus

    leaf = switches_behind_the_worker.leaf
    poll_fabric_counters.delay()  # the beat's job in production: a first picture of the ports
    page = browser_page
    log_in(page, portal_server, make_user(Role.OPERATOR).username)
    page.goto(f"{portal_server.url}/fabric/")
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    cell = '.fabric-switch[data-switch="leaf01"] .port-cell[data-port="Ethernet8"]'
    page.wait_for_selector(f"{cell}[data-state=U]", timeout=20_000)
    page.evaluate("window.__sameDocument = 'yes'")

    # Shut the uplink from its confirmation page in a second window (same session).
    second_window = page.context.browser.new_context()
    second_window.add_cookies(page.context.cookies())
    confirm = second_window.new_page()
    confirm.goto(f"{portal_server.url}/fabric/switches/{leaf.pk}/ports/admin/?ports=Ethernet8")
    confirm.check("input[name=state][value=down]")
    confirm.fill("#reason", "reseat uplink optic")
    confirm.click("section[aria-labelledby=confirm] button[type=submit]")
    confirm.wait_for_url(f"{portal_server.url}/actions/*/")
    action = Action.objects.get(pk=int(confirm.url.rstrip("/").rsplit("/", 1)[1]))
    assert action.parameters["ports"] == ["Ethernet8"] and action.parameters["up"] is False
    for _ in range(150):
        action.refresh_from_db()
        if action.is_terminal:
            break
        page.wait_for_timeout(100)
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    second_window.close()

    # The next poll sees the shut port: the open heat map marks it without a reload.
    poll_fabric_counters.delay()
    page.wait_for_selector(f"{cell}[data-state=X]", timeout=20_000)
    assert page.text_content(cell).strip() == "X"
    assert page.evaluate("window.__sameDocument") == "yes"
    page.screenshot(path=str(ARTIFACTS / "fabric-port-shut-live.png"), full_page=True)


@pytest.fixture
def fleet_server(settings):
    """The portal with its aggregate threshold under build_cluster's 16 nodes: the dashboard
    draws the two pods as aggregate cells, as it draws a 100,000-GPU fleet's 250."""
    from tests.conftest import PortalServerProcess

    server = PortalServerProcess(
        settings.DATABASES["default"]["NAME"], {"DASHBOARD_AGGREGATE_ABOVE_NODES": "4"}
    )
    server.start()
    yield server
    server.stop()


def test_a_fleet_dashboard_moves_the_pod_cell_of_a_node_that_changes_state(
    fleet_server, browser_page, make_user
):
    from portal.realtime import publish

    build_cluster()
    page = browser_page
    log_in(page, fleet_server, make_user(Role.OPERATOR).username)
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    page.evaluate("window.__sameDocument = 'yes'")
    assert page.locator(".node-cell[id^=node-cell-]").count() == 0
    pod2 = ".aggregate-cell[data-agg-pod=pod2]"
    assert page.get_attribute(f"{pod2} [data-agg-count=unknown]", "data-n") == "8"

    # The node-state sync's event for gpu011 (pod2, rack p2-r01), as jobs/sync.py sends it.
    event = {"hostname": "gpu011", "state": "drained", "previous_state": "", "reason": "XID 79",
             "pod": "pod2", "rack": "p2-r01"}
    outside_the_browser_loop(lambda: publish("cluster", "node.state", event))
    page.wait_for_selector(f"{pod2} [data-agg-count=drained][data-n='1']", timeout=15_000)
    assert page.get_attribute(f"{pod2} [data-agg-count=unknown]", "data-n") == "7"
    assert page.get_attribute(pod2, "data-problems") == "1"
    assert "8 nodes (1 drained, 7 unknown)" in page.get_attribute(pod2, "aria-label")
    assert page.text_content("[data-state-count=drained]").strip() == "1"
    pod1 = ".aggregate-cell[data-agg-pod=pod1]"
    assert page.get_attribute(f"{pod1} [data-agg-count=unknown]", "data-n") == "8"
    assert page.evaluate("window.__sameDocument") == "yes"
    page.screenshot(path=str(ARTIFACTS / "cluster-dashboard-fleet.png"), full_page=True)

    # The cell opens its pod: 8 nodes, more than the threshold, drawn as its two racks.
    page.click(pod2)
    page.wait_for_url(f"{fleet_server.url}/?pod=pod2")
    assert page.locator(".aggregate-cell").count() == 2


def test_an_open_dashboard_gains_and_loses_the_maintenance_marks_live(
    portal_server, browser_page, make_user, monkeypatch
):
    """Issue 26 item 2: the grid's maintenance marks came only with a reload. Starting a
    window marks its nodes' cells, ending it clears them, on the open page."""
    from datetime import timedelta

    from django.utils import timezone

    import portal.services.actions as action_services
    from fabric.maintenance_windows import (
        create_maintenance_window,
        end_maintenance_window,
        start_maintenance_window,
    )
    from portal.models import Action, ActionStatus

    MARKED = "[id^=node-cell-][data-maintenance]"  # not the legend's swatch
    # The drains and reservations are queued, not run: this is about the marks.
    monkeypatch.setattr(action_services, "send_action_task", lambda *args, **kwargs: None)
    build_cluster()
    operator = make_user(Role.OPERATOR)
    page = browser_page
    log_in(page, portal_server, operator.username)
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    page.evaluate("window.__sameDocument = 'yes'")
    assert page.locator(MARKED).count() == 0
    page.wait_for_timeout(1_000)  # the subscription's resync is behind us

    start = timezone.now() + timedelta(hours=1)
    window = create_maintenance_window(
        planned_start=start, planned_end=start + timedelta(hours=2), reason="BIOS update",
        hostlist="gpu[001-002]", owner=operator)
    start_maintenance_window(window, requested_by=operator)
    page.wait_for_selector(f'#node-cell-gpu002[data-maintenance="{window.pk}"]', timeout=10_000)
    assert page.locator(MARKED).count() == 2
    page.screenshot(path=str(ARTIFACTS / "dashboard-window-marks-live.png"), full_page=True)

    window.refresh_from_db()
    Action.objects.filter(pk=window.nodes_action_id).update(status=ActionStatus.SUCCEEDED)
    end_maintenance_window(window, requested_by=operator)
    page.wait_for_selector("#node-cell-gpu002:not([data-maintenance])", timeout=10_000)
    assert page.locator(MARKED).count() == 0
    assert page.evaluate("window.__sameDocument") == "yes"  # no reload did it

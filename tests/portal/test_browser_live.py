"""The UI shell in real headless Chromium against a real server, worker and channel layer."""

import json
import urllib.request

import pytest

from portal.models import Role
from portal.services.accounts import api_token_create
from portal.services.actions import enqueue_action, run_action
from tests.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]
PASSWORD = "correct-horse-battery"  # the make_user fixture's password


def log_in(page, server, username):
    page.goto(f"{server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def post_json(url: str, body: dict, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


def test_actions_appear_and_finish_live_and_the_page_recovers_from_a_server_restart(
    portal_server, browser_page, make_user
):
    page = browser_page
    operator = make_user(Role.OPERATOR)
    log_in(page, portal_server, operator.username)
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)

    # An Action requested elsewhere (automation over the API) appears on the open page and
    # finishes there, with a toast, without a reload.
    _, key = api_token_create(user=operator, name="browser test")
    status, action = post_json(
        f"{portal_server.url}/api/actions/canary/", {"reason": "browser check"}, key
    )
    assert status == 202
    page.wait_for_selector(
        f"#action-row-{action['id']} [data-field=status] .status-succeeded", timeout=20_000
    )
    page.locator("#toasts").get_by_text(f"#{action['id']}").wait_for(timeout=5_000)
    page.screenshot(path=str(ARTIFACTS / "portal-dashboard-live-action.png"), full_page=True)

    # The server goes away: the indicator says so.
    portal_server.stop()
    page.wait_for_selector("#live-indicator:not([data-state=live])", timeout=15_000)
    assert page.get_attribute("#live-indicator", "data-state") in {
        "reconnecting",
        "connecting",
        "offline",
    }
    page.screenshot(path=str(ARTIFACTS / "portal-dashboard-reconnecting.png"), full_page=True)

    # Something happens while the page is disconnected; after the restart the page reconnects
    # on its own and resyncs, so the missed Action is shown.
    missed, _ = enqueue_action(
        kind="portal.canary",
        target="worker pipeline",
        reason="while offline",
        requested_by=operator,
    )
    run_action(action_id=missed.pk)
    portal_server.start()
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=60_000)
    page.wait_for_selector(f"#action-row-{missed.pk}", timeout=15_000)
    assert page.url == f"{portal_server.url}/"


def test_keyboard_reaches_the_skip_link_and_pages_fit_laptop_and_wall_screens(
    portal_server, browser_page, make_user
):
    page = browser_page
    log_in(page, portal_server, make_user(Role.VIEWER).username)
    page.keyboard.press("Tab")
    assert "Skip to content" in page.evaluate("document.activeElement.textContent")
    for width, height, name in ((1366, 768, "1366"), (3840, 2160, "4k")):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{portal_server.url}/actions/")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"horizontal scrolling at {name}"
        page.screenshot(path=str(ARTIFACTS / f"portal-actions-{name}.png"), full_page=True)


def test_the_action_page_fills_in_started_and_each_attempt_live(
    portal_server, browser_page, make_user, monkeypatch
):
    """Issue 26: the Action page's status moved live, but its "Started" time and its attempts
    table stayed as loaded ("—", "Not started yet.") until a reload."""
    import threading

    from django.db import connection

    import portal.services.actions as action_services

    page = browser_page
    operator = make_user(Role.OPERATOR)
    # Not handed to the worker: this test runs it, once the page is open and live.
    monkeypatch.setattr(action_services, "send_action_task", lambda *args, **kwargs: None)
    action, _ = enqueue_action(kind="portal.canary", target="worker pipeline",
                               reason="live attempts", requested_by=operator,
                               parameters={"hold_seconds": 4})
    log_in(page, portal_server, operator.username)
    page.goto(f"{portal_server.url}/actions/{action.pk}/")
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    page.evaluate("window.__sameDocument = true")
    started = page.locator("[data-field=started_at]")
    assert started.inner_text() == "—"
    assert "Not started yet." in page.locator("#action-attempts-card").inner_text()
    page.wait_for_timeout(1_000)  # the subscription's resync is behind us

    def run() -> None:
        try:
            run_action(action_id=action.pk, worker="test-worker")
        finally:
            connection.close()

    runner = threading.Thread(target=run)
    runner.start()
    try:
        running = page.locator("#action-attempts-card tbody tr", has_text="test-worker")
        running.locator(".status-running").wait_for(timeout=10_000)
        assert started.inner_text().endswith(" UTC") and started.inner_text() != "—"
        assert running.locator("td").first.inner_text() == "1"
        page.screenshot(path=str(ARTIFACTS / "portal-action-attempt-running.png"), full_page=True)
    finally:
        runner.join(timeout=30)
    running.locator(".status-succeeded").wait_for(timeout=10_000)
    cells = running.locator("td")
    assert cells.nth(3).inner_text().endswith(" UTC")  # its finish, filled in too
    assert page.evaluate("window.__sameDocument") is True  # no reload did it
    assert not page.locator("[data-field=cancel-form]").is_visible()  # finished: not cancellable
    assert not page.locator("[data-field=progress-row]").is_visible()  # the canary says none
    page.screenshot(path=str(ARTIFACTS / "portal-action-attempt-finished.png"), full_page=True)


def test_an_action_that_starts_waiting_reads_waiting_live(
    portal_server, browser_page, make_user, monkeypatch
):
    """Issue 26: a maintenance waiting for jobs re-polls as "queued", and the open Action page
    said "queued" while it waited. The live update says "waiting", with what for."""
    import portal.services.actions as action_services

    page = browser_page
    operator = make_user(Role.OPERATOR)
    monkeypatch.setattr(action_services, "send_action_task", lambda *args, **kwargs: None)
    action, _ = enqueue_action(kind="test.waits", target="gpu001", reason="live waiting",
                               requested_by=operator, parameters={"every": 600})
    log_in(page, portal_server, operator.username)
    page.goto(f"{portal_server.url}/actions/{action.pk}/")
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=15_000)
    status = page.locator("#action-status-line [data-field=status]")
    assert status.inner_text().strip() == "queued"
    page.wait_for_timeout(1_000)  # the subscription's resync is behind us
    assert run_action(action_id=action.pk).startswith("waiting")
    status.locator(".status-waiting[data-status=queued]").wait_for(timeout=10_000)
    assert status.inner_text().strip() == "waiting"
    assert page.locator("[data-field=progress]").inner_text() == "waiting (1)"


def test_the_page_says_live_only_once_the_server_confirms_its_subscription(
    portal_server_without_worker, browser_page, make_user
):
    """An event published between the socket's opening and the server's "subscribed" reaches
    nobody: a page that said "live" at the opening (as it did) promised events it could miss,
    and a test that published once the page said so raced the subscription. Here the
    "subscribed" frame is held back between the server and the page, to show the page waits."""
    page = browser_page
    seen, held, routes = [], [], []

    def between_page_and_server(route):
        routes.append(route)
        server = route.connect_to_server()

        def from_server(message):
            seen.append(json.loads(message).get("type"))
            if seen[-1] == "subscribed" and not held:
                held.append(message)
            else:
                route.send(message)

        server.on_message(from_server)

    page.route_web_socket("**/ws/", between_page_and_server)
    log_in(page, portal_server_without_worker, make_user(Role.OPERATOR).username)
    for _ in range(150):  # the sync API dispatches the route's callbacks while it waits
        if held:
            break
        page.wait_for_timeout(100)
    assert held, f"no subscribed frame from the server; frames seen: {seen}"
    assert "hello" in seen
    page.wait_for_timeout(300)  # time for a page that acted on the open or the hello to do so
    assert page.get_attribute("#live-indicator", "data-state") == "connecting"

    routes[-1].send(held[0])
    page.wait_for_selector("#live-indicator[data-state=live]", timeout=10_000)

"""The Content-Security-Policy in real Chromium: the login page (locked out too), our pages, their
scripts, charts, live updates and the API docs work, and the browser reports no violation."""

import pytest

from portal.models import Role
from tests.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]
PASSWORD = "correct-horse-battery"  # the make_user fixture's password

# Recorded in the page before any of its scripts run, so nothing a page does goes unseen.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(
    `${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`);
});
"""

PAGES = {
    "/": "#live-indicator[data-state=live]",  # live.js connected over /ws/
    "/actions/": "#live-indicator[data-state=live]",
    "/inventory/": "table",
    "/inventory/topology/": "main",
    "/jobs/": "main",
    "/jobs/analytics/": "main",
    "/fabric/": "main",
    "/faults/": "main",
    "/faults/statistics/": "main",
    "/api/docs/": ".swagger-ui .info",  # Swagger UI drew the schema: its scripts ran
}


def test_pages_work_under_the_policy_with_no_violation(portal_server, browser_page, make_user):
    page = browser_page
    page.add_init_script(RECORD_VIOLATIONS)
    console_violations = []
    page.on(
        "console",
        lambda message: console_violations.append(message.text)
        if "Content Security Policy" in message.text
        else None,
    )
    # The lock-out page, as a person sees it after too many wrong passwords.
    victim = make_user(Role.VIEWER)
    for attempt in range(5):  # LOGIN_FAILURE_LIMIT's default
        page.goto(f"{portal_server.url}/login/")
        page.fill("#id_username", victim.username)
        page.fill("#id_password", f"wrong-{attempt}")
        page.click("button[type=submit]")
        page.wait_for_selector("p.error[role=alert]")
    assert "Too many failed logins" in page.text_content("p.error[role=alert]")
    page.screenshot(path=str(ARTIFACTS / "portal-login-locked-out.png"))

    operator = make_user(Role.OPERATOR)
    page.goto(f"{portal_server.url}/login/")
    page.fill("#id_username", operator.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{portal_server.url}/")

    found = {}
    for path, ready in PAGES.items():
        response = page.goto(f"{portal_server.url}{path}")
        assert response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        page.wait_for_selector(ready, timeout=20_000)
        page.wait_for_timeout(300)  # late scripts (charts, htmx) get their chance to offend
        found[path] = page.evaluate("window.__cspViolations")
    page.screenshot(path=str(ARTIFACTS / "portal-api-docs-under-csp.png"), full_page=False)
    violations = {path: found_here for path, found_here in found.items() if found_here}
    assert not violations, violations
    assert not console_violations, console_violations

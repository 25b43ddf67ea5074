"""The UI shell: login, navigation, pages per role, vendored assets, cancel from the page."""

import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import NoReverseMatch, reverse

from portal.models import Action, AuditEntry, Role
from portal.services.actions import enqueue_action

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def browser_as(make_user):
    def login(role, tenant=None):
        user = make_user(role, tenant=tenant)
        browser = Client()
        assert browser.login(username=user.username, password="correct-horse-battery")
        browser.user = user
        return browser

    return login


def test_pages_need_a_login():
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_login_page_and_a_real_login(make_user):
    user = make_user(Role.OPERATOR)
    browser = Client()
    page = browser.get("/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    bad = browser.post("/login/", {"username": user.username, "password": "wrong"})
    assert bad.status_code == 200 and b"did not match" in bad.content
    good = browser.post("/login/", {"username": user.username, "password": "correct-horse-battery"})
    assert good.status_code == 302 and good["Location"] == "/"
    dashboard = browser.get("/")
    assert dashboard.status_code == 200
    assert user.username.encode() in dashboard.content
    assert browser.post("/logout/").status_code == 302
    assert browser.get("/").status_code == 302


@pytest.mark.parametrize("role", list(Role))
def test_dashboard_renders_for_every_role_with_navigation(browser_as, role):
    page = browser_as(role).get("/")
    assert page.status_code == 200
    html = page.content.decode()
    nav = html.split('<nav class="mainnav"', 1)[1].split("</nav>", 1)[0]
    shown = set(re.findall(r">([A-Za-z]+)</a>", nav))
    # Each role's menu names exactly the sections it may open: no link leads to a 403.
    expected = {
        Role.ADMIN: {"Dashboard", "Inventory", "Jobs", "Fabric", "Maintenance", "Faults",
                     "Actions", "Tenants", "Audit"},
        Role.OPERATOR: {"Dashboard", "Inventory", "Jobs", "Fabric", "Maintenance", "Faults",
                        "Actions", "Tenants", "Audit"},
        Role.ONCALL: {"Dashboard", "Inventory", "Jobs", "Fabric", "Maintenance", "Faults",
                      "Actions", "Tenants"},
        Role.VIEWER: {"Dashboard", "Inventory", "Fabric", "Maintenance", "Faults", "Actions",
                      "Tenants"},
        Role.TENANT_ADMIN: {"Dashboard", "Inventory", "Jobs", "Tenants"},
    }[role]
    assert shown == expected
    browser = browser_as(role)
    for href in re.findall(r'href="([^"]+)"', nav):
        assert browser.get(href).status_code == 200, href
    assert 'id="live-indicator"' in html
    assert ('id="recent-actions"' in html) == (role != Role.TENANT_ADMIN)


def test_sections_not_built_yet_are_disabled_not_links(browser_as):
    from portal.context_processors import NAVIGATION

    html = browser_as(Role.OPERATOR).get("/").content.decode()
    for label, url_name, issue in NAVIGATION:
        try:
            url = reverse(url_name)
        except NoReverseMatch:
            assert f'aria-disabled="true" title="Arrives with issue #{issue}">{label}<' in html
        else:
            assert f'<a href="{url}"' in html and f">{label}</a>" in html


@pytest.mark.parametrize(
    ("role", "path", "status"),
    [
        (Role.VIEWER, "/actions/", 200),
        (Role.TENANT_ADMIN, "/actions/", 403),
        (Role.OPERATOR, "/audit/", 200),
        (Role.VIEWER, "/audit/", 403),
        (Role.TENANT_ADMIN, "/tenants/", 200),
    ],
)
def test_pages_respect_roles(browser_as, role, path, status):
    assert browser_as(role).get(path).status_code == status


def test_tenant_page_shows_a_tenant_admin_only_their_tenant(browser_as, tenant_a, tenant_b):
    html = browser_as(Role.TENANT_ADMIN, tenant_a).get("/tenants/").content.decode()
    assert "Tenant A" in html and "Tenant B" not in html


def test_action_pages_and_cancel_from_the_ui(browser_as):
    oncall = browser_as(Role.ONCALL)
    action, _ = enqueue_action(
        kind="portal.canary", target="worker pipeline", reason="ui test", requested_by=oncall.user
    )
    listing = oncall.get("/actions/?status=queued").content.decode()
    assert f'id="action-row-{action.pk}"' in listing
    detail = oncall.get(f"/actions/{action.pk}/").content.decode()
    assert "Cancel Action" in detail
    response = oncall.post(f"/actions/{action.pk}/cancel/", {"reason": "not needed"}, follow=True)
    assert b"cancelled" in response.content
    assert Action.objects.get(pk=action.pk).status == "cancelled"
    entry = AuditEntry.objects.get(object_id=str(action.pk), note__startswith="cancelled")
    assert (entry.via, entry.actor) == ("ui", oncall.user)
    # A second cancel is refused with a message, not an error page.
    again = oncall.post(f"/actions/{action.pk}/cancel/", {"reason": "again"}, follow=True)
    assert again.status_code == 200 and b"only a queued Action can be cancelled" in again.content


def test_a_waiting_action_reads_as_waiting_not_queued(browser_as, monkeypatch):
    """Issue 26: a maintenance waiting for jobs re-polls as "queued" and the Action page and
    list said "queued". They say "waiting" (its progress says for what); the real status stays
    in data-status for the live counters, and the state machine is unchanged."""
    from portal.services import actions as action_services
    from portal.services.actions import run_action

    monkeypatch.setattr(action_services, "send_action_task", lambda *args, **kwargs: None)
    oncall = browser_as(Role.ONCALL)
    waiting, _ = enqueue_action(kind="test.waits", target="gpu001", reason="ui test",
                                requested_by=oncall.user, parameters={"every": 600})
    fresh, _ = enqueue_action(kind="test.waits", target="gpu002", reason="ui test",
                              requested_by=oncall.user)
    assert run_action(action_id=waiting.pk).startswith("waiting")
    waiting.refresh_from_db()
    assert (waiting.status, waiting.shown_status, fresh.shown_status) == (
        "queued", "waiting", "queued")
    waiting_badge = ('<span class="status status-waiting" data-status="queued">'
                     '<span class="status-icon" aria-hidden="true"></span>waiting</span>')
    listing = oncall.get("/actions/").content.decode()
    row = listing.split(f'id="action-row-{waiting.pk}"')[1].split("</tr>")[0]
    assert waiting_badge in row
    other = listing.split(f'id="action-row-{fresh.pk}"')[1].split("</tr>")[0]
    assert ">queued</span>" in other and "waiting" not in other
    detail = oncall.get(f"/actions/{waiting.pk}/").content.decode()
    status_line = detail.split('id="action-status-line"')[1].split("</p>")[0]
    assert waiting_badge in status_line and "waiting (1)" in detail
    script = (REPO / "static/js/live.js").read_text()
    assert "a.shown_status" in script and "badge.dataset.status" in script


def test_viewers_cannot_cancel(browser_as):
    viewer = browser_as(Role.VIEWER)
    action, _ = enqueue_action(kind="portal.canary", target="x", reason="r")
    assert b"Cancel Action" not in viewer.get(f"/actions/{action.pk}/").content
    assert viewer.post(f"/actions/{action.pk}/cancel/", {"reason": "x"}).status_code == 403


def test_unknown_pages_are_html_404s(browser_as):
    response = browser_as(Role.VIEWER).get("/no-such-page/")
    assert response.status_code == 404
    assert b"Not found" in response.content
    html = response.content.decode()
    assert 'class="topbar"' in html and 'href="/"' in html  # the layout, and a way back


def test_a_refused_page_has_the_layout_and_a_way_back(browser_as):
    response = browser_as(Role.VIEWER).get("/audit/")
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="topbar"' in html and 'id="jumpbox"' in html
    assert "Your role does not allow this page." in html and ">Back to the dashboard<" in html


def test_a_server_error_page_has_the_layout_without_touching_the_database(rf):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from portal.views import server_error

    with CaptureQueriesContext(connection) as queries:
        response = server_error(rf.get("/jobs/"))
    assert response.status_code == 500 and not queries.captured_queries
    html = response.content.decode()
    assert 'class="topbar"' in html and 'href="/"' in html and "has been logged" in html


def test_every_asset_the_templates_load_is_vendored_no_cdn():
    referenced = set()
    for template in (REPO / "templates").rglob("*.html"):
        text = template.read_text()
        assert not re.search(r"""(src|href)=["']https?://""", text), template
        referenced |= set(re.findall(r"""\{% static ['"]([^'"]+)['"] %\}""", text))
    assert {"vendor/htmx.min.js", "js/live.js", "css/portal.css"} <= referenced
    for asset in referenced:
        assert (REPO / "static" / asset).is_file(), f"static/{asset} is missing"


def test_static_assets_are_served_by_the_app(browser_as):
    browser = browser_as(Role.VIEWER)
    for asset in ("vendor/htmx.min.js", "js/live.js", "css/portal.css"):
        response = browser.get(f"/static/{asset}")
        assert response.status_code == 200, asset

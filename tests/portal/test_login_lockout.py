"""Repeated failed logins lock the login out for a cool-down, say so, and leave an audit entry."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from portal.models import AuditEntry, Role

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]
PASSWORD = "correct-horse-battery"  # the make_user fixture's password


def log_in(client: Client, username: str, password: str):
    return client.post("/login/", {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_thirty_wrong_passwords_then_the_right_one_is_refused_until_the_cool_down(
    make_user, settings
):
    user = make_user(Role.OPERATOR)
    browser = Client()
    statuses = [log_in(browser, user.username, f"guess-{n}").status_code for n in range(30)]
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1)  # the form again, "did not match"
    assert set(statuses[limit - 1 :]) == {429}

    refused = log_in(browser, user.username, PASSWORD)
    assert refused.status_code == 429
    assert not logged_in(browser)
    assert int(refused["Retry-After"]) == int(settings.AXES_COOLOFF_TIME.total_seconds())
    page = refused.content.decode()
    assert "Too many failed logins" in page and "15 minutes" in page
    assert 'id="id_username"' in page and f'value="{user.username}"' in page

    # The cool-down has passed (the attempts are dated back past it): the right password works.
    from axes.models import AccessAttempt

    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME
    )
    assert log_in(browser, user.username, PASSWORD).status_code == 302
    assert logged_in(browser)


def test_a_lockout_is_audited_once_and_names_user_address_and_failures(make_user, settings):
    user = make_user(Role.VIEWER)
    browser = Client()
    for n in range(settings.AXES_FAILURE_LIMIT + 3):
        log_in(browser, user.username, f"guess-{n}")
    entries = list(AuditEntry.objects.filter(operation="lockout"))
    assert len(entries) == 1
    entry = entries[0]
    assert (entry.object_type, entry.object_id, entry.object_repr) == (
        "portal.user",
        str(user.pk),
        user.username,
    )
    assert entry.actor is None and entry.actor_name == "system"
    assert entry.after["address"] == "127.0.0.1"
    assert entry.after["failures"] == settings.AXES_FAILURE_LIMIT
    assert "127.0.0.1" in entry.note and "locked out until" in entry.note

    # Guessing a name nobody has is audited too, with no user to point at, and under a digest
    # of the name (it may be someone's password: see the test below).
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(browser, "no-such-user", f"guess-{n}")
    ghost = AuditEntry.objects.get(operation="lockout", object_repr__startswith="unknown-user:")
    assert ghost.object_id == "" and "no-such-user" not in str(ghost.after)


def test_the_audit_page_lists_lockouts(make_user, settings):
    victim = make_user(Role.VIEWER)
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(Client(), victim.username, f"guess-{n}")
    admin = Client()
    admin.force_login(make_user(Role.ADMIN))
    page = admin.get("/audit/")
    assert page.status_code == 200
    assert "lockout" in page.content.decode() and victim.username in page.content.decode()


def test_a_lockout_holds_one_username_from_one_address_only(make_user, settings):
    victim, colleague = make_user(Role.OPERATOR), make_user(Role.OPERATOR)
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(Client(), victim.username, f"guess-{n}")
    assert log_in(Client(), victim.username, PASSWORD).status_code == 429
    # Another user from the same address, and the victim from another address, still log in.
    assert log_in(Client(), colleague.username, PASSWORD).status_code == 302
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert log_in(elsewhere, victim.username, PASSWORD).status_code == 302


def test_a_successful_login_clears_the_failure_count(make_user, settings):
    user = make_user(Role.OPERATOR)
    for round_ in range(3):
        for n in range(settings.AXES_FAILURE_LIMIT - 1):
            assert log_in(Client(), user.username, f"guess-{round_}-{n}").status_code == 200
        assert log_in(Client(), user.username, PASSWORD).status_code == 302


def test_the_admin_login_is_locked_out_too(make_user, settings):
    admin = make_user(Role.ADMIN)
    for n in range(settings.AXES_FAILURE_LIMIT):
        Client().post("/admin/login/", {"username": admin.username, "password": f"guess-{n}"})
    assert log_in(Client(), admin.username, PASSWORD).status_code == 429


def settings_in_a_fresh_process(
    env: dict[str, str], expression: str
) -> subprocess.CompletedProcess:
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'portal.settings'; "
        f"django.setup(); from django.conf import settings; print({expression})"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_limit_cool_down_and_scope_come_from_the_environment():
    result = settings_in_a_fresh_process(
        {
            "LOGIN_FAILURE_LIMIT": "3",
            "LOGIN_COOLOFF_MINUTES": "2.5",
            "LOGIN_LOCKOUT_BY": "username",
        },
        "settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME.total_seconds(), "
        "settings.AXES_LOCKOUT_PARAMETERS",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "3 150.0 ['username']"
    for name, value in (
        ("LOGIN_FAILURE_LIMIT", "many"),
        ("LOGIN_FAILURE_LIMIT", "0"),
        ("LOGIN_LOCKOUT_BY", "moon-phase"),
    ):
        bad = settings_in_a_fresh_process({name: value}, "1")
        assert bad.returncode != 0 and name in bad.stderr, (name, value, bad.stderr[-500:])


def test_lockout_defaults_are_documented_in_the_readme(settings):
    readme = (REPO / "README.md").read_text()
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    for name in ("LOGIN_FAILURE_LIMIT", "LOGIN_COOLOFF_MINUTES", "LOGIN_LOCKOUT_BY"):
        assert f"`{name}`" in readme


def test_a_password_typed_into_the_username_field_is_stored_nowhere(make_user, settings):
    """People type their password into the username field. The lock-out records (django-axes'
    attempts and failure log, shown in the admin) and the audit entry keep a username only
    when it names a user; another name is kept as a keyed digest, which still counts."""
    from axes.models import AccessAttempt, AccessFailureLog

    settings.AXES_ENABLE_ACCESS_FAILURE_LOG = True
    user = make_user(Role.VIEWER)
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(Client(), PASSWORD, f"guess-{n}")
        log_in(Client(), user.username, f"guess-{n}")
    assert log_in(Client(), PASSWORD, "anything").status_code == 429  # still counted

    stored = [
        *AccessAttempt.objects.values_list("username", "get_data", "post_data"),
        *AccessFailureLog.objects.values_list("username"),
        *AuditEntry.objects.values_list("object_repr", "after", "note"),
    ]
    assert stored and PASSWORD not in str(stored)
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {
        user.username,
        AccessAttempt.objects.exclude(username=user.username).get().username,
    }
    admin = Client()
    superuser = make_user(Role.ADMIN)
    superuser.is_staff = superuser.is_superuser = True
    superuser.save(update_fields=["is_staff", "is_superuser"])
    admin.force_login(superuser)
    for page in ("/admin/axes/accessattempt/", "/admin/axes/accessfailurelog/", "/audit/"):
        response = admin.get(page)
        assert response.status_code == 200, page
        assert PASSWORD not in response.content.decode(), page

"""Sign-in through a real slapd (scripts/ldap-up): every role, the refused people, a group
change at the next login, and local break-glass accounts beside the directory."""

import json
import os
import signal
import subprocess
from pathlib import Path

import ldap
import pytest
from django.test import Client

from portal.identity import config as identity_config
from portal.models import AccountSource, AuditEntry, Role, User
from portal.services.accounts import user_create
from tests.support import free_port

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]
GROUPS = "ou=groups,dc=portal,dc=test"


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    """One slapd for the module (about a tenth of a second to start)."""
    state_dir = tmp_path_factory.mktemp("ldap")
    environment = {
        **os.environ,
        "LDAP_TEST_DIR": str(state_dir),
        "LDAP_TEST_PORT": str(free_port()),
    }
    started = subprocess.run(
        [REPO / "scripts" / "ldap-up"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout.strip().splitlines()[-1])
    yield info
    os.kill(info["pid"], signal.SIGTERM)


@pytest.fixture
def directory_sign_in(directory, settings, tenant_a, tenant_b, tmp_path):
    """The portal configured from the environment as README.md shows, the bind password in a
    file (the _FILE form a compose secret uses)."""
    password_file = tmp_path / "ldap-bind-password"
    password_file.write_text(directory["bind_password"] + "\n")
    environ = {
        "LDAP_SERVER_URI": directory["uri"],
        "LDAP_BIND_DN": directory["bind_dn"],
        "LDAP_BIND_PASSWORD_FILE": str(password_file),
        "LDAP_USER_SEARCH_BASE": f"ou=people,{directory['base']}",
        "LDAP_GROUP_SEARCH_BASE": GROUPS,
        "LDAP_ADMIN_GROUP": f"cn=portal-admins,{GROUPS}",
        "LDAP_OPERATOR_GROUP": f"cn=portal-operators,{GROUPS}",
        "LDAP_ONCALL_GROUP": f"cn=portal-oncall,{GROUPS}",
        "LDAP_TENANT_ADMIN_GROUP": f"cn=portal-tenant-admins,{GROUPS}",
        "LDAP_VIEWER_GROUP": f"cn=portal-viewers,{GROUPS}",
        "LDAP_TENANT_GROUPS": (
            f"{tenant_a.slug}=cn=tenant-alpha,{GROUPS}; {tenant_b.slug}=cn=tenant-beta,{GROUPS}"
        ),
        "LDAP_DISABLED_GROUP": f"cn=portal-disabled,{GROUPS}",
    }
    for name, value in identity_config.ldap_settings(environ).items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [
        "portal.lockout.LoginLockoutBackend",
        identity_config.LDAP_BACKEND,
        "django.contrib.auth.backends.ModelBackend",
    ]
    return settings


def sign_in(username: str, password: str | None = None):
    browser = Client()
    response = browser.post(
        "/login/", {"username": username, "password": password or f"{username}-password"}
    )
    return browser, response


def signed_in(browser: Client) -> bool:
    return "_auth_user_id" in browser.session


@pytest.mark.parametrize(
    ("username", "role", "tenant_slug"),
    [
        ("ada", Role.ADMIN, None),
        ("otto", Role.OPERATOR, None),
        ("olga", Role.ONCALL, None),
        ("vera", Role.VIEWER, None),
        ("tara", Role.TENANT_ADMIN, "tenant-a"),
        ("theo", Role.TENANT_ADMIN, "tenant-b"),
    ],
)
def test_each_role_signs_in_through_the_directory(directory_sign_in, username, role, tenant_slug):
    browser, response = sign_in(username)

    assert response.status_code == 302, response.content.decode()[:500]
    assert signed_in(browser)
    user = User.objects.get(username=username)
    assert (user.role, user.source) == (role, AccountSource.DIRECTORY)
    assert (user.tenant.slug if user.tenant else None) == tenant_slug
    assert user.email == f"{username}@portal.test"
    assert not user.has_usable_password()  # the directory holds the password, never the portal
    entry = AuditEntry.objects.get(operation=AuditEntry.Operation.LOGIN, actor=user)
    assert entry.after == {
        "method": "directory",
        "address": "127.0.0.1",
        "role": role,
        "tenant": tenant_slug,
    }
    # The tenant admin sees only the tenant the directory gave them.
    if role == Role.TENANT_ADMIN:
        assert browser.get(f"/tenants/{tenant_slug}/").status_code == 200
        other = "tenant-b" if tenant_slug == "tenant-a" else "tenant-a"
        assert browser.get(f"/tenants/{other}/").status_code in (403, 404)


@pytest.mark.parametrize(
    ("username", "message"),
    [
        ("nina", "in none of the portal&#x27;s groups"),
        ("dora", "disabled in the directory"),
        ("tess", "a tenant administrator but in no tenant&#x27;s group"),
    ],
)
def test_the_directory_vouches_but_the_portal_refuses_saying_why(
    directory_sign_in, username, message
):
    browser, response = sign_in(username)

    assert response.status_code == 200
    assert message in response.content.decode()
    assert not signed_in(browser)
    assert not User.objects.filter(username=username).exists()  # no account left behind
    entry = AuditEntry.objects.get(operation=AuditEntry.Operation.REFUSED)
    assert entry.object_repr == username
    assert "directory" in entry.note and "refused" in entry.note


def test_a_wrong_directory_password_is_only_a_wrong_password(directory_sign_in):
    browser, response = sign_in("ada", "not-her-password")

    assert "did not match" in response.content.decode()
    assert not signed_in(browser)
    assert not AuditEntry.objects.filter(operation=AuditEntry.Operation.REFUSED).exists()


def test_a_group_change_in_the_directory_applies_at_the_next_login(directory, directory_sign_in):
    sign_in("mover")
    assert User.objects.get(username="mover").role == Role.VIEWER

    member = f"uid=mover,ou=people,{directory['base']}"
    admin = ldap.initialize(directory["uri"])
    admin.simple_bind_s(directory["admin_dn"], directory["admin_password"])
    admin.modify_s(f"cn=portal-viewers,{GROUPS}", [(ldap.MOD_DELETE, "member", member.encode())])
    admin.modify_s(f"cn=portal-operators,{GROUPS}", [(ldap.MOD_ADD, "member", member.encode())])
    try:
        _, response = sign_in("mover")
    finally:
        admin.modify_s(
            f"cn=portal-operators,{GROUPS}", [(ldap.MOD_DELETE, "member", member.encode())]
        )
        admin.modify_s(f"cn=portal-viewers,{GROUPS}", [(ldap.MOD_ADD, "member", member.encode())])
        admin.unbind_s()

    assert response.status_code == 302
    mover = User.objects.get(username="mover")
    assert mover.role == Role.OPERATOR
    change = AuditEntry.objects.filter(object_id=str(mover.pk), operation="update").get()
    assert (change.before["role"], change.after["role"]) == (Role.VIEWER, Role.OPERATOR)


def test_local_break_glass_accounts_still_sign_in_and_are_never_taken_over(directory_sign_in):
    user_create(username="breakglass", role=Role.ADMIN, password="local-only-password")
    # A local account that shares a name with a directory entry keeps its own password and role.
    user_create(username="otto", role=Role.VIEWER, password="otto-local-password")

    browser, _ = sign_in("breakglass", "local-only-password")
    assert signed_in(browser)
    assert AuditEntry.objects.get(operation="login", actor_name="breakglass").after["method"] == (
        "password"
    )

    directory_password, _ = sign_in("otto")
    assert not signed_in(directory_password)
    local_password, _ = sign_in("otto", "otto-local-password")
    assert signed_in(local_password)
    otto = User.objects.get(username="otto")
    assert (otto.source, otto.role) == (AccountSource.LOCAL, Role.VIEWER)


def test_an_unreachable_directory_is_not_blamed_on_the_password(directory_sign_in):
    directory_sign_in.AUTH_LDAP_SERVER_URI = "ldap://127.0.0.1:9"  # nothing listens there

    browser, response = sign_in("ada")

    assert "The directory cannot be reached" in response.content.decode()
    assert not signed_in(browser)

"""Single sign-on behind a reverse proxy: the remote-user header counts only from the trusted
proxy, maps its groups header to a role and tenant, and is refused with a reason otherwise."""

import pytest
from django.test import Client

from portal.environment import ConfigurationError
from portal.identity import config as identity_config
from portal.models import AccountSource, AuditEntry, Role, User
from portal.services.accounts import user_create

pytestmark = pytest.mark.django_db
PROXY = "10.0.0.5"  # the address the proxy connects from


def configure(settings, **overrides):
    environ = {
        "REMOTE_AUTH_ENABLED": "1",
        "REMOTE_AUTH_TRUSTED_PROXIES": "10.0.0.0/29, 192.0.2.7",
        "REMOTE_AUTH_AUTO_CREATE_USER": "1",
        "REMOTE_AUTH_OPERATOR_GROUP": "hpc-operators",
        "REMOTE_AUTH_TENANT_ADMIN_GROUP": "hpc-tenant-admins",
        "REMOTE_AUTH_VIEWER_GROUP": "hpc-staff",
        "REMOTE_AUTH_TENANT_GROUPS": "tenant-a=lab-a;tenant-b=lab-b",
        **overrides,
    }
    for name, value in identity_config.remote_auth_settings(environ).items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [
        "portal.lockout.LoginLockoutBackend",
        identity_config.REMOTE_USER_BACKEND,
        "django.contrib.auth.backends.ModelBackend",
    ]
    middleware = list(settings.MIDDLEWARE)
    middleware.insert(
        middleware.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
        identity_config.REMOTE_USER_MIDDLEWARE,
    )
    settings.MIDDLEWARE = middleware


def through_proxy(username: str, groups: str = "", address: str = PROXY, client=None):
    client = client or Client()
    headers = {"REMOTE_ADDR": address, "HTTP_REMOTE_USER": username}
    if groups:
        headers["HTTP_REMOTE_USER_GROUP"] = groups
    return client, client.get("/", **headers)


def test_the_proxy_signs_a_person_in_with_the_role_and_tenant_of_their_groups(settings, tenant_a):
    configure(settings)

    client, response = through_proxy("carol", "staff|hpc-tenant-admins|lab-a")

    assert response.status_code == 200
    carol = User.objects.get(username="carol")
    assert (carol.role, carol.tenant, carol.source) == (
        Role.TENANT_ADMIN,
        tenant_a,
        AccountSource.PROXY,
    )
    login = AuditEntry.objects.get(operation="login", actor=carol)
    assert login.after["method"] == "proxy" and login.after["address"] == PROXY
    # Later requests ride on the session: one sign-in, one audit entry.
    assert through_proxy("carol", "hpc-tenant-admins|lab-a", client=client)[1].status_code == 200
    assert AuditEntry.objects.filter(operation="login", actor=carol).count() == 1


def test_the_header_from_an_address_that_is_not_the_proxy_is_ignored(settings):
    configure(settings)

    client, response = through_proxy("mallory", "hpc-operators", address="203.0.113.9")

    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert not User.objects.filter(username="mallory").exists()
    assert "_auth_user_id" not in client.session


def test_a_session_opened_by_the_proxy_ends_when_a_request_bypasses_it(settings):
    configure(settings)
    client, _ = through_proxy("dave", "hpc-operators")
    assert "_auth_user_id" in client.session

    # The same browser, now reaching the portal directly with a forged header.
    _, response = through_proxy("dave", "hpc-operators", address="203.0.113.9", client=client)

    assert response.status_code == 302
    assert "_auth_user_id" not in client.session


def test_a_group_change_at_the_proxy_applies_at_the_next_sign_in(settings):
    configure(settings)
    through_proxy("erin", "hpc-staff")
    assert User.objects.get(username="erin").role == Role.VIEWER

    through_proxy("erin", "hpc-operators")  # a new browser: a new sign-in

    assert User.objects.get(username="erin").role == Role.OPERATOR


@pytest.mark.parametrize(
    ("overrides", "username", "groups", "reason"),
    [
        ({}, "frank", "staff", "none of the portal&#x27;s groups"),
        ({}, "gina", "hpc-tenant-admins", "in no tenant&#x27;s group"),
        ({"REMOTE_AUTH_AUTO_CREATE_USER": "0"}, "hank", "hpc-operators", "has no account"),
    ],
)
def test_refused_sign_ons_say_why_and_are_audited(settings, overrides, username, groups, reason):
    configure(settings, **overrides)

    _, response = through_proxy(username, groups)

    assert response.status_code == 403
    assert reason in response.content.decode()
    assert not User.objects.filter(username=username).exists()
    assert AuditEntry.objects.get(operation="refused", object_repr=username).after == {
        "username": username,
        "method": "proxy",
        "address": PROXY,
    }


def test_a_default_role_admits_someone_in_no_mapped_group(settings):
    configure(settings, REMOTE_AUTH_DEFAULT_ROLE="viewer")

    assert through_proxy("ivy")[1].status_code == 200

    assert User.objects.get(username="ivy").role == Role.VIEWER


def test_a_local_account_is_not_signed_in_by_the_header(settings):
    configure(settings)
    user_create(username="root-local", role=Role.ADMIN, password="break-glass-password")

    _, response = through_proxy("root-local", "hpc-operators")

    assert response.status_code == 403
    assert User.objects.get(username="root-local").role == Role.ADMIN
    assert (
        Client()
        .post("/login/", {"username": "root-local", "password": "break-glass-password"})
        .status_code
        == 302
    )


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"REMOTE_AUTH_ENABLED": "1"}, "REMOTE_AUTH_TRUSTED_PROXIES"),
        (
            {"REMOTE_AUTH_ENABLED": "1", "REMOTE_AUTH_TRUSTED_PROXIES": "proxy.example"},
            "'proxy.example' is not an address",
        ),
        (
            {
                "REMOTE_AUTH_ENABLED": "1",
                "REMOTE_AUTH_TRUSTED_PROXIES": "10.0.0.1",
                "REMOTE_AUTH_DEFAULT_ROLE": "tenant_admin",
            },
            "REMOTE_AUTH_DEFAULT_ROLE=tenant_admin",
        ),
        (
            {
                "REMOTE_AUTH_ENABLED": "1",
                "REMOTE_AUTH_TRUSTED_PROXIES": "10.0.0.1",
                "REMOTE_AUTH_TENANT_GROUPS": "tenant-a",
            },
            "REMOTE_AUTH_TENANT_GROUPS",
        ),
    ],
)
def test_settings_that_would_let_anyone_in_or_cannot_be_read_are_refused(environ, named):
    with pytest.raises(ConfigurationError, match=named):
        identity_config.remote_auth_settings(environ)


def test_the_mode_is_off_unless_asked_for():
    assert identity_config.remote_auth_settings({}) == {"REMOTE_AUTH_ENABLED": False}

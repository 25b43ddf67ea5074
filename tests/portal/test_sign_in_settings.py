"""The directory and single sign-on settings read from the environment, and what production
refuses of them (portal/identity/config.py, portal/deployment.py)."""

import pytest

from portal.deployment import sign_in_problems
from portal.environment import ConfigurationError
from portal.identity.config import ldap_settings, remote_auth_settings

LDAP = {
    "LDAP_SERVER_URI": "ldaps://directory.example:636",
    "LDAP_BIND_DN": "cn=portal,ou=services,dc=example,dc=org",
    "LDAP_BIND_PASSWORD": "bind-secret",
    "LDAP_USER_SEARCH_BASE": "ou=people,dc=example,dc=org",
    "LDAP_GROUP_SEARCH_BASE": "ou=groups,dc=example,dc=org",
    "LDAP_ADMIN_GROUP": "cn=hpc-admins,ou=groups,dc=example,dc=org",
}


def test_ldap_is_off_unless_a_server_is_named():
    assert ldap_settings({}) == {"LDAP_ENABLED": False}


def test_ldap_settings_map_onto_django_auth_ldap(tmp_path):
    secret = tmp_path / "bind"
    secret.write_text("from-a-file\n")
    environ = {
        **LDAP,
        "LDAP_BIND_PASSWORD_FILE": str(secret),
        "LDAP_USER_SEARCH_FILTER": "(sAMAccountName=%(user)s)",
        "LDAP_GROUP_TYPE": "activeDirectory",
        "LDAP_TENANT_GROUPS": "lab-a=cn=Lab A,ou=groups,dc=example,dc=org;lab-b=cn=lab-b,dc=x",
    }
    values = ldap_settings(environ)
    assert values["AUTH_LDAP_BIND_PASSWORD"] == "from-a-file"  # the _FILE form wins
    assert values["AUTH_LDAP_USER_SEARCH"].filterstr == "(sAMAccountName=%(user)s)"
    assert type(values["AUTH_LDAP_GROUP_TYPE"]).__name__ == "NestedActiveDirectoryGroupType"
    assert values["LDAP_ROLE_GROUPS"] == {"admin": LDAP["LDAP_ADMIN_GROUP"]}
    assert values["LDAP_TENANT_GROUPS"] == {
        "lab-a": "cn=Lab A,ou=groups,dc=example,dc=org",
        "lab-b": "cn=lab-b,dc=x",
    }


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"LDAP_USER_SEARCH_BASE": ""}, "LDAP_USER_SEARCH_BASE must be set"),
        ({"LDAP_GROUP_TYPE": "nis"}, "LDAP_GROUP_TYPE='nis'"),
        ({"LDAP_BIND_PASSWORD_FILE": "/nonexistent/bind"}, "LDAP_BIND_PASSWORD_FILE="),
        ({"LDAP_TENANT_GROUPS": "lab-a"}, "LDAP_TENANT_GROUPS"),
    ],
)
def test_unreadable_ldap_settings_name_the_variable(change, named):
    with pytest.raises(ConfigurationError, match=named):
        ldap_settings({**LDAP, **change})


@pytest.mark.parametrize(
    ("ldap_change", "remote", "named"),
    [
        ({"LDAP_SERVER_URI": "ldap://directory.example"}, {}, "LDAP_START_TLS"),
        ({"LDAP_BIND_PASSWORD": ""}, {}, "LDAP_BIND_PASSWORD_FILE"),
        ({"LDAP_ADMIN_GROUP": ""}, {}, "no LDAP_<ROLE>_GROUP"),
        (
            {},
            {"REMOTE_AUTH_ENABLED": "1", "REMOTE_AUTH_TRUSTED_PROXIES": "0.0.0.0/0"},
            "REMOTE_AUTH_TRUSTED_PROXIES includes 0.0.0.0/0",
        ),
    ],
)
def test_production_refuses_sign_in_settings_that_leak_or_let_anyone_in(ldap_change, remote, named):
    settings = {**ldap_settings({**LDAP, **ldap_change}), **remote_auth_settings(remote)}
    problems = sign_in_problems(settings)
    assert any(named in problem for problem in problems), problems


def test_safe_sign_in_settings_pass_production_checks():
    environ = {**LDAP, "REMOTE_AUTH_ENABLED": "1", "REMOTE_AUTH_TRUSTED_PROXIES": "10.0.0.5"}
    assert sign_in_problems({**ldap_settings(environ), **remote_auth_settings(environ)}) == []

"""Directory (LDAP) and single sign-on proxy settings from the environment.

Kept apart from settings.py so the parsing can be tested without reloading Django; settings.py
takes the returned names as they are. The variables are listed in README.md "Signing in".
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from pathlib import Path

from portal.environment import ConfigurationError, env_bool, env_list

LDAP_BACKEND = "portal.identity.ldap.DirectoryBackend"
REMOTE_USER_BACKEND = "portal.identity.remote.ProxyUserBackend"
REMOTE_USER_MIDDLEWARE = "portal.identity.remote.TrustedProxyRemoteUserMiddleware"

# One variable per role (portal.models.Role's values: settings cannot import models), as
# NetBox's AUTH_LDAP_USER_FLAGS_BY_GROUP names one group per flag.
LDAP_ROLE_VARIABLES = {
    "admin": "LDAP_ADMIN_GROUP",
    "operator": "LDAP_OPERATOR_GROUP",
    "oncall": "LDAP_ONCALL_GROUP",
    "tenant_admin": "LDAP_TENANT_ADMIN_GROUP",
    "viewer": "LDAP_VIEWER_GROUP",
}
REMOTE_ROLE_VARIABLES = {
    role: name.replace("LDAP_", "REMOTE_AUTH_", 1) for role, name in LDAP_ROLE_VARIABLES.items()
}
# django-auth-ldap's group types (django_auth_ldap/config.py) by the names an operator knows.
LDAP_GROUP_TYPES = {
    "groupOfNames": "GroupOfNamesType",
    "groupOfUniqueNames": "GroupOfUniqueNamesType",
    "posixGroup": "PosixGroupType",
    "activeDirectory": "NestedActiveDirectoryGroupType",
}


def secret_from_environment(environ: Mapping[str, str], name: str) -> str:
    """`name` itself, or the content of the file `name`_FILE points at (a compose secret)."""
    path = environ.get(f"{name}_FILE", "").strip()
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as error:
            raise ConfigurationError(f"{name}_FILE={path}: {error.strerror}") from None
    return environ.get(name, "")


def group_map(environ: Mapping[str, str], name: str) -> dict[str, str]:
    """`slug=group;slug=group` -> {slug: group}; a group may itself contain '=' and ','
    (an LDAP DN), so pairs are split on ';' and each on its first '='."""
    mapping = {}
    for pair in environ.get(name, "").split(";"):
        if not pair.strip():
            continue
        slug, separator, group = pair.partition("=")
        if not separator or not slug.strip() or not group.strip():
            raise ConfigurationError(
                f"{name}: {pair.strip()!r} is not tenant-slug=group (pairs separated by ';')"
            )
        mapping[slug.strip()] = group.strip()
    return mapping


def role_groups(environ: Mapping[str, str], variables: Mapping[str, str]) -> dict[str, str]:
    return {role: environ[name].strip() for role, name in variables.items() if environ.get(name)}


def ldap_settings(environ: Mapping[str, str]) -> dict:
    """django-auth-ldap's AUTH_LDAP_* settings and the portal's mapping (LDAP_ENABLED off
    when LDAP_SERVER_URI is unset)."""
    server_uri = environ.get("LDAP_SERVER_URI", "").strip()
    if not server_uri:
        return {"LDAP_ENABLED": False}
    import ldap
    from django_auth_ldap import config as ldap_config

    group_type_name = environ.get("LDAP_GROUP_TYPE", "groupOfNames").strip()
    if group_type_name not in LDAP_GROUP_TYPES:
        raise ConfigurationError(
            f"LDAP_GROUP_TYPE={group_type_name!r}: use one of {', '.join(LDAP_GROUP_TYPES)}"
        )
    user_base = environ.get("LDAP_USER_SEARCH_BASE", "").strip()
    group_base = environ.get("LDAP_GROUP_SEARCH_BASE", "").strip()
    for name, value in (
        ("LDAP_USER_SEARCH_BASE", user_base),
        ("LDAP_GROUP_SEARCH_BASE", group_base),
    ):
        if not value:
            raise ConfigurationError(f"{name} must be set when LDAP_SERVER_URI is")
    connection_options = {ldap.OPT_REFERRALS: 0, ldap.OPT_NETWORK_TIMEOUT: 5}
    ca_file = environ.get("LDAP_CA_CERT_FILE", "").strip()
    if ca_file:
        connection_options[ldap.OPT_X_TLS_CACERTFILE] = ca_file
        connection_options[ldap.OPT_X_TLS_NEWCTX] = 0  # applies the CA file to this connection
    return {
        "LDAP_ENABLED": True,
        "AUTH_LDAP_SERVER_URI": server_uri,
        "AUTH_LDAP_BIND_DN": environ.get("LDAP_BIND_DN", "").strip(),
        "AUTH_LDAP_BIND_PASSWORD": secret_from_environment(environ, "LDAP_BIND_PASSWORD"),
        "AUTH_LDAP_START_TLS": env_bool(environ, "LDAP_START_TLS", False),
        "AUTH_LDAP_CONNECTION_OPTIONS": connection_options,
        "AUTH_LDAP_USER_SEARCH": ldap_config.LDAPSearch(
            user_base,
            ldap.SCOPE_SUBTREE,
            environ.get("LDAP_USER_SEARCH_FILTER", "(uid=%(user)s)").strip(),
        ),
        "AUTH_LDAP_GROUP_SEARCH": ldap_config.LDAPSearch(
            group_base,
            ldap.SCOPE_SUBTREE,
            environ.get("LDAP_GROUP_SEARCH_FILTER", "(objectClass=groupOfNames)").strip(),
        ),
        "AUTH_LDAP_GROUP_TYPE": getattr(ldap_config, LDAP_GROUP_TYPES[group_type_name])(),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        # Re-read names and groups at every sign-in: a directory change applies at the next one.
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        # Role groups decide, not Django permissions from the directory's groups.
        "AUTH_LDAP_FIND_GROUP_PERMS": False,
        "AUTH_LDAP_CACHE_TIMEOUT": 0,
        "LDAP_ROLE_GROUPS": role_groups(environ, LDAP_ROLE_VARIABLES),
        "LDAP_TENANT_GROUPS": group_map(environ, "LDAP_TENANT_GROUPS"),
        "LDAP_DISABLED_GROUP": environ.get("LDAP_DISABLED_GROUP", "").strip(),
    }


def trusted_proxies(environ: Mapping[str, str]) -> list:
    networks = []
    for item in env_list(environ, "REMOTE_AUTH_TRUSTED_PROXIES", []):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ConfigurationError(
                f"REMOTE_AUTH_TRUSTED_PROXIES: {item!r} is not an address or CIDR network"
            ) from None
    return networks


def remote_auth_settings(environ: Mapping[str, str]) -> dict:
    """The single sign-on proxy's header mode (opt-in), named as NetBox names its own
    REMOTE_AUTH_* settings (netbox/netbox/settings.py, the REMOTE_AUTH_* block), with a
    trusted-proxy list NetBox lacks: the header counts only from those addresses."""
    enabled = env_bool(environ, "REMOTE_AUTH_ENABLED", False)
    if not enabled:
        return {"REMOTE_AUTH_ENABLED": False}
    if environ.get("REMOTE_AUTH_DEFAULT_ROLE", "").strip() == "tenant_admin":
        raise ConfigurationError(
            "REMOTE_AUTH_DEFAULT_ROLE=tenant_admin: a tenant admin's tenant must come from "
            "REMOTE_AUTH_TENANT_GROUPS; map a group with REMOTE_AUTH_TENANT_ADMIN_GROUP instead"
        )
    proxies = trusted_proxies(environ)
    if not proxies:
        raise ConfigurationError(
            "REMOTE_AUTH_TRUSTED_PROXIES must name the proxy's addresses when "
            "REMOTE_AUTH_ENABLED is on: anyone else could send the header"
        )
    default_role = environ.get("REMOTE_AUTH_DEFAULT_ROLE", "").strip()
    if default_role and default_role not in LDAP_ROLE_VARIABLES:
        raise ConfigurationError(
            f"REMOTE_AUTH_DEFAULT_ROLE={default_role!r}: "
            f"use one of {', '.join(LDAP_ROLE_VARIABLES)}"
        )
    return {
        "REMOTE_AUTH_ENABLED": True,
        "REMOTE_AUTH_HEADER": environ.get("REMOTE_AUTH_HEADER", "HTTP_REMOTE_USER").strip(),
        "REMOTE_AUTH_TRUSTED_PROXIES": proxies,
        "REMOTE_AUTH_AUTO_CREATE_USER": env_bool(environ, "REMOTE_AUTH_AUTO_CREATE_USER", False),
        "REMOTE_AUTH_GROUP_HEADER": environ.get(
            "REMOTE_AUTH_GROUP_HEADER", "HTTP_REMOTE_USER_GROUP"
        ).strip(),
        "REMOTE_AUTH_GROUP_SEPARATOR": environ.get("REMOTE_AUTH_GROUP_SEPARATOR", "|"),
        "REMOTE_AUTH_DEFAULT_ROLE": default_role,
        "REMOTE_AUTH_ROLE_GROUPS": role_groups(environ, REMOTE_ROLE_VARIABLES),
        "REMOTE_AUTH_TENANT_GROUPS": group_map(environ, "REMOTE_AUTH_TENANT_GROUPS"),
    }

"""From a person's directory groups to a portal role and tenant, or a refusal saying why."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from portal.models import Role, Tenant

# When someone is in several role groups the broadest role wins; a tenant admin is scoped, so
# it ranks below the cluster-wide operator roles and above the read-only viewer.
ROLE_PRECEDENCE = (Role.ADMIN, Role.OPERATOR, Role.ONCALL, Role.TENANT_ADMIN, Role.VIEWER)


class SignInRefused(Exception):
    """The directory knows this person but the portal does not let them in; says why."""


@dataclass(frozen=True)
class Grant:
    role: Role
    tenant: Tenant | None


def _normalise(group: str) -> str:
    # LDAP DNs compare case-insensitively and without spaces after commas.
    return ",".join(part.strip() for part in group.split(",")).lower()


def resolve_grant(
    *,
    groups: Iterable[str],
    role_groups: Mapping[str, str],
    tenant_groups: Mapping[str, str],
    disabled_group: str = "",
    default_role: str = "",
) -> Grant:
    """The role and tenant that `groups` map to.

    `role_groups` maps a role to its directory group, `tenant_groups` a tenant slug to its group.
    `default_role` (the proxy's REMOTE_AUTH_DEFAULT_ROLE) applies when no role group matches.
    Refused: a member of `disabled_group`, someone in no role group, a tenant admin in no
    tenant group or in several, a group naming a tenant the portal does not have.
    """
    member_of = {_normalise(group) for group in groups}
    if disabled_group and _normalise(disabled_group) in member_of:
        raise SignInRefused("This account is disabled in the directory.")
    role = next(
        (
            role
            for role in ROLE_PRECEDENCE
            if role_groups.get(role) and _normalise(role_groups[role]) in member_of
        ),
        None,
    )
    if role is None and default_role:
        role = Role(default_role)
    if role is None:
        raise SignInRefused(
            "Your directory account is in none of the portal's groups, so it has no role here. "
            "Ask an administrator to add you to one."
        )
    slugs = sorted(slug for slug, group in tenant_groups.items() if _normalise(group) in member_of)
    if len(slugs) > 1 and role == Role.TENANT_ADMIN:
        raise SignInRefused(
            f"Your directory account is in the groups of several tenants ({', '.join(slugs)}); "
            "a tenant administrator belongs to exactly one."
        )
    tenant = None
    if len(slugs) == 1:
        tenant = Tenant.objects.filter(slug=slugs[0]).first()
        if tenant is None:
            raise SignInRefused(
                f"Your directory group names tenant {slugs[0]!r}, which this portal does not have."
            )
    if role == Role.TENANT_ADMIN and tenant is None:
        raise SignInRefused(
            "Your directory account is a tenant administrator but in no tenant's group."
        )
    return Grant(role=role, tenant=tenant)

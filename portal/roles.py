"""Who may do what: the five roles and one table of the capabilities each has.

Every page, API view, template, form and websocket check asks this module by capability,
`may(user, "drain")`, and never lists roles itself, so the permission matrix of DESIGN.md
section 6 has one home in the code and the permission-matrix test is derived from it.

A capability says which role may do a kind of thing. Which objects a role then sees is the
selectors' business: a tenant admin may `read_inventory` too, but only their tenant's nodes.
"""

from __future__ import annotations

from django.db import models


class Role(models.TextChoices):
    """The five roles of DESIGN.md section 6; each is a Django group of the same name."""

    ADMIN = "admin", "Administrator"
    OPERATOR = "operator", "Operator"
    ONCALL = "oncall", "On-call engineer"
    TENANT_ADMIN = "tenant_admin", "Tenant administrator"
    VIEWER = "viewer", "Viewer"


# Short names, so each row of the table reads on one line.
ADMIN, OPERATOR, ONCALL, TENANT_ADMIN, VIEWER = (
    Role.ADMIN, Role.OPERATOR, Role.ONCALL, Role.TENANT_ADMIN, Role.VIEWER
)

# capability: (the roles that have it, what it lets them do). A new capability is one row; a new
# role is a member of Role and a column in the rows that grant it.
CAPABILITIES: dict[str, tuple[tuple[Role, ...], str]] = {
    # -- reading ---------------------------------------------------------------------------------
    "use_portal": ((ADMIN, OPERATOR, ONCALL, TENANT_ADMIN, VIEWER),
                   "the dashboard, search, impact, who am I, the live cluster feed"),
    "manage_own_tokens": ((ADMIN, OPERATOR, ONCALL, TENANT_ADMIN, VIEWER),
                          "list, create and revoke one's own API tokens"),
    "read_inventory": ((ADMIN, OPERATOR, ONCALL, TENANT_ADMIN, VIEWER),
                       "nodes, GPUs, NICs, cables and their Slurm state (a tenant admin: their "
                       "allocations' nodes only)"),
    "read_tenants": ((ADMIN, OPERATOR, ONCALL, TENANT_ADMIN, VIEWER),
                     "the tenants and their pages (a tenant admin: their own tenant; the "
                     "private parts need read_tenant_data)"),
    "read_jobs": ((ADMIN, OPERATOR, ONCALL, TENANT_ADMIN),
                  "jobs, job analytics and job telemetry (a tenant admin: their tenant's jobs)"),
    "read_cluster": ((ADMIN, OPERATOR, ONCALL, VIEWER),
                     "the whole cluster rather than one tenant's slice: every node, switch, "
                     "Action and the portal's own periodic work"),
    "read_fabric": ((ADMIN, OPERATOR, ONCALL, VIEWER),
                    "switches, ports, counters, LLDP, rail health and cable traces"),
    "read_faults": ((ADMIN, OPERATOR, ONCALL, VIEWER),
                    "fault tickets, intake records and fault statistics"),
    "read_tenant_data": ((ADMIN, OPERATOR, ONCALL),
                         "any tenant's private data: allocations, jobs, usage, idle GPUs"),
    "read_audit": ((ADMIN, OPERATOR), "the audit log"),
    # -- acting ----------------------------------------------------------------------------------
    "drain": ((ADMIN, OPERATOR, ONCALL), "drain nodes in Slurm"),
    "resume": ((ADMIN, OPERATOR, ONCALL), "resume drained nodes in Slurm"),
    "reboot": ((ADMIN, OPERATOR, ONCALL),
               "reboot nodes the Slurm way (scontrol reboot ASAP, then resume or down)"),
    "respond_to_faults": ((ADMIN, OPERATOR, ONCALL),
                          "report, acknowledge, move, annotate, reopen and recover fault tickets, "
                          "and feed fault intake"),
    "cancel_action": ((ADMIN, OPERATOR, ONCALL), "cancel a queued Action"),
    "run_canary": ((ADMIN, OPERATOR, ONCALL), "queue the canary Action that proves the worker"),
    "act_on_switch": ((ADMIN, OPERATOR),
                      "shut and start ports, leaf maintenance, QoS, ECN counters, save config"),
    "power": ((ADMIN, OPERATOR),
              "power nodes on, off and through a cycle, and reset their BMCs (Redfish)"),
    "write_inventory": ((ADMIN, OPERATOR), "change inventory records and import topologies"),
    "allocate": ((ADMIN, OPERATOR), "allocate nodes to tenants and end allocations"),
    "manage_tenants": ((ADMIN,), "create, change and delete tenants"),
    "manage_accounts": ((ADMIN,), "see every user and revoke anyone's API token"),
}

_ROLES_BY_CAPABILITY: dict[str, frozenset[Role]] = {
    capability: frozenset(roles) for capability, (roles, _) in CAPABILITIES.items()
}


def roles_that_may(capability: str) -> frozenset[Role]:
    """The roles that have `capability`; an unknown name is a programming error, not a deny."""
    try:
        return _ROLES_BY_CAPABILITY[capability]
    except KeyError:
        raise ValueError(f"unknown capability {capability!r}") from None


def role_may(role: Role | str | None, capability: str) -> bool:
    """Whether `role` (None for someone the portal cannot place) has `capability`."""
    roles = roles_that_may(capability)  # first, so a misspelt name fails for everyone alike
    return role is not None and role in roles


def may(user, capability: str) -> bool:
    """Whether `user` may do `capability`. Anonymous and inactive users have no role (see
    `User.role`), so they may not; a stand-in with a `role` (a system view) asks as that role."""
    return role_may(getattr(user, "role", None), capability)


def capabilities_of(role: Role | str | None) -> dict[str, bool]:
    """Every capability and whether `role` has it: what templates read as `may.drain`."""
    return {capability: role_may(role, capability) for capability in CAPABILITIES}

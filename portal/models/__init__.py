from portal.models.accounts import AccountSource, Role, Tenant, User
from portal.models.actions import Action, ActionAttempt, ActionStatus
from portal.models.audit import AuditEntry
from portal.models.tokens import APIToken

__all__ = [
    "APIToken",
    "AccountSource",
    "Action",
    "ActionAttempt",
    "ActionStatus",
    "AuditEntry",
    "Role",
    "Tenant",
    "User",
]

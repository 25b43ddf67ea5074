from portal.models.accounts import AccountSource, Role, Tenant, User
from portal.models.actions import Action, ActionAttempt, ActionStatus
from portal.models.audit import AuditEntry
from portal.models.periodic import PeriodicTaskState
from portal.models.tokens import APIToken

__all__ = [
    "APIToken",
    "AccountSource",
    "Action",
    "ActionAttempt",
    "ActionStatus",
    "AuditEntry",
    "PeriodicTaskState",
    "Role",
    "Tenant",
    "User",
]

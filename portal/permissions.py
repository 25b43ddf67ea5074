"""Role-based access for the API: one rule, declared on each view, enforced here."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from portal.models.accounts import CLUSTER_WIDE_ROLES, Role
from portal.throttling import refuse_if_over_anonymous_budget

ALL_ROLES = frozenset(Role)
WRITE_ROLES = frozenset({Role.ADMIN, Role.OPERATOR})


class RolePermission(BasePermission):
    """Allows a request when the user's role is in the view's `read_roles` or `write_roles`.

    Views declare `read_roles` (default: the cluster-wide roles) and `write_roles` (default:
    admin and operator); `action_roles = {"cancel": {...}}` overrides both for one viewset action.
    Object-level visibility (a tenant admin's own tenant only) is the view's queryset's job, so
    other tenants' objects are 404, not 403.
    """

    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not user or not user.is_authenticated:
            refuse_if_over_anonymous_budget(request, view)  # 429 instead of 401 past the budget
            return False
        role = user.role
        if role is None:
            return False
        action_roles = getattr(view, "action_roles", {})
        action = getattr(view, "action", None)
        if action in action_roles:
            return role in action_roles[action]
        if request.method in SAFE_METHODS:
            return role in getattr(view, "read_roles", CLUSTER_WIDE_ROLES)
        return role in getattr(view, "write_roles", WRITE_ROLES)

"""Role-based access for the API: one rule, declared on each view, enforced here."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from portal.roles import may
from portal.throttling import refuse_if_over_anonymous_budget


class RolePermission(BasePermission):
    """Allows a request when the user's role has the capability the view declares for it.

    Views declare `read_capability` (default: read_cluster) and `write_capability` (default:
    write_inventory); `action_capabilities = {"cancel": "cancel_action"}` overrides both for one
    viewset action. Which role has which capability is portal/roles.py's table. Object-level
    visibility (a tenant admin's own tenant only) is the view's queryset's job, so other tenants'
    objects are 404, not 403.
    """

    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not user or not user.is_authenticated:
            refuse_if_over_anonymous_budget(request, view)  # 429 instead of 401 past the budget
            return False
        return may(user, required_capability(view, request.method))


def required_capability(view, method: str) -> str:
    """The capability a request to `view` with `method` needs, as the view declares it."""
    action_capabilities = getattr(view, "action_capabilities", {})
    action = getattr(view, "action", None)
    if action in action_capabilities:
        return action_capabilities[action]
    if method in SAFE_METHODS:
        return getattr(view, "read_capability", "read_cluster")
    return getattr(view, "write_capability", "write_inventory")

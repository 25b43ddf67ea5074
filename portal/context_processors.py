"""Template context every page needs: the navigation, built from what is installed, and `may`,
what the reader's role may do (`{% if may.drain %}`), read from portal/roles.py."""

from __future__ import annotations

from django.conf import settings
from django.urls import NoReverseMatch, resolve, reverse

from portal.deployment import simulated_parts
from portal.roles import capabilities_of, role_may

# (label, URL name, issue that brings the section): a section whose pages have not landed yet
# is shown disabled rather than linking to a placeholder.
NAVIGATION = [
    ("Dashboard", "dashboard", None),
    ("Inventory", "inventory:node-list", 3),
    ("Jobs", "jobs:job-list", 4),
    ("Fabric", "fabric:switch-list", 6),
    ("Maintenance", "fabric:maintenance-calendar", None),
    ("Faults", "faults:board", 5),
    ("Actions", "action-list", None),
    ("Tenants", "tenant-list", None),
    ("Audit", "audit-list", None),
]


def may_open(url: str, role) -> bool:
    """Whether a page's view lets `role` in: the same `capability` its RoleRequiredMixin
    checks, read from the view itself, so the menu never leads a role to a 403."""
    view_class = getattr(resolve(url).func, "view_class", None)
    capability = getattr(view_class, "capability", None)
    return capability is None or role_may(role, capability)


def navigation(request):
    items = []
    current = request.path
    user = getattr(request, "user", None)
    role = user.role if user is not None and user.is_authenticated else None
    for label, url_name, issue in NAVIGATION:
        try:
            url = reverse(url_name)
        except NoReverseMatch:
            url = None
        if url and not may_open(url, role):
            continue
        active = bool(url) and (current == url or (url != "/" and current.startswith(url)))
        items.append({"label": label, "url": url, "issue": issue, "active": active})
    # One section is current: the one whose address matches the most (/fabric/maintenance/ is
    # Maintenance, not Fabric as well).
    matching = [item for item in items if item["active"]]
    for item in matching:
        item["active"] = len(item["url"]) == max(len(other["url"]) for other in matching)
    return {"navigation": items, "user_role": role, "may": capabilities_of(role)}


def deployment(request):
    """`simulated_parts`: what the header's demo banner names ("simulated cluster", "emulated
    switches"); empty when every driver reaches the real thing."""
    return {
        "deployment": settings.DEPLOYMENT,
        "simulated_parts": simulated_parts(
            slurm_driver=settings.SLURM_DRIVER,
            fabric_driver=settings.FABRIC_DRIVER,
            fabric_credentials_file=str(settings.FABRIC_CREDENTIALS_FILE),
        ),
    }

"""Seams the faults app offers to the apps above it, without importing them.

- Impact: `console` registers `impact_snapshot(target) -> dict` in its AppConfig.ready(); a
  ticket opened by a signal keeps what the fault hit at that moment (running jobs, tenants,
  nodes and rails). Without a provider (a project without the console app) tickets open
  without it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)

ImpactProvider = Callable[[str], dict]
ImpactFilter = Callable[..., dict]  # (snapshot, *, user) -> what that user may read of it
_impact_providers: list[ImpactProvider] = []
_impact_filters: list[ImpactFilter] = []


def register_impact_provider(provider: ImpactProvider, *, visible: ImpactFilter) -> None:
    """`provider(target)` takes the snapshot; `visible(snapshot, user=...)` cuts it to what a
    reader may see (a viewer: no jobs or tenants)."""
    if provider not in _impact_providers:
        _impact_providers.append(provider)
        _impact_filters.append(visible)


def visible_impact(snapshot: dict, *, user) -> dict:
    if not snapshot or not _impact_filters:
        return {}
    return _impact_filters[0](snapshot, user=user)


def impact_snapshot(target: str) -> dict:
    """What `target` (`<kind>:<name>`, console/README.md) hits now, or {} when nobody can say.
    Runs in a savepoint: a failing provider never breaks the intake that asked."""
    for provider in list(_impact_providers):
        try:
            with transaction.atomic():
                return provider(target)
        except Exception:
            logger.exception("impact provider %r failed on %s", provider, target)
    return {}

"""Allocations of nodes to tenants, for the tenant issue to build on."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from inventory.models.compute import Node
from portal.models import Tenant


class AllocationQuerySet(models.QuerySet):
    def current(self, at=None):
        """Allocations in force at `at` (default now): started, and not yet ended."""
        from django.utils import timezone

        at = at or timezone.now()
        return self.filter(Q(end__isnull=True) | Q(end__gt=at), start__lte=at)


class Allocation(models.Model):
    """A set of nodes given to a tenant from `start` until `end` (open-ended when end is null)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="allocations")
    nodes = models.ManyToManyField(Node, related_name="allocations", blank=True)
    start = models.DateTimeField()
    end = models.DateTimeField(null=True, blank=True)
    purpose = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AllocationQuerySet.as_manager()

    class Meta:
        ordering = ["-start", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(end__isnull=True) | Q(end__gt=F("start")),
                name="allocation_end_after_start",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant} from {self.start:%Y-%m-%d}"

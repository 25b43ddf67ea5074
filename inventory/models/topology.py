"""Where hardware lives: pods (the fabric's unit of rail-optimised leafs) and racks."""

from __future__ import annotations

from django.db import models

from inventory.models.natural_sort import natural_sort_key


class LifecycleStatus(models.TextChoices):
    """Lifecycle of a piece of hardware, shared by nodes and switches."""

    PLANNED = "planned"
    ACTIVE = "active"
    MAINTENANCE = "maintenance"
    DECOMMISSIONED = "decommissioned"


class Pod(models.Model):
    """A group of nodes sharing one set of rail leafs (SAKURAONE: two pods of 50 nodes)."""

    name = models.CharField(max_length=50, unique=True)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Rack(models.Model):
    name = models.CharField(max_length=64, unique=True)
    name_sort_key = natural_sort_key("name")  # rack2 < rack10
    pod = models.ForeignKey(
        Pod, null=True, blank=True, on_delete=models.PROTECT, related_name="racks"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name_sort_key", "name"]

    def __str__(self) -> str:
        return self.name

"""Spare parts on the shelf: how many of each part type a site holds, the minimum below which
the dashboard warns, and the reservations repair cases hold on them.

A reservation names its case as text (`reference`, "RC-12"), like a swap does, because the faults
app that owns repair cases sits above inventory. Its life: reserved (by a case) -> consumed (the
part went into a slot; `on_hand` drops by one and the swap is linked) or released (the case closed
without it, and the part stays on the shelf).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from inventory.models.history import ComponentKind


class SpareStock(models.Model):
    kind = models.CharField(max_length=16, choices=ComponentKind.choices)
    site = models.CharField(max_length=64, help_text="where the shelf is: a data centre's name")
    on_hand = models.PositiveIntegerField(
        default=0, help_text="parts on the shelf, the reserved ones included"
    )
    minimum = models.PositiveIntegerField(
        default=0, help_text="the dashboard warns when fewer than this are free"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["site", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "site"], name="spare_stock_one_per_kind_site")
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} spares at {self.site}"


class ReservationStatus(models.TextChoices):
    RESERVED = "reserved"
    CONSUMED = "consumed"
    RELEASED = "released"


class SpareReservation(models.Model):
    stock = models.ForeignKey(SpareStock, on_delete=models.PROTECT, related_name="reservations")
    reference = models.CharField(max_length=64, db_index=True, help_text="the case: RC-12")
    status = models.CharField(
        max_length=16, choices=ReservationStatus.choices, default=ReservationStatus.RESERVED,
        db_index=True,
    )
    reserved_at = models.DateTimeField()
    consumed_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    swap = models.OneToOneField(
        "inventory.ComponentSwap", null=True, blank=True, on_delete=models.SET_NULL,
        related_name="spare_reservation", help_text="the swap that put this spare in",
    )
    reserved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-reserved_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.stock}: {self.reference} {self.status}"

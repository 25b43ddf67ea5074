"""A record of each topology import run; the audit log points at it."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class TopologyImportRun(models.Model):
    spec_name = models.CharField(max_length=100)
    scale = models.PositiveIntegerField(default=1)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    counts = models.JSONField(
        default=dict, help_text='Per model: {"created": n, "updated": n, "unchanged": n}'
    )
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Import of {self.spec_name} x{self.scale} at {self.created_at:%Y-%m-%d %H:%M}"

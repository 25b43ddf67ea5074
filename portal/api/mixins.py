"""Viewset behaviour shared by every app's API: audited writes inside one transaction."""

from __future__ import annotations

from django.db import transaction

from portal.services.audit import record_change, snapshot


class AuditedModelMixin:
    """Writes through a ModelViewSet are atomic and each leaves an audit record."""

    def perform_create(self, serializer):
        with transaction.atomic():
            instance = serializer.save()
            record_change(
                actor=self.request.user,
                operation="create",
                instance=instance,
                after=snapshot(instance),
                via="api",
            )

    def perform_update(self, serializer):
        with transaction.atomic():
            before = snapshot(serializer.instance)
            instance = serializer.save()
            record_change(
                actor=self.request.user,
                operation="update",
                instance=instance,
                before=before,
                after=snapshot(instance),
                via="api",
            )

    def perform_destroy(self, instance):
        with transaction.atomic():
            record_change(
                actor=self.request.user,
                operation="delete",
                instance=instance,
                before=snapshot(instance),
                via="api",
            )
            instance.delete()

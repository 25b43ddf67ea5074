"""Viewset behaviour shared by every app's API: audited writes inside one transaction, each on
the row as committed (portal/api/concurrency.py)."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema

from portal.api.concurrency import IF_MATCH_PARAMETER, check_if_match, etag_of, lock_and_reload
from portal.services.audit import record_change, snapshot


class AuditedModelMixin:
    """Writes through a ModelViewSet are atomic and each leaves an audit record. An update locks
    and reloads the row first and honours `If-Match`; reads and writes of one object answer
    with its `ETag`."""

    def retrieve(self, request, *args, **kwargs):
        response = super().retrieve(request, *args, **kwargs)
        response["ETag"] = etag_of(self._object_read)
        return response

    @extend_schema(parameters=[IF_MATCH_PARAMETER])
    def update(self, request, *args, **kwargs):
        with transaction.atomic():
            response = super().update(request, *args, **kwargs)
        # The written object: a service may have replaced the instance it was given.
        response["ETag"] = etag_of(self._write_serializer.instance)
        return response

    @extend_schema(parameters=[IF_MATCH_PARAMETER])
    def partial_update(self, request, *args, **kwargs):
        return super().partial_update(request, *args, **kwargs)

    @extend_schema(parameters=[IF_MATCH_PARAMETER])
    def destroy(self, request, *args, **kwargs):
        with transaction.atomic():
            return super().destroy(request, *args, **kwargs)

    def get_object(self):
        instance = super().get_object()
        if self.request.method in ("PUT", "PATCH", "DELETE"):
            # Inside update()/destroy()'s transaction: the row stays locked until the write.
            lock_and_reload(instance)
            check_if_match(self.request.headers.get("If-Match"), instance)
        self._object_read = instance
        return instance

    def get_serializer(self, *args, **kwargs):
        serializer = super().get_serializer(*args, **kwargs)
        self._write_serializer = serializer
        return serializer

    def locked_for_update(self, instance):
        """`instance` locked and as committed. A single update's get_object() locked and read it
        already, in this same transaction; bulk writes fetch their rows without get_object()."""
        if not transaction.get_connection().in_atomic_block:
            raise RuntimeError("lock a row for update inside the write's transaction")
        if instance is not getattr(self, "_object_read", None):
            lock_and_reload(instance)
        return instance

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
            self.locked_for_update(serializer.instance)
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

"""Concurrent writers through the API: no update lost, and stale writes refused on request.

Two rules, for every object the API writes:
- A write locks the row and reloads it before applying the request's fields, so a PATCH of
  `serial` cannot put back the `model` another PATCH committed a moment earlier (the serializer
  saves the whole row); and it writes only the fields the request named.
- A client that read an object can send its `ETag` back in `If-Match`: if the row changed since,
  the write is a 412 and changes nothing (RFC 9110 section 13.1.1). The ETag is a digest of the
  row's stored fields, so it changes exactly when one of them does.
"""

from __future__ import annotations

import hashlib
import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from portal.errors import ServiceError


class PreconditionFailed(ServiceError):
    status_code = 412


IF_MATCH_PARAMETER = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="The `ETag` of the object as you read it: the write is a 412 if it changed since.",
)


def etag_of(instance: models.Model) -> str:
    """A strong ETag over the row's stored field values."""
    values = [
        (field.attname, getattr(instance, field.attname))
        for field in instance._meta.concrete_fields
    ]
    digest = hashlib.sha256(json.dumps(values, cls=DjangoJSONEncoder).encode()).hexdigest()
    return f'"{digest[:32]}"'


def lock_and_reload(instance: models.Model) -> None:
    """Take the row's lock for the rest of the transaction and read its committed values into
    `instance`, in one query (in SQLite the IMMEDIATE transaction already holds the database's
    write lock)."""
    model = type(instance)
    committed = model._base_manager.select_for_update().get(pk=instance.pk)
    for field in model._meta.concrete_fields:
        value = getattr(committed, field.attname)
        if getattr(instance, field.attname) != value:
            setattr(instance, field.attname, value)
            if field.is_relation and field.is_cached(instance):
                field.delete_cached_value(instance)


def lock_rows(model: type[models.Model], primary_keys) -> None:
    """Lock many rows in one query, in primary-key order: two bulk writes naming the same rows
    in different orders then wait for each other instead of deadlocking."""
    rows = model._base_manager.select_for_update().filter(pk__in=sorted(primary_keys))
    list(rows.order_by("pk").values_list("pk"))


def check_if_match(header: str | None, instance: models.Model) -> None:
    """Nothing if `If-Match` is absent, `*` or names the row's current ETag; else a 412."""
    if not header:
        return
    offered = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    if "*" in offered or etag_of(instance) in offered:
        return
    raise PreconditionFailed(
        {
            "detail": f"{instance} changed since you read it: read it again and re-apply "
            "your change (If-Match does not match its ETag).",
            "etag": etag_of(instance),
        }
    )

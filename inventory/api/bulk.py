"""Bulk create and bulk update in one request: all or nothing, every bad item named.

`POST .../bulk/` takes a list of objects to create; `PATCH .../bulk/` a list of partial objects,
each with its `id`. Every item is validated first; then all are written in one transaction, each
in a savepoint so that a clash the database finds (a duplicate hostname within the list) names
its item and the remaining items are still checked. Any error: 400 with a `detail`, listing
`{index, fields}` for each bad item, and nothing is written. Each written object is audited like
a single write.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from inventory.api.errors import integrity_error_fields
from inventory.api.serializers import BulkErrorSerializer
from portal.api.concurrency import lock_rows
from portal.errors import InvalidInput, ServiceError

MAX_BULK_ITEMS = 1000


class BulkInvalid(InvalidInput):
    """400 with one `{index, fields}` entry per bad item."""

    def __init__(self, errors: list[dict]):
        noun = "item is" if len(errors) == 1 else "items are"
        super().__init__(
            {
                "detail": f"{len(errors)} {noun} invalid; nothing was written.",
                "errors": sorted(errors, key=lambda error: error["index"]),
            }
        )


def _fields(detail) -> dict:
    if isinstance(detail, dict):
        return {
            name: messages if isinstance(messages, list) else [messages]
            for name, messages in detail.items()
        }
    return {"non_field_errors": detail if isinstance(detail, list) else [str(detail)]}


def bulk_write(view, request) -> Response:
    items = request.data
    if not isinstance(items, list) or not items:
        raise InvalidInput({"detail": "Send a non-empty JSON list of objects.", "errors": []})
    if len(items) > MAX_BULK_ITEMS:
        raise InvalidInput({"detail": f"At most {MAX_BULK_ITEMS} items per request.", "errors": []})
    updating = request.method == "PATCH"
    errors: list[dict] = []
    instances = _instances_to_update(view, items, errors) if updating else {}
    bound = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            errors.append({"index": index, "fields": {"non_field_errors": ["expected an object"]}})
            continue
        data = dict(item)
        instance = None
        if updating:
            pk = data.pop("id", None)
            instance = instances.get(pk) if type(pk) is int else None
            if instance is None:
                continue  # reported by _instances_to_update
        serializer = view.get_serializer(instance, data=data, partial=updating)
        try:
            valid = serializer.is_valid()
        except ServiceError as exc:
            # A service the serializer asks (a hostlist expanded against the inventory) refused
            # the item: its error belongs in the item's entry, not as the whole response.
            errors.append({"index": index, "fields": _fields(exc.detail)})
            continue
        if valid:
            bound.append((index, serializer))
        else:
            errors.append({"index": index, "fields": _fields(serializer.errors)})
    if errors:
        raise BulkInvalid(errors)
    model = view.get_queryset().model
    with transaction.atomic():
        if updating:
            lock_rows(model, [serializer.instance.pk for _, serializer in bound])
        for index, serializer in bound:
            # perform_create/perform_update write inside their own atomic block (the audited
            # mixin, the cabling services); nested in this one it is a savepoint, so a failed
            # item rolls back alone and the items after it are still checked.
            try:
                if updating:
                    view.perform_update(serializer)
                else:
                    view.perform_create(serializer)
            except IntegrityError as exc:
                errors.append({"index": index, "fields": integrity_error_fields(model, exc)})
            except ServiceError as exc:
                errors.append({"index": index, "fields": _fields(exc.detail)})
            except DjangoValidationError as exc:
                detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
                errors.append({"index": index, "fields": _fields(detail)})
        if errors:
            raise BulkInvalid(errors)  # leaving the block this way rolls everything back
    written = [serializer.instance for _, serializer in bound]
    body = view.get_serializer_class()(written, many=True, context=view.get_serializer_context())
    return Response(body.data, status=status.HTTP_200_OK if updating else status.HTTP_201_CREATED)


def _instances_to_update(view, items: list, errors: list[dict]) -> dict:
    """The objects the items name by `id`, in one query through the view's visibility rules."""
    ids = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        pk = item.get("id")
        if not isinstance(pk, int) or isinstance(pk, bool):
            errors.append({"index": index, "fields": {"id": ["the id of the object to change"]}})
        else:
            ids.append(pk)
    if len(ids) != len(set(ids)):
        seen: set[int] = set()
        for index, item in enumerate(items):
            pk = item.get("id") if isinstance(item, dict) else None
            if pk in seen:
                errors.append({"index": index, "fields": {"id": [f"{pk} appears twice"]}})
            seen.add(pk)
    found = view.get_queryset().in_bulk(ids)
    for index, item in enumerate(items):
        pk = item.get("id") if isinstance(item, dict) else None
        if isinstance(pk, int) and not isinstance(pk, bool) and pk not in found:
            errors.append({"index": index, "fields": {"id": [f"no object with id {pk}"]}})
    return found


def with_bulk_writes(viewset_class):
    """Class decorator: adds `POST` and `PATCH` `<list url>/bulk/`, documented with the
    viewset's serializer."""
    serializer_class = viewset_class.serializer_class
    name = serializer_class.__name__.removesuffix("Serializer")
    update_item = type(
        f"{name}BulkUpdateItemSerializer",
        (serializer_class,),
        {
            "id": serializers.IntegerField(help_text="The object to change"),
            # Partial, yet each item must name its object (portal/api/schema.py states it).
            "required_even_when_partial": ("id",),
            "Meta": type("Meta", (serializer_class.Meta,), {}),
        },
    )
    bad = OpenApiResponse(BulkErrorSerializer, description="Bad items; nothing was written")

    @extend_schema(
        methods=["POST"],
        summary=f"Create many {name} objects in one transaction",
        request=serializer_class(many=True, allow_empty=False, max_length=MAX_BULK_ITEMS),
        responses={201: serializer_class(many=True), 400: bad},
    )
    @extend_schema(
        methods=["PATCH"],
        summary=f"Change many {name} objects in one transaction (each item names its id)",
        request=update_item(many=True, partial=True, allow_empty=False, max_length=MAX_BULK_ITEMS),
        responses={200: serializer_class(many=True), 400: bad},
    )
    # The written objects come back as one plain list, not a page.
    @action(detail=False, methods=["post", "patch"], url_path="bulk", pagination_class=None)
    def bulk(self, request):
        return bulk_write(self, request)

    viewset_class.bulk = bulk
    return viewset_class

"""A related field that is written as an id and read as a brief nested object."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_basic_type
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers


class BriefRelatedField(serializers.PrimaryKeyRelatedField):
    """Takes the related object's id on input and shows it through `brief` on output.

    `{"node": 12}` in a request, `{"node": {"id": 12, "url": ..., "hostname": "gpu001"}}` in the
    response: clients write ids and read names without a second request. The viewsets read
    `brief` to decide what to join in (`inventory.api.prefetch`), so a brief that reaches through
    another relation costs a join, not a query per row.
    """

    def __init__(self, brief: type[serializers.Serializer], **kwargs):
        self.brief = brief
        super().__init__(**kwargs)

    def use_pk_only_optimization(self) -> bool:
        return False  # the brief needs the object, not only its key

    def to_representation(self, value):
        # One brief serializer per field and request: building a ModelSerializer's fields costs
        # far more than representing one object, and a page holds hundreds.
        serializer = getattr(self, "_brief_serializer", None)
        if serializer is None:
            serializer = self._brief_serializer = self.brief(context=self.context)
        return serializer.to_representation(value)

    def get_choices(self, cutoff=None):
        """The browsable API's form offers the objects by key, as a request names them (DRF
        keys them by `to_representation`, here a dict: unhashable, a 500 on the page)."""
        queryset = self.get_queryset()
        if queryset is None:
            return {}
        if cutoff is not None:
            queryset = queryset[:cutoff]
        return {item.pk: self.display_value(item) for item in queryset}


class DetailURLField(serializers.HyperlinkedIdentityField):
    """The object's detail URL, reversed once per field and request and then formatted with
    each object's key: `reverse()` for every row of a 1,000-row page is most of its cost."""

    PLACEHOLDER = 2**31 - 1

    def get_url(self, obj, view_name, request, format):
        if obj.pk is None:
            return None
        cached = getattr(self, "_url_parts", None)
        if cached is None or cached[0] is not request:
            url = super().get_url(_Key(self.PLACEHOLDER), view_name, request, format)
            head, _, tail = str(url).rpartition(str(self.PLACEHOLDER))
            cached = self._url_parts = (request, head, tail)
        return f"{cached[1]}{obj.pk}{cached[2]}"

    def to_representation(self, value):
        request = self.context.get("request")
        return self.get_url(value, self.view_name, request, None)


class _Key:
    """Stands in for an object when reversing a URL pattern once."""

    def __init__(self, pk: int):
        self.pk = pk


class BriefRelatedFieldSchema(OpenApiSerializerFieldExtension):
    """OpenAPI: an integer id in requests, the brief object in responses."""

    target_class = BriefRelatedField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        if direction == "request":
            return build_basic_type(OpenApiTypes.INT)
        return auto_schema.resolve_serializer(self.target.brief, direction).ref

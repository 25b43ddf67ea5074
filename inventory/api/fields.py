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
        return self.brief(value, context=self.context).data


class BriefRelatedFieldSchema(OpenApiSerializerFieldExtension):
    """OpenAPI: an integer id in requests, the brief object in responses."""

    target_class = BriefRelatedField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        if direction == "request":
            return build_basic_type(OpenApiTypes.INT)
        return auto_schema.resolve_serializer(self.target.brief, direction).ref

"""OpenAPI generation: our token authentication, and a schema that documents every status an
operation can answer with, so a client (and tests/portal/test_api_contract.py) can rely on it.

drf-spectacular documents the success responses; `PortalAutoSchema` adds the error statuses the
portal's machinery produces around every view, each with its JSON body:

- 400 on every operation: a field, a query parameter or the body is refused (a NUL character
  anywhere included); the body names what it refused;
- 401 where the operation authenticates: no credentials, or a bad or expired token;
- 403 where a permission applies: the caller's role may not do this;
- 404 with a path parameter (no such object, or not visible to the caller) or pagination (no
  such page or cursor);
- 409 on POST, PUT, PATCH and DELETE: the change clashes with the current state (a workflow
  rule, or a race the database caught);
- 412 where the operation takes `If-Match`: the object changed since that ETag was read;
- 413 with a request body: larger than its media type allows (a YAML topology spec: 1 MiB);
- 415 with a request body: a media type the operation does not parse;
- 429 where the view has throttles.

A view's own declaration of a status (with `extend_schema(responses=...)`) always wins; one
declared with a description only gets the standard body for that status.
"""

from __future__ import annotations

from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django_filters import NumberFilter
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

from portal.api.rules_outside_the_schema import described_rules, rules_for
from portal.api.serializers import RejectUnknownFieldsMixin
from portal.text_input import ANY_TEXT_PATTERN, NOT_BLANK_TEXT_PATTERN

ERROR_COMPONENT = {
    "type": "object",
    "description": "An error: `detail` says what is wrong; some errors add fields of their own "
    "(e.g. `allowed`, the states a ticket may move to).",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
    "additionalProperties": True,
}
VALIDATION_ERROR_COMPONENT = {
    "type": "object",
    "description": "Refused input: each refused field (or query parameter) maps to its messages, "
    "nested like the input; `non_field_errors` are about the whole object; `detail` is about "
    "the request as a whole (e.g. a body that is not JSON).",
    "properties": {
        "detail": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        },
        "non_field_errors": {"type": "array", "items": {"type": "string"}},
    },
    "additionalProperties": True,
}

ERROR_DESCRIPTIONS = {
    "400": "Bad input; the body names each refused field or parameter",
    "401": "No credentials, or a bad or expired token",
    "403": "Your role does not allow this",
    "404": "No such object (or not visible to you), or no such page",
    "409": "The request clashes with the current state",
    "412": "The object changed since the `If-Match` ETag was read",
    "413": "The body is larger than this media type allows",
    "415": "The body's media type is not accepted",
    "429": "Too many requests; retry after the time in Retry-After",
}
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON_TYPES_BUT_NULL = ("object", "array", "string", "number", "boolean")
# Ids and counts are 64-bit integers in PostgreSQL at most.
INTEGER_RANGE = {"minimum": -(2**63), "maximum": 2**63 - 1}


class HashedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "portal.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`; create keys at /api/tokens/ or with "
            "`manage.py create_portal_user`.",
        }


class PortalAutoSchema(AutoSchema):
    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        responses = operation["responses"]
        for status in self._error_statuses(operation):
            if status not in responses:
                responses[status] = self._error_response(status)
            elif "content" not in responses[status]:
                # Declared with a description only: the body is still the standard one.
                described = responses[status]
                responses[status] = {**self._error_response(status), **described}
        operation["responses"] = dict(sorted(responses.items()))
        self._state_query_parameter_formats(operation.get("parameters", []))
        rules = rules_for(method, path)
        if rules:
            described = operation.get("description", "").strip()
            operation["description"] = "\n\n".join(
                part for part in (described, described_rules(rules)) if part
            )
        return operation

    def _state_query_parameter_formats(self, parameters: list[dict]) -> None:
        """What portal/api/query_parameters.py holds a query parameter to: a NumberFilter takes
        whole numbers (every one filters an integer column, though drf-spectacular calls those
        read by a method `number`), and no text holds a NUL character."""
        number_filters = self._number_filter_names()
        for parameter in parameters:
            if parameter.get("in") != "query":
                continue
            schema = parameter.get("schema", {})
            if parameter["name"] in number_filters and schema.get("type") in ("number", "integer"):
                parameter["schema"] = {**schema, "type": "integer", **INTEGER_RANGE}
            elif schema.get("type") == "string" and not {"enum", "format", "pattern"} & set(schema):
                schema["pattern"] = ANY_TEXT_PATTERN

    def _number_filter_names(self) -> set[str]:
        filterset_class = getattr(self.view, "filterset_class", None)
        if filterset_class is None:
            return set()
        return {
            name
            for name, query_filter in filterset_class.base_filters.items()
            if isinstance(query_filter, NumberFilter)
        }

    def _error_statuses(self, operation: dict) -> list[str]:
        statuses = ["400"]
        if any(requirement for requirement in operation.get("security", [])):
            statuses.append("401")
        if self.view.get_permissions():
            statuses.append("403")
        parameters = operation.get("parameters", [])
        if any(parameter["in"] == "path" for parameter in parameters) or any(
            parameter["in"] == "query" and parameter["name"] in ("page", "cursor")
            for parameter in parameters
        ):
            statuses.append("404")
        if self.method in UNSAFE_METHODS:
            statuses.append("409")
        if any(parameter["name"] == "If-Match" for parameter in parameters):
            statuses.append("412")
        if "requestBody" in operation:
            statuses.extend(["413", "415"])
        if self.view.get_throttles():
            statuses.append("429")
        return statuses

    def _error_response(self, status: str) -> dict:
        if status == "400":
            component = self._component("ValidationError", VALIDATION_ERROR_COMPONENT)
        else:
            component = self._component("Error", ERROR_COMPONENT)
        return {
            "description": ERROR_DESCRIPTIONS[status],
            "content": {"application/json": {"schema": component.ref}},
        }

    def _component(self, name: str, schema: dict) -> ResolvedComponent:
        component = ResolvedComponent(
            name=name, type=ResolvedComponent.SCHEMA, schema=schema, object=f"portal.api.{name}"
        )
        self.registry.register_on_missing(component)
        return component

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if (
            direction == "request"
            and isinstance(field, serializers.ListField)
            and not field.allow_empty
            and isinstance(schema, dict)
        ):
            # "This list may not be empty.": a 400 the schema did not promise.
            schema["minItems"] = max(schema.get("minItems", 0), 1)
        if direction == "request" and isinstance(schema, dict):
            _state_text_format(field, schema)
            # drf-spectacular says "any value" ({}) for JSON, null included; DRF refuses null.
            if (
                isinstance(field, serializers.JSONField)
                and not field.allow_null
                and not {"type", "anyOf", "oneOf", "$ref"} & set(schema)
            ):
                schema["anyOf"] = [{"type": kind} for kind in JSON_TYPES_BUT_NULL]
        if direction != "response" or not isinstance(schema, dict) or "$ref" in schema:
            return schema
        model_field = _model_field(field)
        if field.default is None or (model_field is not None and model_field.null):
            # DRF answers null for a null column, and the default when a dotted source crosses
            # an empty relation (`source="node.hostname", default=None`); declared fields do
            # not carry the model's null=True into the schema by themselves.
            schema["nullable"] = True
        if model_field is not None and model_field.blank and field.read_only:
            # Read-only fields lose `allow_blank` (DRF drops it), yet a blank=True column
            # holds "" until someone sets it.
            if isinstance(field, serializers.ChoiceField) and "" not in schema.get("enum", [""]):
                # As allow_blank would: drf-spectacular's enum hook makes it a BlankEnum.
                schema["enum"] = [*schema["enum"], ""]
            elif schema.get("type") == "string" and {"format", "pattern"} & set(schema):
                schema = _or_blank(schema)
        return schema

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(serializer, RejectUnknownFieldsMixin):
            # Strict serializers refuse a field they do not have, naming it.
            schema["additionalProperties"] = False
        always_required = getattr(serializer, "required_even_when_partial", ())
        if direction == "request" and always_required:
            # A bulk PATCH item is partial, but names the object it changes by its id.
            schema["required"] = sorted({*schema.get("required", []), *always_required})
        return schema

    def _unwrap_list_serializer(self, serializer, direction):
        schema = super()._unwrap_list_serializer(serializer, direction)
        if schema and isinstance(serializer, serializers.ListSerializer):
            # A list body's size limits (bulk writes: at least one item, at most MAX_BULK_ITEMS).
            if serializer.min_length is not None or not serializer.allow_empty:
                schema["minItems"] = max(
                    serializer.min_length or 0, 0 if serializer.allow_empty else 1
                )
            if serializer.max_length is not None:
                schema["maxItems"] = serializer.max_length
        return schema

    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)
        # drf-spectacular offers "" beside a pattern as `oneOf`; a pattern that matches "" too
        # (`^[a-z]*$`) makes "" match both, which `oneOf` forbids: either is fine, so `anyOf`.
        if "oneOf" in schema and {"type": "string", "maxLength": 0} in schema["oneOf"]:
            schema["anyOf"] = schema.pop("oneOf")


def _model_field(field) -> models.Field | None:
    """The model field a serializer field reads directly (not through a dotted source)."""
    model = getattr(getattr(field.parent, "Meta", None), "model", None)
    if model is None or not field.source or "." in field.source or field.source == "*":
        return None
    try:
        model_field = model._meta.get_field(field.source)
    except FieldDoesNotExist:  # a property or an annotation
        return None
    return model_field if isinstance(model_field, models.Field) else None


def _state_text_format(field, schema: dict) -> None:
    """Plain text in a request refuses NUL characters (every parser does, PostgreSQL cannot
    store them), and a required text that DRF trims refuses whitespace alone ("This field may
    not be blank."); a field with its own pattern, format or choices already says more."""
    if isinstance(field, serializers.DecimalField) and schema.get("format") == "decimal":
        # drf-spectacular's pattern also matches "", "-" and "." (all digits optional), which
        # DRF refuses ("A valid number is required."): at least one digit, on either side.
        whole = "" if field.max_digits is None else field.max_digits - (field.decimal_places or 0)
        places = "" if field.decimal_places is None else field.decimal_places
        if places == 0:
            schema["pattern"] = rf"^-?[0-9]{{1,{whole}}}$"
        else:
            schema["pattern"] = (
                rf"^-?(?:[0-9]{{1,{whole}}}(?:\.[0-9]{{0,{places}}})?|\.[0-9]{{1,{places}}})$"
            )
        return
    if not isinstance(field, serializers.CharField) or schema.get("type") != "string":
        return
    if {"enum", "format", "pattern"} & set(schema):
        return
    if getattr(field, "schema_pattern", None):
        schema["pattern"] = field.schema_pattern
    elif field.trim_whitespace and not field.allow_blank:
        schema["pattern"] = NOT_BLANK_TEXT_PATTERN
    else:
        schema["pattern"] = ANY_TEXT_PATTERN


def _or_blank(schema: dict) -> dict:
    outer_keys = {"readOnly", "nullable", "description", "title"}
    outer = {key: value for key, value in schema.items() if key in outer_keys}
    inner = {key: value for key, value in schema.items() if key not in outer_keys}
    return {**outer, "anyOf": [inner, {"type": "string", "maxLength": 0}]}

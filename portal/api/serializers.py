"""Serializer bases shared by every app's API, and the portal app's own serializers."""

from __future__ import annotations

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.utils import model_meta

from portal.actions.canary import CANARY_MAX_HOLD_SECONDS
from portal.models import Action, ActionAttempt, APIToken, AuditEntry, Tenant, User
from portal.text_input import ONE_LINE_MESSAGE, ONE_LINE_PATTERN, is_one_line


class RejectUnknownFieldsMixin:
    """A typo in a field name is an error, not a silently ignored field; and in a JSON body a
    value of another JSON type than the schema states (`"3"` for an integer, `0` for text,
    `false` for a number) is refused naming the field, as the schema promises, rather than
    coerced the way DRF reads form data."""

    def to_internal_value(self, data):
        if isinstance(data, dict) and not isinstance(data, QueryDict):
            mistyped = {
                name: [problem]
                for name, value in data.items()
                if name in self.fields
                and (problem := json_type_problem(self.fields[name], value)) is not None
            }
            if mistyped:
                raise serializers.ValidationError(mistyped)
        if isinstance(data, dict):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - writable)
            if unknown:
                read_only = [name for name in unknown if name in self.fields]
                errors = {name: ["This field is read-only."] for name in read_only}
                errors.update(
                    {name: ["Unknown field."] for name in unknown if name not in self.fields}
                )
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


def json_type_problem(field: serializers.Field, value) -> str | None:
    """Why a JSON `value` is not of the type the schema states for `field`; None if it is
    (or where the field reads any type: choices, dates, decimals, relations)."""
    if value is None or field.read_only:
        return None  # null is the field's own rule (allow_null)
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else "Use true or false."
    if isinstance(field, serializers.IntegerField):
        return None if type(value) is int else "Use a whole number (a JSON number)."
    if isinstance(field, serializers.FloatField):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return None
        return "Use a number (a JSON number)."
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        for item in value:
            problem = json_type_problem(field.child, item)
            if problem is not None:
                return problem
        return None
    if isinstance(field, serializers.CharField) and not isinstance(value, str):
        return "Use text (a JSON string)."
    return None


class OneLineTextField(serializers.CharField):
    """A reason or label shown on one line (Slurm's sinfo -R, the Action log, the audit): the
    services refuse a control character inside it; the schema states it as a pattern."""

    schema_pattern = ONE_LINE_PATTERN

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 1000)
        super().__init__(**kwargs)
        self.validators.append(_one_line)


def _one_line(value: str) -> None:
    if value and not is_one_line(value):
        raise serializers.ValidationError(ONE_LINE_MESSAGE)


class StrictSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    pass


class StrictModelSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """An update writes only the columns the request named (and `auto_now` stamps), so two
    PATCHes of different fields of one row never put back each other's old value.
    ModelSerializer.update, but for the `update_fields` of its save."""

    def update(self, instance, validated_data):
        serializers.raise_errors_on_nested_writes("update", self, validated_data)
        relations = model_meta.get_field_info(instance).relations
        to_many = {
            name: value
            for name, value in validated_data.items()
            if name in relations and relations[name].to_many
        }
        named = [name for name in validated_data if name not in to_many]
        for name in named:
            setattr(instance, name, validated_data[name])
        columns = {field.name: field for field in instance._meta.concrete_fields}
        if all(name in columns for name in named):
            stamps = [name for name, field in columns.items() if getattr(field, "auto_now", False)]
            if named:
                instance.save(update_fields=[*named, *stamps])
        else:
            instance.save()  # an attribute that is no column: its setter may touch any
        for name, value in to_many.items():
            getattr(instance, name).set(value)
        return instance


# --- the portal app's own resources ------------------------------------------------------------


class ActionAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = ActionAttempt
        fields = ["number", "worker", "started_at", "finished_at", "outcome", "error"]


class ActionSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:action-detail")
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Action
        fields = [
            "id",
            "url",
            "kind",
            "target",
            "parameters",
            "reason",
            "requested_by",
            "idempotency_key",
            "status",
            "attempts",
            "max_attempts",
            "last_error",
            "result",
            "created_at",
            "updated_at",
            "not_before",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class ActionDetailSerializer(ActionSerializer):
    attempt_log = ActionAttemptSerializer(many=True, read_only=True)

    class Meta(ActionSerializer.Meta):
        fields = [*ActionSerializer.Meta.fields, "attempt_log"]
        read_only_fields = fields


class CancelActionSerializer(StrictSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=1000)


class CanaryRequestSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=1000)
    hold_seconds = serializers.FloatField(
        min_value=0,
        max_value=CANARY_MAX_HOLD_SECONDS,
        default=0,
        help_text="How long the worker holds the Action (to rehearse recovery).",
    )
    idempotency_key = serializers.CharField(required=False, max_length=128)


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "timestamp",
            "actor_name",
            "operation",
            "object_type",
            "object_id",
            "object_repr",
            "before",
            "after",
            "note",
            "via",
        ]
        read_only_fields = fields


class TenantSerializer(StrictModelSerializer):
    user_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Tenant
        fields = ["id", "name", "slug", "slurm_account", "evpn_vni", "user_count", "created_at"]
        read_only_fields = ["id", "user_count", "created_at"]


class APITokenSerializer(serializers.ModelSerializer):
    user = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = APIToken
        fields = ["id", "user", "name", "prefix", "created_at", "last_used_at", "expires_at"]
        read_only_fields = fields


class APITokenCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="At most API_TOKEN_MAX_LIFETIME_DAYS (365) days ahead; omitted: that maximum.",
    )


class APITokenCreatedSerializer(serializers.Serializer):
    token = APITokenSerializer()
    key = serializers.CharField(help_text="Shown only now; store it, it cannot be retrieved again.")


class MeSerializer(serializers.ModelSerializer):
    role = serializers.CharField(read_only=True, allow_null=True)
    tenant = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, help_text="null for cluster-wide roles"
    )

    class Meta:
        model = User
        fields = ["id", "username", "email", "role", "tenant"]
        read_only_fields = fields

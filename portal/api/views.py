"""The portal's own API: Actions, audit log, tenants, tokens and the current user."""

from __future__ import annotations

from django.db import transaction
from django.db.models.deletion import ProtectedError
from django.urls import reverse
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from portal import selectors
from portal.actions.canary import CANARY_KIND
from portal.api import serializers as portal_serializers
from portal.api.filters import UTCIsoDateTimeFilter
from portal.api.mixins import AuditedModelMixin
from portal.api.viewsets import SelectorQuerysetMixin
from portal.errors import Conflict
from portal.models import Action, APIToken, AuditEntry, Tenant
from portal.services.accounts import api_token_create, api_token_revoke
from portal.services.actions import cancel_action, enqueue_action


def action_accepted(request, action: Action) -> Response:
    """202 with the Action and where to follow it: the answer to any request that acts."""
    location = request.build_absolute_uri(reverse("api:action-detail", args=[action.pk]))
    body = portal_serializers.ActionSerializer(action, context={"request": request}).data
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": location})


class ActionFilter(filters.FilterSet):
    created_after = UTCIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UTCIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Action
        fields = ["status", "kind", "target", "requested_by"]


@extend_schema_view(
    list=extend_schema(summary="List Actions, newest first"),
    retrieve=extend_schema(summary="One Action with its attempts"),
)
class ActionViewSet(SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    queryset = Action.objects.none()
    serializer_class = portal_serializers.ActionSerializer
    filterset_class = ActionFilter
    search_fields = ["target", "reason", "kind"]
    ordering_fields = ["created_at", "status", "kind"]
    action_capabilities = {"cancel": "cancel_action", "canary": "run_canary"}

    def restrict_queryset(self, user):
        actions = selectors.action_list(user=user)
        if self.action == "retrieve":
            actions = actions.prefetch_related("attempt_log")
        return actions

    def get_serializer_class(self):
        if self.action == "retrieve":
            return portal_serializers.ActionDetailSerializer
        return super().get_serializer_class()

    @extend_schema(
        summary="Cancel a queued Action",
        request=portal_serializers.CancelActionSerializer,
        responses={
            200: portal_serializers.ActionSerializer,
            409: OpenApiResponse(description="The Action is no longer queued"),
        },
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        body = portal_serializers.CancelActionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        cancelled = cancel_action(
            action=self.get_object(),
            cancelled_by=request.user,
            reason=body.validated_data.get("reason", ""),
        )
        return Response(self.get_serializer(cancelled).data)

    @extend_schema(
        summary="Run the canary Action (pipeline self-test; touches nothing outside)",
        request=portal_serializers.CanaryRequestSerializer,
        responses={202: portal_serializers.ActionSerializer},
    )
    @action(detail=False, methods=["post"])
    def canary(self, request):
        body = portal_serializers.CanaryRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        with transaction.atomic():
            created, _ = enqueue_action(
                kind=CANARY_KIND,
                target="worker pipeline",
                reason=body.validated_data["reason"],
                requested_by=request.user,
                parameters={"hold_seconds": body.validated_data["hold_seconds"]},
                idempotency_key=body.validated_data.get("idempotency_key")
                or request.headers.get("Idempotency-Key"),
            )
        return action_accepted(request, created)


class AuditEntryFilter(filters.FilterSet):
    since = UTCIsoDateTimeFilter(field_name="timestamp", lookup_expr="gte")
    until = UTCIsoDateTimeFilter(field_name="timestamp", lookup_expr="lt")
    actor = filters.CharFilter(field_name="actor_name")

    class Meta:
        model = AuditEntry
        fields = ["operation", "object_type", "object_id", "via"]


class AuditEntryViewSet(SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    queryset = AuditEntry.objects.none()
    serializer_class = portal_serializers.AuditEntrySerializer
    filterset_class = AuditEntryFilter
    search_fields = ["object_repr", "note", "actor_name"]
    ordering_fields = ["timestamp"]
    read_capability = "read_audit"

    def restrict_queryset(self, user):
        return selectors.audit_list(user=user)


class TenantViewSet(SelectorQuerysetMixin, AuditedModelMixin, viewsets.ModelViewSet):
    queryset = Tenant.objects.none()
    serializer_class = portal_serializers.TenantSerializer
    filterset_fields = ["slug", "slurm_account", "evpn_vni"]
    search_fields = ["name", "slug", "slurm_account"]
    ordering_fields = ["name", "evpn_vni", "created_at"]
    read_capability = "read_tenants"
    write_capability = "manage_tenants"

    def restrict_queryset(self, user):
        return selectors.tenant_list(user=user)

    def perform_destroy(self, instance):
        try:
            super().perform_destroy(instance)
        except ProtectedError:
            raise Conflict(
                f"Tenant {instance.slug!r} still has users; move or delete them first."
            ) from None


class APITokenViewSet(
    SelectorQuerysetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Your API tokens. The key is returned once, in the response that creates it."""

    queryset = APIToken.objects.none()
    serializer_class = portal_serializers.APITokenSerializer
    read_capability = "manage_own_tokens"
    write_capability = "manage_own_tokens"
    ordering_fields = ["created_at", "last_used_at"]

    def restrict_queryset(self, user):
        return selectors.api_token_list(user=user)

    def get_serializer_class(self):
        if self.action == "create":
            return portal_serializers.APITokenCreateSerializer
        return super().get_serializer_class()

    @extend_schema(responses={201: portal_serializers.APITokenCreatedSerializer})
    def create(self, request, *args, **kwargs):
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        token, key = api_token_create(
            user=request.user,
            name=body.validated_data["name"],
            expires_at=body.validated_data.get("expires_at"),
        )
        data = portal_serializers.APITokenCreatedSerializer({"token": token, "key": key}).data
        return Response(data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        api_token_revoke(token=instance, revoked_by=self.request.user)


class MeView(APIView):
    """Who the API thinks you are: username, role and tenant."""

    read_capability = "use_portal"

    @extend_schema(responses={200: portal_serializers.MeSerializer})
    def get(self, request):
        return Response(portal_serializers.MeSerializer(request.user).data)

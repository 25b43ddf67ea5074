"""Switch actions over the API: each POST answers 202 with the Action that carries it out."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from fabric import services
from fabric.api import action_serializers as bodies
from fabric.impact import blast_radius
from inventory.models import Pod, Switch
from inventory.selectors import switch_list
from portal.api.serializers import ActionSerializer
from portal.api.views import action_accepted
from portal.api.viewsets import SelectorQuerysetMixin
from portal.roles import may

ACCEPTED = {
    202: ActionSerializer,
    400: OpenApiResponse(description="Bad input; the body names the field"),
    403: OpenApiResponse(description="Only admins and operators act on switches"),
}


def _idempotency_key(request, body: dict) -> str | None:
    return body.get("idempotency_key") or request.headers.get("Idempotency-Key")


def _valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class SwitchActionViewSet(SelectorQuerysetMixin, viewsets.GenericViewSet):
    """Actions on one switch (`{id}` is the inventory switch id)."""

    queryset = Switch.objects.none()
    serializer_class = ActionSerializer
    read_capability = "read_fabric"
    write_capability = "act_on_switch"
    filter_backends: list = []
    pagination_class = None

    def restrict_queryset(self, user):
        return switch_list(user=user)

    @extend_schema(summary="Shut down or start up ports of a switch",
                   request=bodies.PortAdminRequestSerializer, responses=ACCEPTED)
    @action(detail=True, methods=["post"], url_path="ports/admin", url_name="port-admin")
    def port_admin(self, request, pk=None):
        switch = self.get_object()
        body = _valid(bodies.PortAdminRequestSerializer, request.data)
        with transaction.atomic():
            queued, _ = services.request_port_admin(
                switch=switch, ports=body["ports"], up=body["state"] == "up",
                reason=body["reason"], requested_by=request.user,
                idempotency_key=_idempotency_key(request, body),
            )
        return action_accepted(request, queued)

    @extend_schema(summary="Leaf maintenance: drain the nodes behind it, wait until Slurm "
                           "reports them empty, then shut its host-facing ports (or only "
                           "report the blast radius)",
                   request=bodies.LeafMaintenanceRequestSerializer,
                   responses={**ACCEPTED, 409: OpenApiResponse(
                       description="The switch is under maintenance already")})
    @action(detail=True, methods=["post"])
    def maintenance(self, request, pk=None):
        switch = self.get_object()
        body = _valid(bodies.LeafMaintenanceRequestSerializer, request.data)
        with transaction.atomic():
            queued, _ = services.request_leaf_maintenance(
                switch=switch, reason=body["reason"], report_only=body["report_only"],
                shut_under_running_jobs=body["shut_under_running_jobs"],
                force_reason=body.get("force_reason", ""),
                requested_by=request.user, idempotency_key=_idempotency_key(request, body),
            )
        return action_accepted(request, queued)

    @extend_schema(summary="End the switch's maintenance: start exactly the ports it shut, then "
                           "resume exactly the nodes it drained, as one Action",
                   request=bodies.SwitchActionRequestSerializer,
                   responses={**ACCEPTED, 409: OpenApiResponse(
                       description="No maintenance to end, or it is still starting (cancel its "
                                   "Action first) or already ending")})
    @action(detail=True, methods=["post"], url_path="maintenance/end",
            url_name="maintenance-end")
    def maintenance_end(self, request, pk=None):
        switch = self.get_object()
        body = _valid(bodies.SwitchActionRequestSerializer, request.data)
        with transaction.atomic():
            queued, _ = services.request_maintenance_end(
                maintenance=services.maintenance_to_end(switch), reason=body["reason"],
                requested_by=request.user, idempotency_key=_idempotency_key(request, body),
            )
        return action_accepted(request, queued)

    @extend_schema(summary="Apply a RoCE QoS profile (default: paper Table 15) to a switch",
                   request=bodies.QosRequestSerializer, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def qos(self, request, pk=None):
        switch = self.get_object()
        body = _valid(bodies.QosRequestSerializer, request.data)
        with transaction.atomic():
            queued, _ = services.request_apply_qos(
                switches=[switch], scope=switch.hostname, profile_name=body["profile"],
                reason=body["reason"], requested_by=request.user,
                idempotency_key=_idempotency_key(request, body),
            )
        return action_accepted(request, queued)

    @extend_schema(summary="Save a switch's running configuration (config save -y)",
                   request=bodies.SwitchActionRequestSerializer, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def save(self, request, pk=None):
        switch = self.get_object()
        body = _valid(bodies.SwitchActionRequestSerializer, request.data)
        with transaction.atomic():
            queued, _ = services.request_save_config(
                switch=switch, reason=body["reason"], requested_by=request.user,
                idempotency_key=_idempotency_key(request, body),
            )
        return action_accepted(request, queued)

    @extend_schema(summary="Collect a switch's ECN-marked queue counters (counterpoll "
                           "wredqueue enable)",
                   request=bodies.SwitchActionRequestSerializer, responses=ACCEPTED)
    @action(detail=True, methods=["post"], url_path="ecn-counters", url_name="ecn-counters")
    def ecn_counters(self, request, pk=None):
        switch = self.get_object()
        body = _valid(bodies.SwitchActionRequestSerializer, request.data)
        with transaction.atomic():
            queued, _ = services.request_enable_ecn_counters(
                switch=switch, reason=body["reason"], requested_by=request.user,
                idempotency_key=_idempotency_key(request, body),
            )
        return action_accepted(request, queued)

    @extend_schema(
        summary="What shutting ports of a switch would cut off: nodes, rails, cables",
        parameters=[OpenApiParameter("ports", str, description="Comma-separated port names; "
                                     "every host-facing port when omitted")],
        responses={200: bodies.BlastRadiusSerializer},
    )
    @action(detail=True, methods=["get"], url_path="blast-radius", url_name="blast-radius")
    def blast_radius(self, request, pk=None):
        switch = self.get_object()
        query = _valid(bodies.BlastRadiusQuerySerializer, request.query_params.dict())
        ports = None
        if query.get("ports"):
            ports = services.inventory_ports(switch, query["ports"].split(","))
        return Response(bodies.BlastRadiusSerializer(
            blast_radius(switch=switch, ports=ports).as_dict()
        ).data)


class PodActionViewSet(SelectorQuerysetMixin, viewsets.GenericViewSet):
    """Actions on every switch of a pod (`{id}` is the inventory pod id)."""

    queryset = Pod.objects.none()
    serializer_class = ActionSerializer
    write_capability = "act_on_switch"
    filter_backends: list = []
    pagination_class = None

    def restrict_queryset(self, user):
        return Pod.objects.all() if may(user, "read_fabric") else Pod.objects.none()

    @extend_schema(summary="Apply a RoCE QoS profile (default: paper Table 15) to every switch "
                           "of a pod, in one Action",
                   request=bodies.QosRequestSerializer, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def qos(self, request, pk=None):
        pod = self.get_object()
        body = _valid(bodies.QosRequestSerializer, request.data)
        with transaction.atomic():
            queued, _ = services.request_apply_qos(
                switches=services.pod_switches(pod), scope=f"pod {pod.name}",
                profile_name=body["profile"], reason=body["reason"],
                requested_by=request.user, idempotency_key=_idempotency_key(request, body),
            )
        return action_accepted(request, queued)

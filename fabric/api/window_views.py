"""Maintenance windows over the API: list, plan, read, cancel, start and end.

Reads follow the fabric (admins, operators, on-call, viewers); every change is an admin's or
an operator's, like the switch actions a window carries out.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from fabric import maintenance_windows as windows
from fabric.models import MaintenanceWindow
from fabric.selectors import maintenance_window_list
from portal.api.rules_outside_the_schema import MAINTENANCE_WINDOW
from portal.api.serializers import StrictSerializer

CHANGED = {
    400: OpenApiResponse(description="Bad input; the body names the field"),
    403: OpenApiResponse(description="Only admins and operators plan and run maintenance"),
    409: OpenApiResponse(description="The window is not in a state that allows this"),
}


class MaintenanceWindowSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", default=None, read_only=True)
    switches = serializers.SlugRelatedField(slug_field="hostname", many=True, read_only=True)
    reservation = serializers.CharField(source="reservation_name", read_only=True)
    maintenances = serializers.SerializerMethodField()

    class Meta:
        model = MaintenanceWindow
        fields = ["id", "status", "reason", "owner", "planned_start", "planned_end", "switches",
                  "nodes", "reserved_nodes", "reservation", "reservation_action",
                  "nodes_action", "nodes_drained_before", "end_action", "created_at",
                  "started_at", "ended_at", "maintenances"]
        read_only_fields = fields

    def get_maintenances(self, window) -> list[dict]:
        return [{"switch": m.switch.hostname, "status": m.status,
                 "start_action": m.start_action_id, "end_action": m.end_action_id,
                 "shut_ports": m.shut_ports, "nodes_to_resume": m.nodes_to_resume}
                for m in window.maintenances.select_related("switch")]


class MaintenanceWindowRequestSerializer(StrictSerializer):
    planned_start = serializers.DateTimeField(help_text="When it begins (ISO 8601, with zone)")
    planned_end = serializers.DateTimeField(help_text="When it ends; after planned_start")
    switches = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, default=list,
        max_length=64, help_text="Leaf or storage switch hostnames: drained and shut")
    nodes = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=4000,
        help_text="A hostlist of further nodes, e.g. gpu[001-004]: reserved, drained at "
                  "the start (waiting for their jobs) and resumed at the end")
    reason = serializers.CharField(max_length=1000, help_text="Why; shown on the calendar")


class MaintenanceWindowViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                               viewsets.GenericViewSet):
    """Maintenance planned ahead of time; a Slurm MAINT reservation holds its nodes."""

    queryset = MaintenanceWindow.objects.none()
    serializer_class = MaintenanceWindowSerializer
    read_capability = "read_fabric"
    write_capability = "act_on_switch"
    filter_backends: list = []

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        return maintenance_window_list()

    def _answer(self, window, code=status.HTTP_200_OK) -> Response:
        window = self.get_queryset().get(pk=window.pk)
        return Response(self.get_serializer(window).data, status=code)

    @extend_schema(summary="Plan a maintenance window (reserves its nodes in Slurm, flags=MAINT)",
                   description=MAINTENANCE_WINDOW,
                   request=MaintenanceWindowRequestSerializer,
                   responses={201: MaintenanceWindowSerializer, **CHANGED})
    def create(self, request):
        body = MaintenanceWindowRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        window = windows.create_maintenance_window(
            planned_start=data["planned_start"], planned_end=data["planned_end"],
            switch_names=data["switches"], hostlist=data["nodes"], reason=data["reason"],
            owner=request.user,
        )
        return self._answer(window, status.HTTP_201_CREATED)

    @extend_schema(summary="Cancel a scheduled window (its reservation is deleted)",
                   request=None, responses={200: MaintenanceWindowSerializer, **CHANGED})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        window = windows.cancel_maintenance_window(self.get_object(), requested_by=request.user)
        return self._answer(window)

    @extend_schema(summary="Start a scheduled window now: drain, wait for jobs, shut",
                   request=None, responses={200: MaintenanceWindowSerializer, **CHANGED})
    @action(detail=True, methods=["post"])
    def start(self, request, pk=None):
        window = windows.start_maintenance_window(self.get_object(), requested_by=request.user)
        return self._answer(window)

    @extend_schema(summary="End a running window as one Action (end_action): start exactly the "
                           "ports it shut, resume exactly the nodes it drained",
                   request=None, responses={200: MaintenanceWindowSerializer, **CHANGED})
    @action(detail=True, methods=["post"])
    def end(self, request, pk=None):
        window = self.get_object()
        windows.end_maintenance_window(window, requested_by=request.user)
        return self._answer(window)

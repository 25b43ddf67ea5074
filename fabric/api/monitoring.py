"""Fabric monitoring API (read-only, cluster-wide roles): switches with their latest poll,
ports with counters and rates, a port's history, per-switch and per-rail aggregates, LLDP
findings, and rail health for a hostlist of nodes."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import generics, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from fabric import selectors
from fabric.models import LldpFinding, PortCounterHistory, PortCounterLatest, SwitchPollState
from fabric.rail_health import detect_rail_imbalance, rail_throughput_for_nodes
from inventory.models import Switch, SwitchPort
from inventory.selectors import nodes_from_hostlist
from portal.api.viewsets import SelectorQuerysetMixin
from portal.errors import InvalidInput

# -- serializers ---------------------------------------------------------------------------------


class PollStateSerializer(serializers.ModelSerializer):
    reachable = serializers.BooleanField(read_only=True)

    class Meta:
        model = SwitchPollState
        exclude = ["id", "switch"]


class MonitoredSwitchSerializer(serializers.ModelSerializer):
    pod = serializers.SlugRelatedField(slug_field="name", read_only=True)
    # Plain strings: the inventory API owns the enums of these choice sets in the schema.
    role = serializers.CharField(read_only=True)
    status = serializers.CharField(read_only=True)
    poll = serializers.SerializerMethodField()

    class Meta:
        model = Switch
        fields = ["hostname", "role", "pod", "rail", "status", "management_address", "model",
                  "nos_version", "poll"]

    @extend_schema_field(PollStateSerializer(allow_null=True))
    def get_poll(self, switch: Switch) -> dict | None:
        state = getattr(switch, "poll_state", None)
        return PollStateSerializer(state).data if state else None


class PortCountersSerializer(serializers.ModelSerializer):
    class Meta:
        model = PortCounterLatest
        exclude = ["id", "port"]


class LldpSeenSerializer(serializers.Serializer):
    remote_system_name = serializers.CharField()
    remote_port_id = serializers.CharField()
    remote_port_description = serializers.CharField()
    seen_at = serializers.DateTimeField()


class MonitoredPortSerializer(serializers.ModelSerializer):
    switch = serializers.CharField(source="switch.hostname", read_only=True)
    admin_status = serializers.CharField(read_only=True)
    oper_status = serializers.CharField(read_only=True)
    cabled_to = serializers.SerializerMethodField()
    counters = serializers.SerializerMethodField()
    lldp = serializers.SerializerMethodField()

    class Meta:
        model = SwitchPort
        fields = ["id", "switch", "name", "alias", "speed_gbps", "admin_status", "oper_status",
                  "cabled_to", "counters", "lldp"]

    def get_cabled_to(self, port: SwitchPort) -> str:
        return cabled_to(port)

    @extend_schema_field(PortCountersSerializer(allow_null=True))
    def get_counters(self, port: SwitchPort) -> dict | None:
        row = getattr(port, "counters", None)
        return PortCountersSerializer(row).data if row else None

    @extend_schema_field(LldpSeenSerializer(allow_null=True))
    def get_lldp(self, port: SwitchPort) -> dict | None:
        seen = getattr(port, "lldp", None)
        return LldpSeenSerializer(seen).data if seen else None


def cabled_to(port: SwitchPort) -> str:
    """The far end of a port's active cable, from the prefetched cables ("" when none)."""
    for cable in getattr(port, "active_cables_as_a", []):
        nic, far = cable.b_nic, cable.b_port
        break
    else:
        for cable in getattr(port, "active_cables_as_b", []):
            nic, far = cable.a_nic, cable.a_port
            break
        else:
            return ""
    if nic is not None:
        return f"{nic.node.hostname} {nic.device}"
    return f"{far.switch.hostname} {far.name}"


class HistorySerializer(serializers.ModelSerializer):
    class Meta:
        model = PortCounterHistory
        fields = ["bucket_start", "in_bytes_per_second", "out_bytes_per_second",
                  "pfc_rx_per_second", "pfc_tx_per_second", "ecn_marked_per_second",
                  "utilization", "oper_up"]


class ThroughputSerializer(serializers.Serializer):
    ports = serializers.IntegerField()
    ports_up = serializers.IntegerField()
    in_bytes_per_second = serializers.FloatField()
    out_bytes_per_second = serializers.FloatField()
    pfc_rx_per_second = serializers.ListField(child=serializers.FloatField())
    pfc_tx_per_second = serializers.ListField(child=serializers.FloatField())
    ecn_marked_per_second = serializers.FloatField()
    ecn_ports_not_collected = serializers.IntegerField(
        help_text="Ports with rates whose switch does not collect ECN-marked counters; "
                  "ecn_marked_per_second leaves them out")


class SwitchAggregateSerializer(serializers.Serializer):
    hostname = serializers.CharField()
    role = serializers.CharField()
    pod = serializers.CharField(allow_null=True)
    rail = serializers.IntegerField(allow_null=True)
    host_facing = ThroughputSerializer()
    uplinks = ThroughputSerializer()
    other = ThroughputSerializer()


class RailAggregateSerializer(serializers.Serializer):
    rail = serializers.IntegerField()
    leafs = serializers.ListField(child=serializers.CharField())
    total = ThroughputSerializer()
    host_facing = ThroughputSerializer()


class LldpFindingSerializer(serializers.ModelSerializer):
    class Meta:
        model = LldpFinding
        fields = ["id", "kind", "key", "summary", "switches", "ports", "nodes", "details",
                  "first_seen_at", "last_seen_at", "resolved_at"]


class RailThroughputSerializer(serializers.Serializer):
    rail = serializers.IntegerField()
    leafs = serializers.ListField(child=serializers.CharField())
    ports = serializers.IntegerField()
    in_bytes_per_second = serializers.FloatField()
    out_bytes_per_second = serializers.FloatField()
    pfc_pause_per_second = serializers.FloatField()
    ecn_marked_per_second = serializers.FloatField()
    ecn_ports_not_collected = serializers.IntegerField(
        help_text="Ports with rates whose switch does not collect ECN-marked counters; "
                  "ecn_marked_per_second leaves them out")
    per_port_bytes_per_second = serializers.FloatField()


class RailImbalanceSerializer(serializers.Serializer):
    nodes = serializers.CharField()
    imbalanced = serializers.BooleanField()
    summary = serializers.CharField()
    imbalanced_rails = serializers.ListField(child=serializers.IntegerField())
    leafs = serializers.ListField(child=serializers.CharField())
    samples_required = serializers.IntegerField()
    samples_used = serializers.IntegerField()
    ratio = serializers.FloatField()
    series = serializers.ListField(child=serializers.DictField())


class RailHealthSerializer(serializers.Serializer):
    nodes = serializers.CharField()
    rails = RailThroughputSerializer(many=True)
    imbalance = RailImbalanceSerializer()


# -- views ---------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="Switches with their latest poll state and load"),
    retrieve=extend_schema(summary="One switch with its latest poll state and load"),
)
class MonitoredSwitchViewSet(SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    read_capability = "read_fabric"
    queryset = Switch.objects.none()
    serializer_class = MonitoredSwitchSerializer
    lookup_field = "hostname"
    lookup_value_regex = r"[A-Za-z0-9._-]+"
    filterset_fields = ["role", "rail", "status"]
    search_fields = ["hostname"]
    ordering_fields = ["hostname", "role"]

    def restrict_queryset(self, user):
        return selectors.monitored_switches(user=user)

    @extend_schema(summary="The switch's interfaces with latest counters and rates",
                   responses=MonitoredPortSerializer(many=True))
    @action(detail=True, methods=["get"])
    def ports(self, request, hostname=None):
        switch = self.get_object()
        ports = selectors.monitored_ports(user=request.user, switch=switch)
        page = self.paginate_queryset(ports)
        serializer = MonitoredPortSerializer(page, many=True)
        return self.get_paginated_response(serializer.data)


HISTORY_HOURS = OpenApiParameter(
    "hours",
    {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 24},
    description="How far back: more than 0, at most 24 hours (default 24)",
)


@extend_schema_view(
    list=extend_schema(summary="Interfaces with latest counters and rates; ?switch=<hostname>"),
    retrieve=extend_schema(summary="One interface with latest counters and rates"),
)
class MonitoredPortViewSet(SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    read_capability = "read_fabric"
    queryset = SwitchPort.objects.none()
    serializer_class = MonitoredPortSerializer
    filter_backends: list = []

    @extend_schema(parameters=[OpenApiParameter("switch", OpenApiTypes.STR)])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def restrict_queryset(self, user):
        switch = self.request.query_params.get("switch") if self.action == "list" else None
        return selectors.monitored_ports(user=user, filters={"switch": switch} if switch else None)

    @extend_schema(summary="A port's history (1-minute rates, up to 24 hours)",
                   parameters=[HISTORY_HOURS], responses=HistorySerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)  # all of it, in one list
    def history(self, request, pk=None):
        port = self.get_object()
        hours = request.query_params.get("hours", "24")
        try:
            hours = float(hours)
            if not 0 < hours <= 24:
                raise ValueError
        except ValueError:
            raise InvalidInput({"hours": ["a number of hours between 0 and 24"]}) from None
        since = timezone.now() - timedelta(hours=hours)
        rows = selectors.port_history(port=port, since=since)
        return Response(HistorySerializer(rows, many=True).data)


class SwitchAggregateView(generics.ListAPIView):
    """Paged like every list: the whole of it is 1.7 MB for the 2,000 switches of a
    100,000-GPU fleet."""

    read_capability = "read_fabric"
    serializer_class = SwitchAggregateSerializer

    @extend_schema(summary="Per-switch throughput, PFC pause and ECN-marked rates, split into "
                           "host-facing and uplink ports",
                   parameters=[OpenApiParameter("role", OpenApiTypes.STR,
                                                enum=list(Switch.Role.values))])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        role = self.request.query_params.get("role") or None
        if role and role not in Switch.Role.values:
            raise InvalidInput({"role": [f"one of {', '.join(Switch.Role.values)}"]})
        return selectors.aggregate_switches(user=self.request.user, role=role)

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        aggregates = selectors.switch_aggregates(page)
        return self.get_paginated_response(
            self.get_serializer([a.as_dict() for a in aggregates], many=True).data)


class RailAggregateView(APIView):
    read_capability = "read_fabric"

    @extend_schema(summary="Per-rail throughput, PFC pause and ECN-marked rates (all leaf ports "
                           "of rail r, every pod)",
                   responses=RailAggregateSerializer(many=True))
    def get(self, request):
        aggregates = selectors.rail_aggregates(user=request.user)
        return Response(RailAggregateSerializer([a.as_dict() for a in aggregates],
                                                many=True).data)


@extend_schema_view(
    list=extend_schema(summary="LLDP findings: missing, unexpected, swapped, mismatched links",
                       parameters=[
                           OpenApiParameter("kind", OpenApiTypes.STR,
                                            enum=LldpFinding.Kind.values),
                           OpenApiParameter("state", OpenApiTypes.STR, enum=["open", "all"]),
                       ]),
)
class LldpFindingViewSet(SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    read_capability = "read_fabric"
    queryset = LldpFinding.objects.none()
    serializer_class = LldpFindingSerializer
    filter_backends: list = []

    def restrict_queryset(self, user):
        params = self.request.query_params
        state = params.get("state", "open")
        if state not in ("open", "all"):
            raise InvalidInput({"state": ["'open' or 'all'"]})
        open_only = state == "open" and self.action == "list"
        return selectors.lldp_findings(user=user, open_only=open_only,
                                       kind=params.get("kind") or None)


class RailHealthView(APIView):
    read_capability = "read_fabric"

    @extend_schema(
        summary="Per-rail throughput of a set of nodes and the rail-imbalance verdict",
        parameters=[OpenApiParameter("nodes", OpenApiTypes.STR, required=True,
                                     description="Slurm hostlist, e.g. gpu[001-016]")],
        responses=RailHealthSerializer,
    )
    def get(self, request):
        expression = request.query_params.get("nodes", "").strip()
        if not expression:
            raise InvalidInput({"nodes": ["a hostlist of nodes, e.g. gpu[001-016]"]})
        try:
            nodes = nodes_from_hostlist(user=request.user, expression=expression)
        except InvalidInput as error:
            raise InvalidInput({"nodes": error.detail.get("hostlist", [str(error)])}) from None
        except ValueError as error:
            raise InvalidInput({"nodes": [str(error)]}) from None
        verdict = detect_rail_imbalance(nodes)
        body = {
            "nodes": verdict.nodes,
            "rails": [rail.as_dict() for rail in rail_throughput_for_nodes(nodes)],
            "imbalance": verdict.as_dict(),
        }
        return Response(RailHealthSerializer(body).data)

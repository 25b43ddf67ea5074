"""GET /api/impact/?target=<kind>:<name>: what taking something out of service hits."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.impact import EXAMPLES, KINDS, impact_of


class ImpactJobSerializer(serializers.Serializer):
    job_id = serializers.CharField()
    name = serializers.CharField()
    user = serializers.CharField()
    account = serializers.CharField()
    tenant = serializers.CharField(allow_null=True, help_text="the tenant's slug")
    nodes = serializers.CharField(help_text="the job's nodes, a hostlist")
    node_count = serializers.IntegerField()
    gpus = serializers.IntegerField()
    nodes_hit = serializers.CharField(help_text="the job's nodes the target takes away or degrades")
    how = serializers.CharField()


class ImpactAllocationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    purpose = serializers.CharField()
    nodes_hit = serializers.CharField()


class ImpactTenantSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    jobs = serializers.ListField(child=serializers.CharField())
    users = serializers.ListField(child=serializers.CharField())
    allocations = ImpactAllocationSerializer(many=True)


class ImpactNodeSerializer(serializers.Serializer):
    hostname = serializers.CharField()
    pod = serializers.CharField(allow_null=True)
    slurm_state = serializers.CharField()
    effect = serializers.ChoiceField(choices=["out", "degraded"])
    gpus = serializers.ListField(child=serializers.IntegerField())
    rails = serializers.ListField(child=serializers.IntegerField())
    links = serializers.ListField(child=serializers.CharField())


class ImpactBisectionSerializer(serializers.Serializer):
    pod = serializers.CharField()
    lost_gbps = serializers.IntegerField()
    total_gbps = serializers.IntegerField()
    lost_fraction = serializers.FloatField()


class ImpactSummarySerializer(serializers.Serializer):
    target = serializers.CharField()
    label = serializers.CharField()
    jobs_visible = serializers.BooleanField(help_text="false for viewers: jobs are tenant data")
    running_jobs = serializers.IntegerField(allow_null=True)
    users = serializers.ListField(child=serializers.CharField(), allow_null=True)
    tenants = serializers.ListField(child=serializers.CharField(), allow_null=True)
    gpus_in_jobs = serializers.IntegerField(allow_null=True)
    nodes_out = serializers.CharField()
    nodes_out_count = serializers.IntegerField()
    nodes_degraded = serializers.CharField()
    nodes_degraded_count = serializers.IntegerField()
    rails = serializers.ListField(child=serializers.IntegerField())
    other_links = serializers.ListField(child=serializers.CharField(),
                                        help_text="NIC roles other than rail that lose a link")
    bisection = ImpactBisectionSerializer(many=True)
    text = serializers.CharField()


class ImpactSerializer(serializers.Serializer):
    target = serializers.CharField()
    kind = serializers.ChoiceField(choices=list(KINDS))
    label = serializers.CharField()
    jobs = ImpactJobSerializer(many=True)
    tenants = ImpactTenantSerializer(many=True)
    nodes = ImpactNodeSerializer(many=True)
    summary = ImpactSummarySerializer()


class ImpactView(APIView):
    """Every role reads; the answer is scoped to what the role may see (console/README.md)."""

    read_capability = "use_portal"

    @extend_schema(
        summary="What taking a node, GPU, NIC, port, switch, cable or hostlist out hits",
        parameters=[
            OpenApiParameter(
                "target", str, required=True,
                description=f"<kind>:<name>, kinds {', '.join(KINDS)}; e.g. {EXAMPLES}",
            )
        ],
        responses={
            200: ImpactSerializer,
            400: OpenApiResponse(description="target malformed, unknown or not visible to you"),
        },
    )
    def get(self, request):
        impact = impact_of(user=request.user, target=request.query_params.get("target", ""))
        return Response(ImpactSerializer(impact.as_dict()).data)

"""GET /api/jobs/analytics/: the workload analytics of the jobs the caller may see."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs import selectors
from jobs.analytics import parse_period, workload_analytics


class AnalyticsPeriodSerializer(serializers.Serializer):
    since = serializers.DateField()
    until = serializers.DateField()


class StateShareSerializer(serializers.Serializer):
    state = serializers.CharField()
    count = serializers.IntegerField()
    count_share = serializers.FloatField(help_text="Percent of the jobs")
    gpu_hours = serializers.FloatField(help_text="GPU-occupied time: elapsed x allocated GPUs")
    gpu_time_share = serializers.FloatField(help_text="Percent of the GPU-occupied time")


class StateSharesSerializer(serializers.Serializer):
    total_count = serializers.IntegerField()
    total_gpu_hours = serializers.FloatField()
    rows = StateShareSerializer(many=True)


class RuntimePercentilesSerializer(serializers.Serializer):
    p50 = serializers.IntegerField(allow_null=True)
    p90 = serializers.IntegerField(allow_null=True)
    p99 = serializers.IntegerField(allow_null=True)


class CdfPointSerializer(serializers.Serializer):
    fraction = serializers.FloatField()
    runtime_seconds = serializers.IntegerField()


class SizeBucketSerializer(StateShareSerializer):
    state = None
    bucket = serializers.CharField(help_text="Node count: 1, 2, 3-4, ..., 33-64, 65+")
    runtime_seconds = RuntimePercentilesSerializer()
    over_one_week = serializers.IntegerField()
    over_one_week_share = serializers.FloatField(help_text="Percent of the bucket's jobs")
    cdf = CdfPointSerializer(many=True)


class SizeBucketsSerializer(serializers.Serializer):
    total_count = serializers.IntegerField()
    total_gpu_hours = serializers.FloatField()
    rows = SizeBucketSerializer(many=True)


class DailySeriesSerializer(serializers.Serializer):
    bucket = serializers.CharField()
    counts = serializers.ListField(child=serializers.IntegerField())


class DailySubmissionsSerializer(serializers.Serializer):
    days = serializers.ListField(child=serializers.DateField())
    series = DailySeriesSerializer(many=True)


class WorkloadAnalyticsSerializer(serializers.Serializer):
    period = AnalyticsPeriodSerializer()
    tenant = serializers.CharField(allow_null=True)
    states = StateSharesSerializer()
    sizes = SizeBucketsSerializer()
    daily_submissions = DailySubmissionsSerializer()


class JobAnalyticsView(APIView):
    """Job state and size shares, runtime percentiles and daily submissions (paper
    Observations 1, 2, 4, 5) over finished jobs in the period; tenant admins see their own."""

    read_roles = selectors.JOB_READERS

    @extend_schema(
        summary="Workload analytics of finished jobs in a period",
        parameters=[
            OpenApiParameter("since", OpenApiTypes.DATE, description="First day (default: 90 "
                             "days before until)"),
            OpenApiParameter("until", OpenApiTypes.DATE, description="Last day, inclusive "
                             "(default: today)"),
            OpenApiParameter("tenant", str, description="Tenant slug (cluster-wide roles only; "
                             "ignored for tenant admins)"),
        ],
        responses={
            200: WorkloadAnalyticsSerializer,
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Bad date or tenant; named"),
        },
    )
    def get(self, request):
        params = request.query_params
        period = parse_period(params.get("since"), params.get("until"))
        stats = workload_analytics(
            user=request.user, period=period, tenant_slug=params.get("tenant") or None
        )
        return Response(WorkloadAnalyticsSerializer(stats).data)

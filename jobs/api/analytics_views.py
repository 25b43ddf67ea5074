"""GET /api/jobs/analytics/: the workload analytics of the jobs the caller may see."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.analytics import JOB_KINDS, parse_kind, parse_period, workload_analytics


class AnalyticsPeriodSerializer(serializers.Serializer):
    since = serializers.DateField()
    until = serializers.DateField()


class StateShareSerializer(serializers.Serializer):
    state = serializers.CharField()
    running = serializers.BooleanField(
        help_text="Still running: its GPU time is counted up to gpu_time_counted_until"
    )
    count = serializers.IntegerField()
    count_share = serializers.FloatField(help_text="Percent of the jobs")
    gpu_hours = serializers.FloatField(help_text="GPU-occupied time: elapsed x allocated GPUs")
    gpu_time_share = serializers.FloatField(help_text="Percent of the GPU-occupied time")


class RunningFromTracesSerializer(serializers.Serializer):
    count = serializers.IntegerField(
        help_text="Of the running jobs, those imported from a trace taken before "
        "gpu_time_counted_until: counted up to when it was taken, until squeue lists them again"
    )
    taken_at_earliest = serializers.DateTimeField(allow_null=True)
    taken_at_latest = serializers.DateTimeField(allow_null=True)


class StateSharesSerializer(serializers.Serializer):
    total_count = serializers.IntegerField()
    total_gpu_hours = serializers.FloatField()
    running_count = serializers.IntegerField(help_text="Jobs still running, included above")
    running_gpu_hours = serializers.FloatField(help_text="Their GPU time so far, included above")
    running_from_traces = RunningFromTracesSerializer()
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
    running = None
    bucket = serializers.CharField(help_text="Node count: 1, 2, 3-4, ..., 33-64, 65+")
    running_count = serializers.IntegerField(help_text="Of `count`, jobs still running")
    running_gpu_hours = serializers.FloatField(help_text="Of `gpu_hours`, running jobs' so far")
    finished_count = serializers.IntegerField(help_text="Finished jobs: the runtime statistics'")
    runtime_seconds = RuntimePercentilesSerializer(
        help_text="Of the finished jobs, by percentile_disc (see percentile_method)"
    )
    over_one_week = serializers.IntegerField()
    over_one_week_share = serializers.FloatField(help_text="Percent of the bucket's finished jobs")
    cdf = CdfPointSerializer(many=True)


class SizeBucketsSerializer(serializers.Serializer):
    total_count = serializers.IntegerField()
    total_gpu_hours = serializers.FloatField()
    rows = SizeBucketSerializer(many=True)


class GpuCountShareSerializer(StateShareSerializer):
    state = None
    running = None
    gpus = serializers.CharField(help_text="Allocated GPUs: 1, 2, 4, 8, more than 8, other, none")
    running_count = serializers.IntegerField(help_text="Of `count`, jobs still running")


class GpuCountSharesSerializer(serializers.Serializer):
    total_count = serializers.IntegerField()
    total_gpu_hours = serializers.FloatField()
    rows = GpuCountShareSerializer(many=True)


class DailySeriesSerializer(serializers.Serializer):
    bucket = serializers.CharField(help_text="Node-count bucket; empty: jobs that never started")
    label = serializers.CharField()
    counts = serializers.ListField(child=serializers.IntegerField())


class DailySubmissionsSerializer(serializers.Serializer):
    days = serializers.ListField(child=serializers.DateField())
    series = DailySeriesSerializer(many=True)


class WorkloadAnalyticsSerializer(serializers.Serializer):
    period = AnalyticsPeriodSerializer()
    tenant = serializers.CharField(allow_null=True)
    kind = serializers.ChoiceField(choices=JOB_KINDS)
    gpu_time_counted_until = serializers.DateTimeField(
        help_text="Running jobs' GPU time is counted up to this moment (now, or the period's "
        "end), or up to when their trace was taken (states.running_from_traces)"
    )
    percentile_method = serializers.CharField()
    states = StateSharesSerializer()
    sizes = SizeBucketsSerializer()
    gpu_counts = GpuCountSharesSerializer()
    daily_submissions = DailySubmissionsSerializer(
        help_text="Jobs by the day they were submitted, cancelled-before-start ones included"
    )


class JobAnalyticsView(APIView):
    """Job state, size and GPU-count shares, runtime percentiles and daily submissions (paper
    Observations 1, 2, 4, 5) over the jobs that ended in the period or are running, GPU jobs
    by default (jobs.analytics states each definition); tenant admins see their own."""

    read_capability = "read_jobs"

    @extend_schema(
        summary="Workload analytics of the jobs in a period",
        parameters=[
            OpenApiParameter("since", OpenApiTypes.DATE, description="First day (default: 90 "
                             "days before until)"),
            OpenApiParameter("until", OpenApiTypes.DATE, description="Last day, inclusive "
                             "(default: today)"),
            OpenApiParameter("tenant", str, description="Tenant slug (cluster-wide roles only; "
                             "ignored for tenant admins)"),
            OpenApiParameter("kind", str, enum=list(JOB_KINDS), description="gpu (default): "
                             "jobs with GPUs; cpu: CPU-only jobs; all: both"),
        ],
        responses={
            200: WorkloadAnalyticsSerializer,
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Bad date, kind or tenant; "
                                 "named"),
        },
    )
    def get(self, request):
        params = request.query_params
        period = parse_period(params.get("since"), params.get("until"))
        stats = workload_analytics(
            user=request.user, period=period, tenant_slug=params.get("tenant") or None,
            kind=parse_kind(params.get("kind")),
        )
        return Response(WorkloadAnalyticsSerializer(stats).data)

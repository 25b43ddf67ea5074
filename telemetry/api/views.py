"""GET-only API of GPU telemetry (/api/telemetry/): Observation 3, one job's utilisation, idle
GPUs in running jobs. Job readers only; tenant admins see their own tenant's jobs. Without
PROMETHEUS_URL every answer is 200 with `configured: false` and null figures, never zeros."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.analytics import parse_period
from telemetry import selectors


class TelemetryStatusSerializer(serializers.Serializer):
    configured = serializers.BooleanField(help_text="A PROMETHEUS_URL is set")
    available = serializers.BooleanField(help_text="Prometheus answered")
    message = serializers.CharField(help_text="Why figures are missing; empty when none are")


class UtilisationCdfPointSerializer(serializers.Serializer):
    fraction = serializers.FloatField()
    value = serializers.FloatField(help_text="Percent")


class Observation3BucketSerializer(serializers.Serializer):
    bucket = serializers.CharField(help_text="Node count: 1, 2, 3-4, ..., 33-64, 65+")
    jobs = serializers.IntegerField()
    jobs_with_telemetry = serializers.IntegerField()
    gpu_hours_with_telemetry = serializers.FloatField()
    median_mean_percent = serializers.FloatField(
        allow_null=True, help_text="Median of the per-job mean GPU utilisation"
    )
    low_gpu_time_percent = serializers.FloatField(
        allow_null=True, help_text="Share of the bucket's GPU time below 20% utilisation"
    )
    mean_percent_cdf = UtilisationCdfPointSerializer(many=True)
    low_share_cdf = UtilisationCdfPointSerializer(many=True)


class TelemetryPeriodSerializer(serializers.Serializer):
    since = serializers.DateField()
    until = serializers.DateField()


class Observation3Serializer(TelemetryStatusSerializer):
    period = TelemetryPeriodSerializer()
    tenant = serializers.CharField(allow_null=True)
    threshold_percent = serializers.FloatField()
    jobs = serializers.IntegerField(allow_null=True, help_text="Finished GPU jobs in the period")
    jobs_with_telemetry = serializers.IntegerField(allow_null=True)
    jobs_not_summarised = serializers.IntegerField(
        allow_null=True,
        help_text="Finished GPU jobs whose utilisation the worker has not asked Prometheus for "
                  "yet: counted in `jobs`, not in `jobs_with_telemetry`",
    )
    rows = Observation3BucketSerializer(many=True)


class UtilisationPointSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    mean_percent = serializers.FloatField()
    gpus = serializers.IntegerField(help_text="GPUs of the job that reported")


class JobUtilisationSerializer(TelemetryStatusSerializer):
    job_id = serializers.CharField()
    start = serializers.DateTimeField(allow_null=True, help_text="The range read: job start")
    end = serializers.DateTimeField(allow_null=True, help_text="Job end, or now")
    step_seconds = serializers.FloatField(allow_null=True)
    mean_percent = serializers.FloatField(allow_null=True)
    low_share_percent = serializers.FloatField(allow_null=True)
    gpus_reporting = serializers.IntegerField(allow_null=True)
    points = UtilisationPointSerializer(many=True)


class IdleGpuSerializer(serializers.Serializer):
    hostname = serializers.CharField()
    gpu_index = serializers.IntegerField()
    uuid = serializers.CharField()
    mean_percent = serializers.FloatField()


class JobWithIdleGpusSerializer(serializers.Serializer):
    job_id = serializers.CharField()
    user = serializers.CharField()
    account = serializers.CharField()
    tenant = serializers.CharField(allow_null=True)
    node_count = serializers.IntegerField()
    gpus = serializers.IntegerField()
    start_time = serializers.DateTimeField(allow_null=True)
    reporting_gpus = serializers.IntegerField()
    idle_gpus = IdleGpuSerializer(many=True)


class IdleGpusSerializer(TelemetryStatusSerializer):
    window_seconds = serializers.FloatField()
    threshold_percent = serializers.FloatField()
    idle_gpu_count = serializers.IntegerField(allow_null=True)
    reporting_gpu_count = serializers.IntegerField(allow_null=True)
    jobs = JobWithIdleGpusSerializer(many=True)


class Observation3View(APIView):
    """Per-job GPU utilisation by job size (paper Observation 3) over finished GPU jobs."""

    read_capability = "read_jobs"

    @extend_schema(
        summary="Observation 3: per-job GPU utilisation and time below 20% by job size",
        parameters=[
            OpenApiParameter("since", OpenApiTypes.DATE, description="First day"),
            OpenApiParameter("until", OpenApiTypes.DATE, description="Last day, inclusive"),
            OpenApiParameter("tenant", str, description="Tenant slug (cluster-wide roles only)"),
        ],
        responses={
            200: Observation3Serializer,
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Bad date or tenant; named"),
        },
    )
    def get(self, request):
        params = request.query_params
        period = parse_period(params.get("since"), params.get("until"))
        answer = selectors.observation3(
            user=request.user, period=period, tenant_slug=params.get("tenant") or None
        )
        return Response(Observation3Serializer(answer).data)


class JobUtilisationView(APIView):
    """One job's mean GPU utilisation over its runtime."""

    read_capability = "read_jobs"

    @extend_schema(
        summary="A job's GPU utilisation over time",
        responses={200: JobUtilisationSerializer,
                   404: OpenApiResponse(OpenApiTypes.OBJECT, description="No such job for you")},
    )
    def get(self, request, job_id: str):
        answer = selectors.job_utilisation(user=request.user, job_id=job_id)
        return Response(JobUtilisationSerializer(answer).data)


class IdleGpusView(APIView):
    """GPUs held by running jobs with a recent mean utilisation below 20%."""

    read_capability = "read_jobs"

    @extend_schema(summary="Idle GPUs inside running jobs", responses={200: IdleGpusSerializer})
    def get(self, request):
        return Response(IdleGpusSerializer(selectors.idle_gpus(user=request.user)).data)

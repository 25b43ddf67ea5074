"""REST API of the jobs app: jobs (live and finished) and drain/resume of nodes."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import viewsets
from rest_framework.views import APIView

from jobs import selectors
from jobs.api import serializers as job_serializers
from jobs.buckets import SIZE_BUCKET_LABELS
from jobs.models import Job
from jobs.services import (
    request_cancel_reboot,
    request_drain,
    request_reboot,
    request_resume,
)
from portal.api.serializers import ActionSerializer
from portal.api.views import action_accepted
from portal.api.viewsets import SelectorQuerysetMixin

JOB_LIST_PARAMETERS = [
    OpenApiParameter("state", str, description="RUNNING, PENDING, COMPLETED, FAILED, ..."),
    OpenApiParameter("user", str),
    OpenApiParameter("account", str),
    OpenApiParameter("partition", str),
    OpenApiParameter("size", str, enum=list(SIZE_BUCKET_LABELS), description="Nodes bucket"),
    OpenApiParameter("live", bool, description="Only jobs in squeue now (or only not)"),
    OpenApiParameter("node", str, description="Jobs that ran on this hostname, or on any node "
                                              "of a hostlist (gpu[001-004])"),
    OpenApiParameter("switch", int, description="Running jobs behind this switch (id)"),
    OpenApiParameter("port", int, description="Running jobs behind this switch port (id)"),
]


@extend_schema_view(
    list=extend_schema(summary="List jobs, newest first", parameters=JOB_LIST_PARAMETERS),
    retrieve=extend_schema(summary="One job with the nodes, GPUs, rail NICs and leaf ports"),
)
class JobViewSet(SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    queryset = Job.objects.none()
    serializer_class = job_serializers.JobSerializer
    lookup_field = "job_id"
    lookup_value_regex = r"[0-9A-Za-z_.+-]+"
    search_fields = ["job_id", "name", "user", "account"]
    ordering_fields = ["submit_time", "start_time", "end_time", "node_count", "gpus"]
    read_capability = "read_jobs"

    def restrict_queryset(self, user):
        params = self.request.query_params
        filters = {name: params.get(name) for name in selectors.JOB_FILTERS if name in params}
        jobs = selectors.job_list(user=user, filters=filters)
        if params.get("switch"):
            switch = selectors.switch_for_filter(user=user, switch_id=params["switch"])
            jobs = jobs.filter(pk__in=selectors.jobs_behind_switch(switch).values("pk"))
        if params.get("port"):
            port = selectors.port_for_filter(user=user, port_id=params["port"])
            jobs = jobs.filter(pk__in=selectors.jobs_behind_port(port).values("pk"))
        return jobs

    def get_serializer_class(self):
        if self.action == "retrieve":
            return job_serializers.JobDetailSerializer
        return super().get_serializer_class()


NODE_ACTION_RESPONSES = {
    202: ActionSerializer,
    400: OpenApiResponse(OpenApiTypes.OBJECT, description="Bad input; the field is named"),
    403: OpenApiResponse(OpenApiTypes.OBJECT, description="Your role may not act on nodes"),
}


def _requested_nodes(request, data):
    """The nodes a drain, resume or reboot request names (hostlist or ids), as the user may."""
    return selectors.nodes_for_request(
        user=request.user, hostlist=data.get("hostlist"), node_ids=data.get("node_ids")
    )


def _idempotency_key(request, data) -> str | None:
    """The body's idempotency_key, else the Idempotency-Key header."""
    return data.get("idempotency_key") or request.headers.get("Idempotency-Key")


class NodeDrainView(APIView):
    """Drain nodes in Slurm: one Action for the whole list, carried out by a worker."""

    write_capability = "drain"

    @extend_schema(
        summary="Drain nodes (202 with the Action)",
        request=job_serializers.NodeDrainRequestSerializer,
        responses=NODE_ACTION_RESPONSES,
    )
    def post(self, request):
        body = job_serializers.NodeDrainRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        with transaction.atomic():
            nodes = _requested_nodes(request, data)
            action, _ = request_drain(
                nodes=nodes,
                reason=data["reason"],
                requested_by=request.user,
                idempotency_key=_idempotency_key(request, data),
            )
        return action_accepted(request, action)


class NodeResumeView(APIView):
    """Return nodes to service; nodes a guard holds (open fault ticket) need `override`."""

    write_capability = "resume"

    @extend_schema(
        summary="Resume nodes (202 with the Action; 409 naming nodes a guard holds)",
        request=job_serializers.NodeResumeRequestSerializer,
        responses={
            **NODE_ACTION_RESPONSES,
            409: OpenApiResponse(
                OpenApiTypes.OBJECT, description="Some nodes are held; repeat with override"
            ),
        },
    )
    def post(self, request):
        body = job_serializers.NodeResumeRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        with transaction.atomic():
            nodes = _requested_nodes(request, data)
            action, _ = request_resume(
                nodes=nodes,
                reason=data["reason"],
                requested_by=request.user,
                override=data["override"],
                idempotency_key=_idempotency_key(request, data),
            )
        return action_accepted(request, action)


class NodeRebootView(APIView):
    """Reboot nodes the way Slurm sites do: `scontrol reboot ASAP nextstate=...`, so a node
    with a job is drained and rebooted only once the job ends. One Action for the list."""

    write_capability = "reboot"

    @extend_schema(
        operation_id="jobs_node_reboot_create",
        summary="Reboot nodes through Slurm (202 with the Action)",
        request=job_serializers.NodeRebootRequestSerializer,
        responses=NODE_ACTION_RESPONSES,
    )
    def post(self, request):
        body = job_serializers.NodeRebootRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        with transaction.atomic():
            nodes = _requested_nodes(request, data)
            action, _ = request_reboot(
                nodes=nodes,
                reason=data["reason"],
                next_state=data["next_state"],
                requested_by=request.user,
                idempotency_key=_idempotency_key(request, data),
            )
        return action_accepted(request, action)


class NodeCancelRebootView(APIView):
    """Withdraw a reboot Slurm still holds for nodes (REBOOT_REQUESTED, waiting for jobs):
    `scontrol cancel_reboot`, which also lifts the drain ASAP added. A reboot already issued
    (REBOOT_ISSUED, booting) cannot be called back; the Action fails saying so."""

    write_capability = "reboot"

    @extend_schema(
        operation_id="jobs_node_cancel_reboot_create",
        summary="Cancel a requested reboot through Slurm (202 with the Action)",
        request=job_serializers.NodeCancelRebootRequestSerializer,
        responses=NODE_ACTION_RESPONSES,
    )
    def post(self, request):
        body = job_serializers.NodeCancelRebootRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        with transaction.atomic():
            nodes = _requested_nodes(request, data)
            action, _ = request_cancel_reboot(
                nodes=nodes,
                reason=data["reason"],
                requested_by=request.user,
                idempotency_key=_idempotency_key(request, data),
            )
        return action_accepted(request, action)

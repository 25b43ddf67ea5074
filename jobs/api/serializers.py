"""Serializers of the jobs API."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from jobs.models import Job
from jobs.selectors import job_hardware
from jobs.services import MAX_REASON_LENGTH, REBOOT_NEXT_STATES
from portal.api.serializers import OneLineTextField, StrictSerializer


class NodeActionRequestSerializer(StrictSerializer):
    hostlist = serializers.CharField(
        required=False, help_text="Slurm hostlist expression, e.g. gpu[001-016]"
    )
    node_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, allow_empty=False
    )
    reason = OneLineTextField(
        max_length=MAX_REASON_LENGTH, help_text="Shown in Slurm (sinfo -R) and recorded"
    )
    idempotency_key = serializers.CharField(required=False, max_length=128)

    def validate(self, attrs):
        if not attrs.get("hostlist") and not attrs.get("node_ids"):
            raise serializers.ValidationError({"hostlist": ["Give a hostlist or node_ids."]})
        if attrs.get("hostlist") and attrs.get("node_ids"):
            raise serializers.ValidationError(
                {"hostlist": ["Give either hostlist or node_ids, not both."]}
            )
        return attrs


class NodeDrainRequestSerializer(NodeActionRequestSerializer):
    pass


class NodeResumeRequestSerializer(NodeActionRequestSerializer):
    override = serializers.BooleanField(
        default=False,
        help_text="Resume even nodes a guard wants kept out (e.g. an open fault ticket)",
    )


class NodeRebootRequestSerializer(NodeActionRequestSerializer):
    next_state = serializers.ChoiceField(
        choices=REBOOT_NEXT_STATES,
        default="resume",
        help_text="What Slurm makes of each node once slurmd registers after the reboot",
    )


class NodeCancelRebootRequestSerializer(NodeActionRequestSerializer):
    pass


class JobSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(
        view_name="api:jobs:job-detail", lookup_field="job_id"
    )
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    size_bucket = serializers.CharField(read_only=True)
    live = serializers.BooleanField(source="is_live", read_only=True)
    runtime_seconds = serializers.SerializerMethodField()
    gpu_seconds = serializers.SerializerMethodField(
        help_text="GPU-occupied time: runtime x allocated GPUs (so far, for a running job)"
    )

    class Meta:
        model = Job
        fields = [
            "id", "url", "job_id", "name", "user", "account", "partition", "tenant", "state",
            "state_reason", "live", "exit_code", "signal", "submit_time", "start_time",
            "end_time", "elapsed_seconds", "runtime_seconds", "time_limit_minutes", "gpus",
            "node_count", "size_bucket", "nodelist", "gpu_seconds", "source", "left_queue_at",
        ]

    def _now(self):
        if "now" not in self.context:
            self.context["now"] = timezone.now()
        return self.context["now"]

    def get_runtime_seconds(self, job: Job) -> int:
        return job.runtime_seconds(self._now())

    def get_gpu_seconds(self, job: Job) -> int:
        return job.gpu_seconds_so_far(self._now())


class RailLinkSerializer(serializers.Serializer):
    rail = serializers.IntegerField(allow_null=True)
    device = serializers.CharField(source="nic.device")
    switch = serializers.CharField(source="switch.hostname", allow_null=True, default=None)
    switch_id = serializers.IntegerField(source="switch.pk", allow_null=True, default=None)
    port = serializers.CharField(source="port.name", allow_null=True, default=None)
    port_id = serializers.IntegerField(source="port.pk", allow_null=True, default=None)


class GPUSummarySerializer(serializers.Serializer):
    index = serializers.IntegerField()
    uuid = serializers.CharField()
    model = serializers.CharField()


class NodeHardwareSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="node.pk")
    hostname = serializers.CharField(source="node.hostname")
    pod = serializers.CharField(source="node.pod.name", allow_null=True, default=None)
    slurm_state = serializers.CharField(source="node.slurm_state")
    gpus = GPUSummarySerializer(many=True)
    rails = RailLinkSerializer(many=True)


class JobHardwareSerializer(serializers.Serializer):
    nodes = NodeHardwareSerializer(many=True)
    switches = serializers.SerializerMethodField()
    missing_nodes = serializers.ListField(child=serializers.CharField())

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_switches(self, hardware) -> list[dict]:
        return [
            {
                "id": switch.pk,
                "hostname": switch.hostname,
                "role": switch.role,
                "ports": hardware.ports_by_switch.get(switch.hostname, []),
            }
            for switch in hardware.switches
        ]


class JobDetailSerializer(JobSerializer):
    hardware = serializers.SerializerMethodField(
        help_text="Nodes, their GPUs and rail NICs, and the leaf ports and switches the job spans"
    )

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "hardware"]

    @extend_schema_field(JobHardwareSerializer)
    def get_hardware(self, job: Job) -> dict:
        return JobHardwareSerializer(job_hardware(job)).data

"""Request and response bodies of the fabric action API."""

from __future__ import annotations

from rest_framework import serializers

from fabric.services import QOS_PROFILES
from portal.api.serializers import StrictSerializer

REASON_HELP = "Why: recorded on the Action and in the audit log, shown to others."


class SwitchActionRequestSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=1000, help_text=REASON_HELP)
    idempotency_key = serializers.CharField(
        required=False, max_length=128,
        help_text="Repeat a request safely: the same key returns the first Action "
                  "(or send an Idempotency-Key header).",
    )


class PortAdminRequestSerializer(SwitchActionRequestSerializer):
    ports = serializers.ListField(
        child=serializers.CharField(max_length=64), allow_empty=False, max_length=128,
        help_text="SONiC port names of this switch, e.g. [\"Ethernet0\", \"Ethernet4\"]",
    )
    state = serializers.ChoiceField(choices=["up", "down"],
                                    help_text="down: shutdown, up: startup")


class LeafMaintenanceRequestSerializer(SwitchActionRequestSerializer):
    report_only = serializers.BooleanField(
        default=False,
        help_text="Only report the blast radius (nodes, rails, cables); drain nothing, shut "
                  "nothing.",
    )
    shut_under_running_jobs = serializers.BooleanField(
        default=False,
        help_text="Shut the ports as soon as the drain went through, under the jobs still "
                  "running (recorded by name); needs force_reason. Otherwise the maintenance "
                  "waits until Slurm reports the nodes empty, up to "
                  "MAINTENANCE_DRAIN_DEADLINE_SECONDS.",
    )
    force_reason = serializers.CharField(
        required=False, allow_blank=True, max_length=1000,
        help_text="Why the ports may be shut under running jobs",
    )


class QosRequestSerializer(SwitchActionRequestSerializer):
    profile = serializers.ChoiceField(choices=sorted(QOS_PROFILES), default="SAKURAONE_ROCE",
                                      help_text="QoS profile; SAKURAONE_ROCE is paper Table 15")


class BlastRadiusQuerySerializer(StrictSerializer):
    ports = serializers.CharField(
        required=False,
        help_text="Comma-separated port names; every host-facing port when omitted",
    )


class AffectedLinkSerializer(serializers.Serializer):
    port = serializers.CharField()
    node = serializers.CharField()
    node_slurm_state = serializers.CharField(help_text="As last synced from Slurm")
    nic = serializers.CharField()
    rail = serializers.IntegerField(allow_null=True)
    cable_id = serializers.IntegerField()
    cable_label = serializers.CharField()


class BlastRadiusSerializer(serializers.Serializer):
    switch = serializers.CharField()
    ports = serializers.ListField(child=serializers.CharField())
    nodes = serializers.ListField(child=serializers.CharField())
    nodes_hostlist = serializers.CharField()
    rails = serializers.ListField(child=serializers.IntegerField())
    links = AffectedLinkSerializer(many=True)

"""Serializers of the faults API: shapes only, no business logic (that is in faults.services)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from faults.hooks import visible_impact
from faults.models import (
    Category,
    FaultTicket,
    FaultTransition,
    IntakeRecord,
    RecoveryMethod,
    RepairCase,
    RepairPart,
    Source,
    TimelineEntry,
)
from faults.parsing import DEFAULT_ALERTNAME_KINDS
from faults.policies import KNOWN_XIDS, PLATFORM_KINDS
from faults.repair_workflow import RepairStatus
from faults.services.recovery import RECOVERY_STEP_NAMES, recovery_steps
from faults.workflow import Status, allowed_targets
from inventory.api.serializers import ComponentSwapSerializer, SpareReservationSerializer
from inventory.models import GPUS_PER_NODE, ComponentKind
from inventory.selectors import spare_reservation_list
from portal.api.serializers import StrictSerializer


class TicketSerializer(serializers.ModelSerializer):
    reference = serializers.CharField(read_only=True)
    node = serializers.CharField(source="node.hostname", default=None, read_only=True)
    pod = serializers.CharField(source="node.pod.name", default=None, read_only=True)
    gpu_index = serializers.IntegerField(source="gpu.index", default=None, read_only=True)
    nic = serializers.CharField(source="nic.device", default=None, read_only=True)
    switch = serializers.CharField(source="switch.hostname", default=None, read_only=True)
    port = serializers.CharField(source="port.name", default=None, read_only=True)
    responder = serializers.CharField(source="responder.username", default=None, read_only=True)
    allowed_transitions = serializers.SerializerMethodField()

    class Meta:
        model = FaultTicket
        fields = [
            "id", "reference", "status", "allowed_transitions", "category", "subtype",
            "severity", "summary", "fingerprint", "sources", "event_count", "node", "pod",
            "gpu_index", "gpu_serial", "gpu_suspect", "nic", "switch", "port", "responder",
            "reopened_from", "detected_at", "acknowledged_at", "triaged_at", "mitigated_at",
            "resolved_at", "verified_at", "closed_at", "last_event_at", "rma_part",
            "rma_case_number", "rma_expected_at", "recovery_method", "alert_fingerprints",
            "job_id", "signal_cleared_at",
        ]
        read_only_fields = fields

    def get_allowed_transitions(self, ticket) -> list[str]:
        return list(allowed_targets(ticket.status))


class TimelineEntrySerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", default=None, read_only=True)

    class Meta:
        model = TimelineEntry
        fields = ["id", "at", "kind", "text", "author", "source", "action", "intake"]
        read_only_fields = fields


class TransitionRowSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", default=None, read_only=True)

    class Meta:
        model = FaultTransition
        fields = ["id", "from_status", "to_status", "actor", "at", "note"]
        read_only_fields = fields


class HistoryTicketSerializer(serializers.ModelSerializer):
    reference = serializers.CharField(read_only=True)

    class Meta:
        model = FaultTicket
        fields = ["id", "reference", "status", "category", "summary", "detected_at",
                  "resolved_at", "recovery_method"]
        read_only_fields = fields


class RecoveryStepSerializer(serializers.Serializer):
    step = serializers.CharField()
    label = serializers.CharField()
    confirmation = serializers.CharField(
        help_text="why the step needs `confirm: true` (empty when it does not)"
    )
    override_needed = serializers.CharField(
        help_text="why a resume needs an `override_reason` (the node has not passed a "
                  "validation since its restart or repair; empty when it does not)"
    )


class TicketDetailSerializer(TicketSerializer):
    timeline = TimelineEntrySerializer(many=True, read_only=True)
    transitions = TransitionRowSerializer(many=True, read_only=True)
    actions = serializers.PrimaryKeyRelatedField(many=True, read_only=True)
    impact = serializers.SerializerMethodField(
        help_text="what the fault hit when it opened (GET /api/impact/'s answer), cut to your "
                  "role: viewers get no jobs or tenants"
    )
    recovery_steps = serializers.SerializerMethodField(
        help_text="the one-click steps (POST .../recovery/) your role may take now"
    )

    class Meta(TicketSerializer.Meta):
        fields = [*TicketSerializer.Meta.fields, "timeline", "transitions", "actions", "impact",
                  "recovery_steps", "validation"]
        read_only_fields = fields

    def _user(self):
        request = self.context.get("request")
        return getattr(request, "user", None)

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_impact(self, ticket) -> dict:
        return visible_impact(ticket.impact, user=self._user())

    @extend_schema_field(RecoveryStepSerializer(many=True))
    def get_recovery_steps(self, ticket) -> list[dict]:
        return [{"step": option.step, "label": option.label, "confirmation": option.confirmation,
                 "override_needed": option.override_needed}
                for option in recovery_steps(ticket, user=self._user())]


class RecoveryRequestSerializer(StrictSerializer):
    step = serializers.ChoiceField(choices=list(RECOVERY_STEP_NAMES))
    confirm = serializers.BooleanField(
        default=False, help_text="take a step whose `confirmation` says why it needs asking"
    )
    override_reason = serializers.CharField(
        required=False, allow_blank=True, max_length=500, default="",
        help_text="resume a node restarted or repaired for the ticket that has not passed a "
                  "validation since, and why (recorded on the timeline and in the audit log)",
    )


class UserReportSerializer(StrictSerializer):
    summary = serializers.CharField(max_length=300)
    node = serializers.CharField(required=False, allow_blank=True, help_text="hostname")
    gpu = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=7,
                                   help_text="GPU index on the node")
    switch = serializers.CharField(required=False, allow_blank=True, help_text="hostname")
    category = serializers.ChoiceField(choices=Category.choices, required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    detected_at = serializers.DateTimeField(required=False, allow_null=True)


class TransitionRequestSerializer(StrictSerializer):
    to_status = serializers.ChoiceField(choices=Status.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    subtype = serializers.CharField(required=False, allow_blank=True, max_length=32)
    recovery_method = serializers.ChoiceField(choices=RecoveryMethod.choices, required=False)
    rma_part = serializers.CharField(required=False, allow_blank=True, max_length=200)
    rma_case_number = serializers.CharField(required=False, allow_blank=True, max_length=100)
    rma_expected_at = serializers.DateField(required=False, allow_null=True)
    confirm = serializers.BooleanField(
        default=False, help_text="resolve although the node still drains or runs jobs"
    )


class NoteSerializer(StrictSerializer):
    text = serializers.CharField(max_length=5000)


class ReopenSerializer(StrictSerializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class PlatformEventSerializer(serializers.Serializer):
    """Documentation of the platform event body (validated by faults.parsing)."""

    kind = serializers.ChoiceField(choices=[(k, k) for k in PLATFORM_KINDS])
    node = serializers.CharField(required=False, help_text="hostname; all kinds but switch_reboot")
    gpu = serializers.CharField(
        required=False, help_text="index 0-7, UUID or serial (xid, ecc, gpu_unresponsive, nvlink)"
    )
    xid = serializers.ChoiceField(choices=[(x, str(x)) for x in KNOWN_XIDS], required=False)
    ecc = serializers.DictField(
        child=serializers.IntegerField(min_value=0), required=False,
        help_text='{"single_bit": n, "double_bit": n} for kind ecc',
    )
    nic = serializers.CharField(required=False, help_text="device, e.g. mlx5_0 (nic/transceiver)")
    switch = serializers.CharField(required=False, help_text="hostname (switch_reboot)")
    port = serializers.CharField(required=False, help_text="switch port, e.g. Ethernet0")
    message = serializers.CharField(required=False, max_length=1000)
    observed_at = serializers.DateTimeField(required=False)


class IntakeResultSerializer(serializers.Serializer):
    ticket = TicketSerializer()
    created = serializers.BooleanField()


class AlertSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="firing or resolved")
    labels = serializers.DictField(
        child=serializers.CharField(),
        help_text="alertname (" + ", ".join(DEFAULT_ALERTNAME_KINDS) + ", or any), node/instance, "
        "gpu, xid, device, switch, severity, category",
    )
    annotations = serializers.DictField(child=serializers.CharField(), required=False)
    startsAt = serializers.DateTimeField()
    endsAt = serializers.DateTimeField(required=False)
    fingerprint = serializers.CharField(required=False)


class AlertmanagerWebhookSerializer(serializers.Serializer):
    version = serializers.CharField(help_text='"4"')
    status = serializers.CharField(help_text="firing or resolved")
    receiver = serializers.CharField(required=False)
    alerts = AlertSerializer(many=True)


class AlertOutcomeSerializer(serializers.Serializer):
    ticket = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    created = serializers.BooleanField(required=False)


class AlertmanagerResultSerializer(serializers.Serializer):
    alerts = AlertOutcomeSerializer(many=True)


class IntakeRecordSerializer(serializers.ModelSerializer):
    tickets = serializers.PrimaryKeyRelatedField(many=True, read_only=True)
    submitted_by = serializers.CharField(source="submitted_by.username", default=None)
    channel = serializers.ChoiceField(choices=Source.choices)

    class Meta:
        model = IntakeRecord
        fields = ["id", "channel", "received_at", "accepted", "errors", "payload", "raw_body",
                  "submitted_by", "tickets"]
        read_only_fields = fields


class CategoryStatisticsSerializer(serializers.Serializer):
    category = serializers.CharField()
    label = serializers.CharField()
    count = serializers.IntegerField()
    share = serializers.DecimalField(max_digits=4, decimal_places=1, coerce_to_string=False)
    mtta_hours = serializers.FloatField(allow_null=True)
    mttr_hours = serializers.FloatField(allow_null=True)
    awaiting_vendor_hours = serializers.FloatField(allow_null=True)


class MonthStatisticsSerializer(serializers.Serializer):
    month = serializers.CharField()
    count = serializers.IntegerField()
    share = serializers.DecimalField(max_digits=4, decimal_places=1, coerce_to_string=False)
    by_category = serializers.DictField(child=serializers.IntegerField())
    mtta_hours = serializers.FloatField(allow_null=True)
    mttr_hours = serializers.FloatField(allow_null=True)
    awaiting_vendor_hours = serializers.FloatField(allow_null=True)


class TimesSerializer(serializers.Serializer):
    mtta_hours = serializers.FloatField(allow_null=True)
    mttr_hours = serializers.FloatField(allow_null=True)
    awaiting_vendor_hours = serializers.FloatField(allow_null=True)
    acknowledged = serializers.IntegerField()
    resolved = serializers.IntegerField()


class NodeMtbfSerializer(serializers.Serializer):
    node = serializers.CharField()
    faults = serializers.IntegerField()
    mtbf_hours = serializers.FloatField()


class GpuMtbfSerializer(serializers.Serializer):
    gpu_serial = serializers.CharField()
    faults = serializers.IntegerField()
    mtbf_hours = serializers.FloatField()


class PeriodSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    hours = serializers.FloatField()


class RecoveryStatisticsSerializer(serializers.Serializer):
    method = serializers.CharField()
    label = serializers.CharField()
    count = serializers.IntegerField()
    share = serializers.DecimalField(max_digits=4, decimal_places=1, coerce_to_string=False)


class RepairStatisticsSerializer(serializers.Serializer):
    """One part type and vendor's repair cases (faults.statistics.repair_statistics)."""

    component = serializers.ChoiceField(choices=ComponentKind.choices)
    label = serializers.CharField()
    vendor = serializers.CharField()
    cases = serializers.IntegerField()
    waiting_for_part_hours = serializers.FloatField(
        allow_null=True, help_text="mean of part requested -> part received")
    hands_on_hours = serializers.FloatField(
        allow_null=True, help_text="mean of opened -> requested plus received -> installed")
    mttr_hours = serializers.FloatField(allow_null=True, help_text="mean of opened -> installed")


class ComponentFailuresSerializer(serializers.Serializer):
    component = serializers.ChoiceField(choices=Category.choices,
                                        help_text="Table 13's fault component")
    label = serializers.CharField()
    failures = serializers.IntegerField()


class ReplacedPartsSerializer(serializers.Serializer):
    component = serializers.ChoiceField(choices=ComponentKind.choices, help_text="the part type")
    label = serializers.CharField()
    replacements = serializers.IntegerField()


class ComponentMonthSerializer(serializers.Serializer):
    """One month of the burn-in curve: failures by component, parts replaced for them."""

    month = serializers.CharField(help_text="YYYY-MM of detection")
    failures = serializers.IntegerField()
    by_component = ComponentFailuresSerializer(many=True)
    replacements = serializers.IntegerField(
        help_text="repair cases of this month's failures that reached installed")
    replaced_parts = ReplacedPartsSerializer(many=True)


class RepeatOffenderSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[("node", "node"), ("gpu", "gpu")])
    node = serializers.CharField(
        help_text="hostname; a GPU's node now, or where it last failed when swapped out")
    gpu_index = serializers.IntegerField(allow_null=True)
    gpu_serial = serializers.CharField(allow_blank=True)
    installed = serializers.BooleanField(help_text="a GPU's serial is still in that slot")
    faults = serializers.IntegerField(help_text="its tickets so far")


class RepeatOffendersSerializer(serializers.Serializer):
    """Nodes and GPUs whose next ticket the repeat rule (FAULTS_REPEAT_THRESHOLD earlier tickets)
    calls a repeat offender, so it proposes a vendor case; over all time, not the range."""

    threshold = serializers.IntegerField()
    nodes = RepeatOffenderSerializer(many=True)
    gpus = RepeatOffenderSerializer(many=True)


class StatisticsSerializer(serializers.Serializer):
    period = PeriodSerializer()
    by_recovery_method = RecoveryStatisticsSerializer(many=True)
    by_category = CategoryStatisticsSerializer(many=True)
    total = serializers.IntegerField()
    total_share = serializers.DecimalField(max_digits=4, decimal_places=1, coerce_to_string=False)
    by_month = MonthStatisticsSerializer(many=True)
    overall = TimesSerializer()
    mtbf_by_node = NodeMtbfSerializer(many=True)
    mtbf_by_gpu_serial = GpuMtbfSerializer(many=True)
    failures_by_component_month = ComponentMonthSerializer(many=True)
    repair_statistics = RepairStatisticsSerializer(many=True)
    repeat_offenders = RepeatOffendersSerializer()


# -- repair cases ---------------------------------------------------------------------------------


class RepairPartSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.hostname", default=None, read_only=True)
    gpu_index = serializers.IntegerField(source="gpu.index", default=None, read_only=True)
    nic = serializers.CharField(source="nic.device", default=None, read_only=True)
    installed = serializers.BooleanField(read_only=True)
    swap = ComponentSwapSerializer(read_only=True, allow_null=True)

    class Meta:
        model = RepairPart
        fields = ["id", "kind", "node", "gpu_index", "nic", "position", "description",
                  "installed", "swap"]
        read_only_fields = fields


class RepairCaseSerializer(serializers.ModelSerializer):
    reference = serializers.CharField(read_only=True)
    ticket_reference = serializers.CharField(source="ticket.reference", read_only=True)
    opened_by = serializers.CharField(source="opened_by.username", default=None, read_only=True)
    allowed_transitions = serializers.SerializerMethodField()
    waited_for_part_hours = serializers.SerializerMethodField(
        help_text="how long the node waited for the part (so far, while it is awaited)"
    )
    parts = RepairPartSerializer(many=True, read_only=True)
    spares = serializers.SerializerMethodField(help_text="spares this case reserved")

    class Meta:
        model = RepairCase
        fields = ["id", "reference", "ticket", "ticket_reference", "vendor",
                  "vendor_case_number", "component", "status", "allowed_transitions", "note",
                  "expected_at", "opened_at", "waiting_for_part_at", "part_received_at",
                  "installed_at", "closed_at", "waited_for_part_hours", "opened_by", "parts",
                  "spares"]
        read_only_fields = fields

    @extend_schema_field(SpareReservationSerializer(many=True))
    def get_spares(self, case) -> list[dict]:
        return SpareReservationSerializer(
            spare_reservation_list(reference=case.reference), many=True
        ).data

    def get_allowed_transitions(self, case) -> list[str]:
        return list(case.allowed_targets)

    def get_waited_for_part_hours(self, case) -> float | None:
        waited = case.waited_for_part
        return round(waited.total_seconds() / 3600, 2) if waited is not None else None


class RepairPartRequestSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=ComponentKind.choices)
    node = serializers.CharField(required=False, allow_blank=True, max_length=64,
                                 help_text="hostname; the ticket's node when left out")
    gpu_index = serializers.IntegerField(required=False, allow_null=True, min_value=0,
                                         max_value=GPUS_PER_NODE - 1, help_text="kind gpu")
    nic = serializers.CharField(required=False, allow_blank=True, max_length=32,
                                help_text="NIC device, e.g. mlx5_0 (kind nic or transceiver)")
    position = serializers.CharField(required=False, allow_blank=True, max_length=32,
                                     help_text="PSU1, NVMe2, tray (the other kinds)")
    description = serializers.CharField(required=False, allow_blank=True, max_length=200)


class RepairCaseCreateSerializer(StrictSerializer):
    ticket = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    vendor = serializers.CharField(max_length=100)
    vendor_case_number = serializers.CharField(required=False, allow_blank=True, max_length=100)
    component = serializers.ChoiceField(choices=ComponentKind.choices,
                                        help_text="the failed component")
    opened_at = serializers.DateTimeField(required=False, allow_null=True)
    expected_at = serializers.DateField(required=False, allow_null=True)
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    parts = RepairPartRequestSerializer(many=True, required=False, max_length=20)


class RepairTransitionSerializer(StrictSerializer):
    to_status = serializers.ChoiceField(choices=RepairStatus.choices)
    at = serializers.DateTimeField(required=False, allow_null=True,
                                   help_text="when the step happened; now when left out")
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    expected_at = serializers.DateField(required=False, allow_null=True)


class RepairSpareRequestSerializer(StrictSerializer):
    site = serializers.CharField(max_length=64, help_text="the site whose spares shelf to use")
    kind = serializers.ChoiceField(choices=ComponentKind.choices, required=False,
                                   allow_blank=True,
                                   help_text="the part type; the case's failed component if blank")


class RepairInstallSerializer(StrictSerializer):
    part = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    serial_in = serializers.CharField(max_length=64)
    uuid_in = serializers.CharField(required=False, allow_blank=True, max_length=64,
                                    help_text="a GPU's UUID (GPU-...)")
    mac_in = serializers.CharField(required=False, allow_blank=True, max_length=17,
                                   help_text="a NIC's MAC")
    firmware_version_in = serializers.CharField(
        required=False, allow_blank=True, max_length=64,
        help_text="optional: the part's firmware as its BMC reports it (no BMC driver yet)",
    )
    serial_out = serializers.CharField(
        required=False, allow_blank=True, max_length=64,
        help_text="only for a positional part (PSU, disk, tray) the inventory never knew",
    )
    installed_at = serializers.DateTimeField(required=False, allow_null=True)

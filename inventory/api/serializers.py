"""Serializers of the inventory API.

Related objects are written as ids and read as brief objects (`BriefRelatedField`), so a NIC
shows `{"node": {"id", "url", "hostname"}}` and a cable shows both ends with their owners. No
serializer touches a secret: a switch carries only `credentials_ref`, a name in the secrets store.
"""

from __future__ import annotations

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import UniqueTogetherValidator

from inventory.allocations import allocation_period_errors
from inventory.api.fields import BriefRelatedField, DetailURLField
from inventory.bmc.boot import BOOT_TARGETS
from inventory.bmc.reading import GPU_STATES, SECTION_STATUSES
from inventory.models import (
    GPU,
    GPUS_PER_NODE,
    NIC,
    RAILS,
    Allocation,
    Cable,
    CableStatus,
    ComponentKind,
    ComponentSwap,
    Node,
    Pod,
    Rack,
    SpareReservation,
    SpareStock,
    Switch,
    SwitchPort,
)
from inventory.selectors import nic_link, nodes_from_hostlist
from inventory.services import nic_rail_errors
from portal.api.serializers import OneLineTextField, StrictModelSerializer, StrictSerializer
from portal.models import Tenant

MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


def _url(name: str) -> DetailURLField:
    return DetailURLField(view_name=f"api:inventory:{name}-detail")


# -- brief representations ---------------------------------------------------------------------


class PodBriefSerializer(serializers.ModelSerializer):
    url = _url("pod")

    class Meta:
        model = Pod
        fields = ["id", "url", "name"]


class RackBriefSerializer(serializers.ModelSerializer):
    url = _url("rack")

    class Meta:
        model = Rack
        fields = ["id", "url", "name"]


class NodeBriefSerializer(serializers.ModelSerializer):
    url = _url("node")

    class Meta:
        model = Node
        fields = ["id", "url", "hostname"]


class GPUBriefSerializer(serializers.ModelSerializer):
    url = _url("gpu")

    class Meta:
        model = GPU
        fields = ["id", "url", "index"]


class NICBriefSerializer(serializers.ModelSerializer):
    url = _url("nic")
    node = NodeBriefSerializer(read_only=True)

    class Meta:
        model = NIC
        fields = ["id", "url", "device", "node"]


class SwitchBriefSerializer(serializers.ModelSerializer):
    url = _url("switch")

    class Meta:
        model = Switch
        fields = ["id", "url", "hostname"]


class PortBriefSerializer(serializers.ModelSerializer):
    url = _url("port")
    switch = SwitchBriefSerializer(read_only=True)

    class Meta:
        model = SwitchPort
        fields = ["id", "url", "name", "switch"]


class CableBriefSerializer(serializers.ModelSerializer):
    url = _url("cable")

    class Meta:
        model = Cable
        fields = ["id", "url", "type", "status", "label"]


class TenantBriefSerializer(serializers.ModelSerializer):
    url = DetailURLField(view_name="api:tenant-detail")

    class Meta:
        model = Tenant
        fields = ["id", "url", "slug", "name"]


class LinkSerializer(serializers.Serializer):
    """The active cable on a NIC or port and what is at its far end (a port or a NIC)."""

    cable = CableBriefSerializer()
    port = PortBriefSerializer(allow_null=True)
    nic = NICBriefSerializer(allow_null=True)


class LinkedMixin(serializers.Serializer):
    """`link`: read from the cables the selector prefetched (`with_cable_ends`); null when the
    object was not loaded that way (e.g. just created) or has no active cable."""

    link = serializers.SerializerMethodField()

    @extend_schema_field(LinkSerializer(allow_null=True))
    def get_link(self, obj):
        link = nic_link(obj)
        if link is None:
            return None
        serializer = getattr(self, "_link_serializer", None)
        if serializer is None:  # built once per request, as BriefRelatedField does
            serializer = self._link_serializer = LinkSerializer(context=self.context)
        return serializer.to_representation(link._asdict())


# -- full representations ----------------------------------------------------------------------


class PodSerializer(StrictModelSerializer):
    url = _url("pod")

    class Meta:
        model = Pod
        fields = ["id", "url", "name", "description", "created_at"]


class RackSerializer(StrictModelSerializer):
    url = _url("rack")
    pod = BriefRelatedField(
        PodBriefSerializer, queryset=Pod.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = Rack
        fields = ["id", "url", "name", "pod", "created_at"]


class NodeSerializer(StrictModelSerializer):
    url = _url("node")
    pod = BriefRelatedField(
        PodBriefSerializer, queryset=Pod.objects.all(), allow_null=True, required=False
    )
    rack = BriefRelatedField(
        RackBriefSerializer, queryset=Rack.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = Node
        fields = [
            "id",
            "url",
            "hostname",
            "serial",
            "model",
            "cpu_model",
            "cpu_count",
            "memory_gb",
            "disks",
            "pod",
            "rack",
            "status",
            "slurm_state",
            "slurm_reason",
            "slurm_state_changed_at",
            "slurm_reboot",
            "bmc_address",
            "bmc_system_id",
            "bmc_credentials_ref",
            "created_at",
            "updated_at",
        ]
        # Slurm's view of a node belongs to the jobs app's sync, not to inventory writes.
        read_only_fields = [
            "slurm_state", "slurm_reason", "slurm_state_changed_at", "slurm_reboot"]

    def validate_disks(self, value):
        if not isinstance(value, list) or not all(isinstance(disk, dict) for disk in value):
            raise serializers.ValidationError("a list of disk groups (objects)")
        return value

    def validate(self, attrs):
        pod = attrs.get("pod", getattr(self.instance, "pod", None))
        rack = attrs.get("rack", getattr(self.instance, "rack", None))
        if pod is not None and rack is not None and rack.pod_id not in (None, pod.pk):
            raise serializers.ValidationError(
                {"rack": [f"rack {rack.name} is in pod {rack.pod}, not {pod.name}"]}
            )
        return attrs


class PowerOperationSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    disruptive = serializers.BooleanField(
        help_text="Takes the host down: refused while jobs run unless forced"
    )


class NodePowerSerializer(serializers.Serializer):
    """The impact shown before a power Action is confirmed."""

    hostname = serializers.CharField()
    bmc_configured = serializers.BooleanField()
    power_state = serializers.CharField(
        allow_null=True, help_text="As the BMC reports it now; null when it cannot say"
    )
    operations = PowerOperationSerializer(many=True)
    jobs = serializers.ListField(
        child=serializers.CharField(),
        help_text="Running jobs a power-off or power cycle would end",
    )


class NodePowerRequestSerializer(StrictSerializer):
    operation = serializers.ChoiceField(
        choices=["on", "graceful_off", "force_off", "power_cycle", "bmc_reset"]
    )
    reason = OneLineTextField(max_length=1000, help_text="Recorded on the Action and audit")
    force = serializers.BooleanField(
        default=False, help_text="Power off or cycle even a node that runs jobs"
    )
    idempotency_key = serializers.CharField(required=False, max_length=128)


class BmcHealthSerializer(serializers.Serializer):
    health = serializers.CharField(
        allow_null=True, help_text="Status.Health: OK, Warning, Critical"
    )
    health_rollup = serializers.CharField(allow_null=True, help_text="Status.HealthRollup")
    state = serializers.CharField(allow_null=True)
    power_state = serializers.CharField(allow_null=True)
    model = serializers.CharField()
    serial = serializers.CharField()


class BmcSensorSerializer(serializers.Serializer):
    name = serializers.CharField()
    reading = serializers.FloatField(allow_null=True)
    units = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField(allow_null=True, help_text="The sensor's Status.Health")


class BmcFirmwareSerializer(serializers.Serializer):
    id = serializers.CharField()
    component = serializers.CharField()
    version = serializers.CharField()


class BmcEventSerializer(serializers.Serializer):
    id = serializers.CharField()
    created = serializers.CharField(help_text="ISO 8601 as the BMC wrote it")
    severity = serializers.CharField()
    message = serializers.CharField()
    log = serializers.CharField(help_text="The LogService's Id")


class BmcGpuSerializer(serializers.Serializer):
    bmc_id = serializers.CharField(help_text="The BMC's own name (HGX: GPU_SXM_n)")
    serial = serializers.CharField()
    uuid = serializers.CharField()
    model = serializers.CharField()
    health = serializers.CharField(allow_null=True)
    state = serializers.ChoiceField(choices=GPU_STATES)
    matched_by = serializers.CharField(help_text="serial, uuid, or empty when not matched")
    inventory_index = serializers.IntegerField(allow_null=True)
    inventory_serial = serializers.CharField()


class BmcInventoryGpuSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    serial = serializers.CharField()
    uuid = serializers.CharField()
    model = serializers.CharField()


class BmcBootOverrideSerializer(serializers.Serializer):
    target = serializers.CharField(help_text="BootSourceOverrideTarget: None, Pxe, BiosSetup, ...")
    enabled = serializers.CharField(help_text="Disabled, Once or Continuous, as read back")


def _bmc_section(name: str, item_serializer) -> type[serializers.Serializer]:
    return type(
        name,
        (serializers.Serializer,),
        {
            "status": serializers.ChoiceField(
                choices=SECTION_STATUSES,
                help_text="not_offered: the BMC has no such resource; error: it did not answer",
            ),
            "message": serializers.CharField(),
            "items": item_serializer(many=True),
        },
    )


class NodeBmcSerializer(serializers.Serializer):
    """What the node's BMC says, read live; never its credentials."""

    hostname = serializers.CharField()
    bmc_configured = serializers.BooleanField()
    answered = serializers.BooleanField()
    error = serializers.CharField(help_text='"the BMC did not answer: <its message>" or empty')
    health = BmcHealthSerializer(allow_null=True)
    sensors = _bmc_section("BmcSensorSection", BmcSensorSerializer)()
    firmware = _bmc_section("BmcFirmwareSection", BmcFirmwareSerializer)()
    events = _bmc_section("BmcEventSection", BmcEventSerializer)()
    gpus = _bmc_section("BmcGpuSection", BmcGpuSerializer)()
    boot_override = _bmc_section("BmcBootOverrideSection", BmcBootOverrideSerializer)()
    inventory_only_gpus = BmcInventoryGpuSerializer(
        many=True, help_text="The inventory's GPUs no BMC GPU matched by serial or UUID"
    )


class NodeBootOverrideRequestSerializer(StrictSerializer):
    target = serializers.ChoiceField(
        choices=list(BOOT_TARGETS), help_text="Boot from this at the next boot only"
    )
    reason = OneLineTextField(max_length=1000, help_text="Recorded on the Action and audit")
    idempotency_key = serializers.CharField(required=False, max_length=128)


class GPUSerializer(StrictModelSerializer):
    url = _url("gpu")
    node = BriefRelatedField(NodeBriefSerializer, queryset=Node.objects.all())
    index = serializers.IntegerField(min_value=0, max_value=GPUS_PER_NODE - 1)

    class Meta:
        model = GPU
        fields = ["id", "url", "node", "index", "uuid", "serial", "model", "pci_bus_id"]


class NICSerializer(LinkedMixin, StrictModelSerializer):
    url = _url("nic")
    node = BriefRelatedField(NodeBriefSerializer, queryset=Node.objects.all())
    rail = serializers.IntegerField(
        min_value=0,
        max_value=RAILS - 1,
        allow_null=True,
        required=False,
        help_text="0-7, rail NICs only",
    )
    affinity_gpu = BriefRelatedField(
        GPUBriefSerializer, queryset=GPU.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = NIC
        fields = [
            "id",
            "url",
            "node",
            "device",
            "netdev",
            "mac",
            "serial",
            "role",
            "rail",
            "affinity_gpu",
            "affinity_kind",
            "speed_gbps",
            "bond_members",
            "link",
        ]
        # DRF would derive a validator from the partial (node, rail) constraint that makes
        # `rail` required for every NIC; `validate` checks it for rail NICs only.
        validators = [
            UniqueTogetherValidator(queryset=NIC.objects.all(), fields=["node", "device"])
        ]

    def validate_mac(self, value: str) -> str:
        if value and not MAC.match(value):
            raise serializers.ValidationError("six lower-case hex pairs joined by colons")
        return value

    def validate(self, attrs):
        def current(name):
            return attrs.get(name, getattr(self.instance, name, None))

        node = current("node")
        errors = nic_rail_errors(
            node=node, role=current("role"), rail=current("rail"), nic=self.instance
        )
        gpu = current("affinity_gpu")
        if gpu is not None and node is not None and gpu.node_id != node.pk:
            errors["affinity_gpu"] = [f"GPU {gpu.pk} is not in node {node.hostname}"]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class SwitchSerializer(StrictModelSerializer):
    url = _url("switch")
    pod = BriefRelatedField(
        PodBriefSerializer, queryset=Pod.objects.all(), allow_null=True, required=False
    )
    rack = BriefRelatedField(
        RackBriefSerializer, queryset=Rack.objects.all(), allow_null=True, required=False
    )
    rail = serializers.IntegerField(
        min_value=0,
        max_value=RAILS - 1,
        allow_null=True,
        required=False,
        help_text="The rail a leaf serves (0-7); leafs only",
    )

    class Meta:
        model = Switch
        fields = [
            "id",
            "url",
            "hostname",
            "role",
            "pod",
            "rail",
            "rack",
            "status",
            "serial",
            "model",
            "asic",
            "nos",
            "nos_version",
            "management_address",
            "credentials_ref",
            "created_at",
            "updated_at",
        ]

    def validate(self, attrs):
        def current(name):
            return attrs.get(name, getattr(self.instance, name, None))

        errors: dict[str, list[str]] = {}
        if current("role") == Switch.Role.LEAF and current("pod") is None:
            errors["pod"] = ["a leaf belongs to a pod"]
        if current("rail") is not None and current("role") != Switch.Role.LEAF:
            errors["rail"] = ["only leafs serve a rail"]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class SwitchPortSerializer(LinkedMixin, StrictModelSerializer):
    url = _url("port")
    switch = BriefRelatedField(SwitchBriefSerializer, queryset=Switch.objects.all())
    breakout_parent = BriefRelatedField(
        PortBriefSerializer, queryset=SwitchPort.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = SwitchPort
        fields = [
            "id",
            "url",
            "switch",
            "name",
            "alias",
            "index",
            "speed_gbps",
            "lanes",
            "breakout_mode",
            "breakout_parent",
            "admin_status",
            "oper_status",
            "last_seen_at",
            "description",
            "link",
        ]

    def validate(self, attrs):
        switch = attrs.get("switch", getattr(self.instance, "switch", None))
        parent = attrs.get("breakout_parent", getattr(self.instance, "breakout_parent", None))
        if parent is not None and switch is not None and parent.switch_id != switch.pk:
            raise serializers.ValidationError(
                {"breakout_parent": [f"port {parent.pk} is not on {switch.hostname}"]}
            )
        return attrs


CABLE_ENDS = ("a_nic", "a_port", "b_nic", "b_port")


class CableSerializer(StrictModelSerializer):
    """A cable's two ends, A and B, are each one NIC or one switch port; ends are fixed once the
    cable exists (decommission it and create another to re-cable)."""

    url = _url("cable")
    a_nic = BriefRelatedField(
        NICBriefSerializer,
        queryset=NIC.objects.select_related("node"),
        allow_null=True,
        required=False,
    )
    a_port = BriefRelatedField(
        PortBriefSerializer,
        queryset=SwitchPort.objects.select_related("switch"),
        allow_null=True,
        required=False,
    )
    b_nic = BriefRelatedField(
        NICBriefSerializer,
        queryset=NIC.objects.select_related("node"),
        allow_null=True,
        required=False,
    )
    b_port = BriefRelatedField(
        PortBriefSerializer,
        queryset=SwitchPort.objects.select_related("switch"),
        allow_null=True,
        required=False,
    )
    status = serializers.ChoiceField(choices=CableStatus.choices, default=CableStatus.PLANNED)

    class Meta:
        model = Cable
        fields = [
            "id",
            "url",
            *CABLE_ENDS,
            "type",
            "length_m",
            "a_transceiver_serial",
            "b_transceiver_serial",
            "status",
            "label",
            "created_at",
            "updated_at",
        ]
        # The database's one-active-cable-per-end constraints are checked by the cabling
        # service, which names the end and the cable already there; DRF's generic
        # "must be unique" would say neither.
        validators: list = []

    def validate(self, attrs):
        if self.instance is not None:
            changed = [
                end
                for end in CABLE_ENDS
                if end in attrs and attrs[end] != getattr(self.instance, end)
            ]
            if changed:
                raise serializers.ValidationError(
                    {
                        end: ["a cable's ends cannot change; decommission it and create another"]
                        for end in changed
                    }
                )
            return attrs
        errors = {}
        for side in ("a", "b"):
            nic, port = attrs.get(f"{side}_nic"), attrs.get(f"{side}_port")
            if (nic is None) == (port is None):
                errors[side] = [
                    f"end {side.upper()} is one NIC ({side}_nic) or one port ({side}_port)"
                ]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class AllocationSerializer(StrictModelSerializer):
    url = _url("allocation")
    tenant = BriefRelatedField(TenantBriefSerializer, queryset=Tenant.objects.all())
    nodes = BriefRelatedField(
        NodeBriefSerializer, queryset=Node.objects.all(), many=True, required=False
    )
    hostlist = serializers.CharField(
        write_only=True,
        required=False,
        help_text="Nodes as a hostlist expression, e.g. gpu[001-016,020]; replaces `nodes`",
    )

    class Meta:
        model = Allocation
        fields = [
            "id",
            "url",
            "tenant",
            "nodes",
            "hostlist",
            "start",
            "end",
            "purpose",
            "created_at",
        ]

    def validate(self, attrs):
        if "hostlist" in attrs:
            if "nodes" in attrs:
                raise serializers.ValidationError(
                    {"hostlist": ["give nodes or a hostlist, not both"]}
                )
            user = self.context["request"].user
            attrs["nodes"] = nodes_from_hostlist(user=user, expression=attrs.pop("hostlist"))
        errors = allocation_period_errors(
            attrs.get("start", getattr(self.instance, "start", None)),
            attrs.get("end", getattr(self.instance, "end", None)),
        )
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


# -- trace, nodes behind a switch, validation, import -----------------------------------------


class TraceSwitchSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    hostname = serializers.CharField()
    role = serializers.CharField()
    pod = serializers.CharField(allow_null=True)
    rail = serializers.IntegerField(allow_null=True)


class TracePortSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    speed_gbps = serializers.IntegerField()
    breakout_parent = serializers.CharField(allow_null=True)
    switch = TraceSwitchSerializer()


class TraceNicSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    node = serializers.CharField()
    device = serializers.CharField()
    role = serializers.CharField()
    rail = serializers.IntegerField(allow_null=True)
    speed_gbps = serializers.IntegerField()


class TraceCableSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField()
    status = serializers.CharField()
    length_m = serializers.FloatField(allow_null=True)


class TraceUplinkSerializer(serializers.Serializer):
    local_port = TracePortSerializer()
    cable = TraceCableSerializer()
    remote_port = TracePortSerializer()


class TraceSerializer(serializers.Serializer):
    """NIC -> cable -> switch port -> switch -> uplinks -> spines; `notes` say where a path
    stops early and why."""

    nic = TraceNicSerializer(allow_null=True)
    cable = TraceCableSerializer(allow_null=True)
    port = TracePortSerializer(allow_null=True)
    switch = TraceSwitchSerializer(allow_null=True)
    uplinks = TraceUplinkSerializer(many=True)
    spines = TraceSwitchSerializer(many=True)
    notes = serializers.ListField(child=serializers.CharField())


class NodeBehindPortSerializer(serializers.Serializer):
    port = PortBriefSerializer()
    node = NodeBriefSerializer()
    nic = NICBriefSerializer()
    rail = serializers.IntegerField(allow_null=True)
    cable = CableBriefSerializer()


class ViolationSerializer(serializers.Serializer):
    rule = serializers.CharField()
    severity = serializers.ChoiceField(choices=["error", "warning"])
    message = serializers.CharField()
    objects = serializers.DictField(child=serializers.CharField())


class ValidationReportSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    rules = serializers.DictField(child=serializers.CharField(), help_text="rule -> what it checks")
    violations = ViolationSerializer(many=True)


class TopologyImportRequestSerializer(StrictSerializer):
    spec = serializers.JSONField(
        help_text="The spec (inventory/topology/SPEC.md) as an object, or as YAML text"
    )
    scale = serializers.IntegerField(min_value=1, max_value=20, default=1)
    dry_run = serializers.BooleanField(default=False)


class ModelCountsSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class TopologyImportReportSerializer(serializers.Serializer):
    spec = serializers.CharField()
    scale = serializers.IntegerField()
    dry_run = serializers.BooleanField()
    duration_s = serializers.FloatField()
    run_id = serializers.IntegerField(allow_null=True)
    counts = serializers.DictField(child=ModelCountsSerializer())


class BulkItemErrorSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Position of the item in the request's list")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="field -> messages",
    )


class BulkErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = BulkItemErrorSerializer(
        many=True,
        required=False,
        help_text="One entry per bad item; absent when the request as a whole was refused "
        "(not JSON, a NUL character)",
    )


class ComponentSwapSerializer(serializers.ModelSerializer):
    """A part swapped in a slot: what left and what arrived (inventory.swaps)."""

    node = serializers.CharField(source="node.hostname", default=None, read_only=True)
    gpu_index = serializers.IntegerField(source="gpu.index", default=None, read_only=True)
    nic = serializers.CharField(source="nic.device", default=None, read_only=True)
    returned_from_slot = serializers.CharField(
        source="returned_from.slot", default=None, read_only=True,
        help_text="a returning (refurbished) part: the slot it left before",
    )
    swapped_by = serializers.CharField(source="swapped_by.username", default=None, read_only=True)

    class Meta:
        model = ComponentSwap
        fields = ["id", "kind", "node", "gpu_index", "nic", "cable", "cable_side", "position",
                  "slot", "serial_out", "serial_in", "uuid_out", "uuid_in", "mac_out", "mac_in",
                  "firmware_version_in", "returned_from", "returned_from_slot", "reference",
                  "note", "swapped_at", "swapped_by"]
        read_only_fields = fields


class SpareStockSerializer(serializers.ModelSerializer):
    """A spares shelf: parts of one type at one site, how many cases hold, how many are free."""

    reserved = serializers.IntegerField(read_only=True, help_text="held by open repair cases")
    free = serializers.IntegerField(read_only=True, help_text="on hand and not reserved")
    below_minimum = serializers.SerializerMethodField()

    class Meta:
        model = SpareStock
        fields = ["id", "kind", "site", "on_hand", "minimum", "reserved", "free", "below_minimum",
                  "updated_at"]
        read_only_fields = fields

    def get_below_minimum(self, stock) -> bool:
        return stock.free < stock.minimum


class SpareStockWriteSerializer(StrictSerializer):
    """Set a shelf's count (a delivery, a stock-take) and its minimum; creates the shelf."""

    kind = serializers.ChoiceField(choices=ComponentKind.choices)
    site = serializers.CharField(max_length=64)
    on_hand = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)
    minimum = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)


class SpareStockUpdateSerializer(StrictSerializer):
    on_hand = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)
    minimum = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)


class SpareReservationSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(source="stock.kind", read_only=True)
    site = serializers.CharField(source="stock.site", read_only=True)
    reserved_by = serializers.CharField(source="reserved_by.username", default=None,
                                        read_only=True)

    class Meta:
        model = SpareReservation
        fields = ["id", "kind", "site", "reference", "status", "reserved_at", "consumed_at",
                  "released_at", "swap", "reserved_by"]
        read_only_fields = fields

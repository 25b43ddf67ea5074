"""Fault tickets in the paper's taxonomy (Table 13), their history, and every raw intake.

A ticket names the affected components through nullable foreign keys (one of each kind at most:
a fault is about one GPU, or one NIC, or one switch port, plus the node or switch it sits in).
`gpu_serial` is copied when the ticket opens, so a GPU's history follows its serial even after a
tray is replaced and the inventory row is updated.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from faults.repair_workflow import RepairStatus, repair_move_targets, repair_targets
from faults.workflow import OPEN_STATUSES, Status, allowed_targets
from inventory.models import ComponentKind


class Category(models.TextChoices):
    """Table 13's rows, plus `unclassified` for a ticket nobody has triaged yet."""

    GPU = "gpu", "GPU (ECC / HW error / unresponsive)"
    NVLINK_NVSWITCH_PCIE = "nvlink_nvswitch_pcie", "NVLink / NVSwitch / PCIe switch"
    NIC_TRANSCEIVER = "nic_transceiver", "NIC / transceiver"
    INTERCONNECT_SWITCH = "interconnect_switch", "Interconnect switch (leaf/spine)"
    STORAGE_SWITCH = "storage_switch", "Storage switch"
    MISCONFIGURATION = "misconfiguration", "Misconfiguration"
    UNCLASSIFIED = "unclassified", "Unclassified (awaiting triage)"


# The subtypes each category allows (blank is always allowed).
SUBTYPES: dict[str, tuple[str, ...]] = {
    Category.GPU: ("ecc", "hardware_error", "unresponsive"),
    Category.NVLINK_NVSWITCH_PCIE: ("nvlink", "nvswitch", "pcie_switch"),
    Category.NIC_TRANSCEIVER: ("nic", "transceiver"),
    Category.INTERCONNECT_SWITCH: ("leaf", "spine"),
    Category.STORAGE_SWITCH: ("reboot", "hardware_error"),
    Category.MISCONFIGURATION: ("network", "software"),
    Category.UNCLASSIFIED: (),
}


class Severity(models.TextChoices):
    CRITICAL = "critical"  # capacity lost now (a node or a switch out)
    MAJOR = "major"  # degraded, action needed soon
    MINOR = "minor"  # watch


class Source(models.TextChoices):
    USER_REPORT = "user_report", "User report"
    PLATFORM = "platform", "Platform monitor"
    SLURM = "slurm", "Slurm"
    SWITCH = "switch", "Switch"
    ALERTMANAGER = "alertmanager", "Alertmanager"
    BMC = "bmc", "BMC event log"


class RecoveryMethod(models.TextChoices):
    WARM_REBOOT = "warm_reboot", "Warm reboot"
    COLD_REBOOT = "cold_reboot", "Cold reboot"
    GPU_RESET = "gpu_reset", "GPU reset"
    PART_REPLACED = "part_replaced", "Part replaced"
    CONFIGURATION_FIXED = "configuration_fixed", "Configuration fixed"
    NONE_NEEDED = "none_needed", "None needed"


class FaultTicket(models.Model):
    category = models.CharField(
        max_length=32, choices=Category.choices, default=Category.UNCLASSIFIED, db_index=True
    )
    subtype = models.CharField(max_length=32, blank=True)
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.MAJOR)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.NEW, db_index=True
    )
    summary = models.CharField(max_length=300)
    fingerprint = models.CharField(
        max_length=200,
        blank=True,
        db_index=True,
        help_text="component + kind, e.g. 'gpu:1654322004211|gpu'; one open ticket per value",
    )
    sources = models.JSONField(default=list, blank=True, help_text="intake channels, first first")
    alert_fingerprints = models.JSONField(
        default=list, blank=True, help_text="Alertmanager fingerprints of alerts attached"
    )
    event_count = models.PositiveIntegerField(default=1)
    last_event_at = models.DateTimeField(null=True, blank=True)

    node = models.ForeignKey(
        "inventory.Node", null=True, blank=True, on_delete=models.SET_NULL, related_name="faults"
    )
    gpu = models.ForeignKey(
        "inventory.GPU", null=True, blank=True, on_delete=models.SET_NULL, related_name="faults"
    )
    gpu_serial = models.CharField(max_length=64, blank=True, db_index=True)
    nic = models.ForeignKey(
        "inventory.NIC", null=True, blank=True, on_delete=models.SET_NULL, related_name="faults"
    )
    switch = models.ForeignKey(
        "inventory.Switch", null=True, blank=True, on_delete=models.SET_NULL, related_name="faults"
    )
    port = models.ForeignKey(
        "inventory.SwitchPort",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="faults",
    )
    cable = models.ForeignKey(
        "inventory.Cable", null=True, blank=True, on_delete=models.SET_NULL, related_name="faults"
    )
    gpu_suspect = models.BooleanField(
        default=False, help_text="the policy or a responder marked the GPU suspect"
    )
    job_id = models.CharField(
        "Slurm job", max_length=32, blank=True, db_index=True,
        help_text="the job whose end (NODE_FAIL) reported the fault",
    )
    impact = models.JSONField(
        default=dict, blank=True,
        help_text="what the fault hit when it opened (console.impact): jobs, tenants, nodes",
    )
    signal_cleared_at = models.DateTimeField(
        null=True, blank=True,
        help_text="when the signal that opened the ticket last cleared (port up, node healthy)",
    )

    responder = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="fault_tickets",
    )
    reopened_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reopened_as"
    )
    actions = models.ManyToManyField("portal.Action", blank=True, related_name="fault_tickets")

    detected_at = models.DateTimeField(db_index=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    triaged_at = models.DateTimeField(null=True, blank=True)
    mitigated_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    rma_part = models.CharField("RMA part", max_length=200, blank=True)
    rma_case_number = models.CharField("RMA case number", max_length=100, blank=True)
    rma_expected_at = models.DateField("RMA expected", null=True, blank=True)
    recovery_method = models.CharField(max_length=24, choices=RecoveryMethod.choices, blank=True)
    validation = models.JSONField(
        default=dict, blank=True,
        help_text="the last validation job's result (validate, then resume): passed, job_id, "
                  "exit_code, state, command, output_tail, finished_at, action",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-detected_at", "-pk"]
        indexes = [models.Index(fields=["status", "category"])]
        constraints = [
            # De-duplication under concurrent delivery: one open ticket per fingerprint.
            models.UniqueConstraint(
                fields=["fingerprint"],
                condition=Q(status__in=sorted(OPEN_STATUSES)) & ~Q(fingerprint=""),
                name="faultticket_one_open_per_fingerprint",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference}: {self.summary}"

    @property
    def reference(self) -> str:
        return f"FT-{self.pk}"

    @property
    def allowed_targets(self) -> tuple[str, ...]:
        return allowed_targets(self.status)

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def impact_target(self) -> str:
        """The ticket's component as a console.impact target (`<kind>:<name>`), or ""."""
        if self.gpu_id and self.node_id:
            return f"gpu:{self.node.hostname}:{self.gpu.index}"
        if self.nic_id:
            return f"nic:{self.nic.node.hostname}:{self.nic.device}"
        if self.port_id:
            return f"port:{self.port.switch.hostname}:{self.port.name}"
        if self.switch_id:
            return f"switch:{self.switch.hostname}"
        if self.node_id:
            return f"node:{self.node.hostname}"
        if self.cable_id:
            return f"cable:{self.cable_id}"
        return ""

    def component_label(self) -> str:
        if self.gpu_id:
            return f"{self.node.hostname if self.node_id else '?'} GPU{self.gpu.index}"
        if self.nic_id:
            return f"{self.nic.node.hostname} {self.nic.device}"
        if self.port_id:
            return f"{self.port.switch.hostname} {self.port.name}"
        if self.switch_id:
            return self.switch.hostname
        if self.node_id:
            return self.node.hostname
        if self.cable_id:
            return f"cable #{self.cable_id}"
        return "—"


class FaultTransition(models.Model):
    """One change of a ticket's status: who, when, from, to, why."""

    ticket = models.ForeignKey(FaultTicket, on_delete=models.CASCADE, related_name="transitions")
    from_status = models.CharField(max_length=20, choices=Status.choices)
    to_status = models.CharField(max_length=20, choices=Status.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField()
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"FT-{self.ticket_id}: {self.from_status} -> {self.to_status}"


class TimelineKind(models.TextChoices):
    EVENT = "event"  # an intake delivery (the first or a duplicate)
    NOTE = "note"  # free text by a person
    TRANSITION = "transition"
    AUTOMATIC = "automatic"  # a step the policy took (drain queued, GPU marked suspect)
    PROPOSAL = "proposal"  # a step the policy proposes to a person (reboot, reset, RMA)
    CLEARED = "cleared"  # the signal cleared: port up, node healthy, switch answering
    REPAIR = "repair"  # a vendor repair case opened, moved, or a part swapped
    LINKED = "linked"  # an Action taken elsewhere (node page, API) on the ticket's node or port


class TimelineEntry(models.Model):
    ticket = models.ForeignKey(FaultTicket, on_delete=models.CASCADE, related_name="timeline")
    at = models.DateTimeField()
    kind = models.CharField(max_length=12, choices=TimelineKind.choices)
    text = models.TextField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=16, choices=Source.choices, blank=True)
    action = models.ForeignKey(
        "portal.Action", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    intake = models.ForeignKey(
        "faults.IntakeRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["at", "pk"]
        verbose_name_plural = "timeline entries"

    def __str__(self) -> str:
        return f"FT-{self.ticket_id} {self.kind}: {self.text[:60]}"


class IntakeRecord(models.Model):
    """Every delivery to an intake channel, kept as received, accepted or not."""

    channel = models.CharField(max_length=16, choices=Source.choices, db_index=True)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    payload = models.JSONField(null=True, blank=True, help_text="the parsed body, when it parsed")
    raw_body = models.TextField(blank=True, help_text="the body as received")
    accepted = models.BooleanField(default=False)
    errors = models.JSONField(default=dict, blank=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    tickets = models.ManyToManyField(FaultTicket, blank=True, related_name="intake_records")

    class Meta:
        ordering = ["-received_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.channel} #{self.pk} ({'accepted' if self.accepted else 'refused'})"


class RepairCase(models.Model):
    """A vendor case opened from a ticket: who repairs what, under which case number, and the
    date of each step (faults/repair_workflow.py). A ticket may have several cases (a GPU tray,
    then the NVLink module), a case several parts."""

    ticket = models.ForeignKey(FaultTicket, on_delete=models.CASCADE, related_name="repair_cases")
    vendor = models.CharField(max_length=100)
    vendor_case_number = models.CharField(max_length=100, blank=True, db_index=True)
    component = models.CharField(
        max_length=16, choices=ComponentKind.choices, help_text="the failed component"
    )
    status = models.CharField(
        max_length=20, choices=RepairStatus.choices, default=RepairStatus.OPEN, db_index=True
    )
    note = models.TextField(blank=True)
    expected_at = models.DateField(null=True, blank=True, help_text="the vendor's promised date")
    opened_at = models.DateTimeField()
    waiting_for_part_at = models.DateTimeField(null=True, blank=True)
    part_received_at = models.DateTimeField(null=True, blank=True)
    installed_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["opened_at", "pk"]

    def __str__(self) -> str:
        return f"{self.reference} ({self.vendor} {self.vendor_case_number})"

    @property
    def reference(self) -> str:
        return f"RC-{self.pk}"

    @property
    def allowed_targets(self) -> tuple[str, ...]:
        return repair_targets(self.status)

    @property
    def move_choices(self) -> list[tuple[str, str]]:
        """The page's "Move to" options, the usual next step first (so the preselected one is
        never the step back: an installed case offers Closed before Waiting for part)."""
        return [(target, RepairStatus(target).label) for target in repair_move_targets(self.status)]

    @property
    def waited_for_part(self):
        """How long the node waited for the part: from the first request to the arrival (so
        far, while it is still awaited); None when no part was ever awaited."""
        if self.waiting_for_part_at is None:
            return None
        if self.part_received_at and self.part_received_at >= self.waiting_for_part_at:
            return self.part_received_at - self.waiting_for_part_at
        if self.status == RepairStatus.WAITING_FOR_PART:
            return timezone.now() - self.waiting_for_part_at
        return None


class RepairPart(models.Model):
    """One part of a case: its slot (the node, and its GPU, NIC or position), and once it went
    in, the inventory's record of the swap (serial out and in)."""

    case = models.ForeignKey(RepairCase, on_delete=models.CASCADE, related_name="parts")
    kind = models.CharField(max_length=16, choices=ComponentKind.choices)
    node = models.ForeignKey(
        "inventory.Node", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    gpu = models.ForeignKey(
        "inventory.GPU", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    nic = models.ForeignKey(
        "inventory.NIC", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    position = models.CharField(max_length=32, blank=True, help_text="PSU1, NVMe2, tray")
    description = models.CharField(max_length=200, blank=True, help_text="part number, FRU")
    swap = models.OneToOneField(
        "inventory.ComponentSwap",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="repair_part",
        help_text="the inventory's record of the part going in",
    )

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.case.reference} part #{self.pk}: {self.get_kind_display()}"

    @property
    def installed(self) -> bool:
        return self.swap_id is not None


class BmcEventCursor(models.Model):
    """How far the BMC event poll (faults.services.bmc_events) has read one node's event log.

    BMCs number entries per log and restart numbering when the log is cleared or wraps, so the
    cursor is the newest entry's time plus the ids seen at that very time (several entries often
    share a second); an entry is new when it is later, or as late and not among those ids."""

    node = models.OneToOneField(
        "inventory.Node", on_delete=models.CASCADE, related_name="bmc_event_cursor"
    )
    last_created = models.DateTimeField(null=True, blank=True)
    ids_at_last_created = models.JSONField(default=list, blank=True)
    polled_at = models.DateTimeField(null=True, blank=True, db_index=True)
    last_error = models.CharField(max_length=500, blank=True)
    # The system's Status.Health (OK, Warning, Critical) at the last poll that reached the BMC.
    health = models.CharField(max_length=16, blank=True)

    def __str__(self) -> str:
        return f"BMC event cursor of {self.node_id}"

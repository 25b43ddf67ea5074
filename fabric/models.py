"""What the fabric monitor remembers about switches: poll state, latest counters, a bounded
history, LLDP neighbors as last seen and the reconciliation findings.

The history is a ring buffer: each port has at most `FABRIC_HISTORY_SECONDS /
FABRIC_HISTORY_RESOLUTION_SECONDS` rows (one per time slot, overwritten a day later), so the
table cannot grow without bound however long the poller runs.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from fabric.drivers.sonic_flex_counters import STATES as ECN_COUNTER_STATES
from inventory.models import Switch, SwitchPort


class SwitchPollState(models.Model):
    """The outcome of the latest poll of one switch and a summary of its load."""

    switch = models.OneToOneField(Switch, on_delete=models.CASCADE, related_name="poll_state")
    last_polled_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(
        null=True, blank=True, help_text="Last time the switch answered a poll"
    )
    last_error = models.TextField(blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    poll_seconds = models.FloatField(null=True, blank=True, help_text="Duration of the last poll")
    ports_up = models.PositiveIntegerField(default=0)
    ports_down = models.PositiveIntegerField(default=0)
    in_bytes_per_second = models.FloatField(default=0)
    out_bytes_per_second = models.FloatField(default=0)
    pfc_pause_per_second = models.FloatField(default=0, help_text="PFC frames rx+tx per second")
    ecn_marked_per_second = models.FloatField(
        null=True, blank=True, help_text="Null while the switch does not collect ECN marks")
    ecn_counters = models.CharField(
        max_length=16, blank=True, choices=[(state, state) for state in ECN_COUNTER_STATES],
        help_text="Whether the switch collects ECN-marked queue counters (WRED_ECN_QUEUE flex "
                  "counters); empty until polled",
    )
    mean_utilization = models.FloatField(default=0, help_text="0..1 over oper-up ports")
    max_utilization = models.FloatField(default=0)
    hottest_port = models.CharField(
        max_length=64, blank=True,
        help_text="The busiest up port at the last poll (the lowest index among equals)")
    unmapped_ports = models.JSONField(
        default=list, blank=True,
        help_text="Ports the switch has that COUNTERS_PORT_NAME_MAP does not name: no counters",
    )

    def __str__(self) -> str:
        return f"poll state of {self.switch_id}"

    @property
    def reachable(self) -> bool:
        return self.last_seen_at is not None and self.consecutive_failures == 0


class PortCounterLatest(models.Model):
    """The latest cumulative counters of one port and the rates from the two latest samples.

    Rates are bytes (or frames, packets) per second; `pfc_*_rates` and the cumulative PFC and
    ECN fields are lists indexed by priority (PFC) or queue (ECN).
    """

    port = models.OneToOneField(SwitchPort, on_delete=models.CASCADE, related_name="counters")
    sampled_at = models.DateTimeField()
    # Null where the switch has no running state for the port (APPL_DB lacks it; intfutil
    # prints N/A): unknown, which is neither shut nor down.
    admin_up = models.BooleanField(null=True, blank=True, help_text="Null: unknown (N/A)")
    oper_up = models.BooleanField(null=True, blank=True, help_text="Null: unknown (N/A)")
    speed_mbps = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Running speed as intfutil reads it (STATE_DB while up, else APPL_DB)",
    )
    fec = models.CharField(max_length=16, blank=True)
    intent_differences = models.JSONField(
        default=dict, blank=True,
        help_text="{field: {configured, actual}} where CONFIG_DB differs from the running port",
    )
    counters_mapped = models.BooleanField(
        default=True, help_text="False: COUNTERS_PORT_NAME_MAP does not name the port"
    )
    # Cumulative counters; null where the switch does not report one (portstat's N/A).
    in_octets = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    out_octets = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    in_packets = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    out_packets = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    in_errors = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    out_errors = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    in_discards = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    out_discards = models.DecimalField(max_digits=24, decimal_places=0, null=True, blank=True)
    pfc_rx = models.JSONField(default=list)
    pfc_tx = models.JSONField(default=list)
    ecn_marked = models.JSONField(default=list)
    # Rates; null until a second sample exists.
    interval_seconds = models.FloatField(null=True, blank=True)
    in_bytes_per_second = models.FloatField(null=True, blank=True)
    out_bytes_per_second = models.FloatField(null=True, blank=True)
    pfc_rx_rates = models.JSONField(default=list)
    pfc_tx_rates = models.JSONField(default=list)
    ecn_marked_per_second = models.FloatField(null=True, blank=True)
    utilization = models.FloatField(null=True, blank=True, help_text="max(in, out) / line rate")
    counter_reset = models.BooleanField(
        default=False, help_text="A counter went backwards at the latest sample"
    )

    def __str__(self) -> str:
        return f"counters of port {self.port_id}"


class SwitchThroughputLatest(models.Model):
    """One switch's latest port counters summed by what the ports face (host NICs, other
    switches, nothing), written by each poll from the PortCounterLatest rows it stored
    (fabric.polling.refresh_switch_throughput). The aggregates API reads these few rows: summing
    a fleet's 180,000 counter rows per request took seconds at 100,000 GPUs. A cable change
    shows in them at the next poll."""

    class Facing(models.TextChoices):
        NIC = "nic", "host NICs"
        SWITCH = "switch", "other switches"
        OTHER = "other", "nothing cabled"

    switch = models.ForeignKey(Switch, on_delete=models.CASCADE, related_name="throughput")
    facing = models.CharField(max_length=8, choices=Facing.choices)
    summed_at = models.DateTimeField()
    ports = models.PositiveIntegerField(default=0)
    ports_up = models.PositiveIntegerField(default=0)
    in_bytes_per_second = models.FloatField(default=0)
    out_bytes_per_second = models.FloatField(default=0)
    ecn_marked_per_second = models.FloatField(default=0)
    ecn_ports_not_collected = models.PositiveIntegerField(default=0)
    pfc_rx_per_second = models.JSONField(default=list)
    pfc_tx_per_second = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["switch", "facing"], name="one_throughput_per_facing"),
        ]

    def __str__(self) -> str:
        return f"{self.switch_id} {self.facing}"


class PortCounterHistory(models.Model):
    """One time slot of a port's rates; slot = (epoch // resolution) % slots, rewritten when the
    ring comes round again."""

    port = models.ForeignKey(SwitchPort, on_delete=models.CASCADE, related_name="counter_history")
    slot = models.PositiveIntegerField()
    bucket_start = models.DateTimeField(db_index=True)
    in_bytes_per_second = models.FloatField(default=0)
    out_bytes_per_second = models.FloatField(default=0)
    pfc_rx_per_second = models.FloatField(default=0, help_text="All priorities")
    pfc_tx_per_second = models.FloatField(default=0, help_text="All priorities")
    ecn_marked_per_second = models.FloatField(null=True, blank=True,
                                              help_text="Null: not collected")
    utilization = models.FloatField(default=0)
    oper_up = models.BooleanField(null=True, blank=True,
                                  help_text="At the latest sample of the slot; null: unknown")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["port", "slot"], name="fabric_history_port_slot"),
        ]
        indexes = [models.Index(fields=["port", "bucket_start"], name="fabric_history_port_time")]

    def __str__(self) -> str:
        return f"port {self.port_id} at {self.bucket_start:%Y-%m-%d %H:%M}"


class LldpObservation(models.Model):
    """An LLDP neighbor one switch port reported at the latest LLDP collection."""

    port = models.OneToOneField(SwitchPort, on_delete=models.CASCADE, related_name="lldp")
    remote_system_name = models.CharField(max_length=255)
    remote_port_id = models.CharField(max_length=255)
    remote_port_description = models.CharField(max_length=255, blank=True)
    remote_chassis_id = models.CharField(max_length=64, blank=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.port_id} -> {self.remote_system_name} {self.remote_port_id}"


class LldpFinding(models.Model):
    """A difference between what LLDP sees and what the cable inventory says.

    Open findings are unique per (kind, key); a finding that disappears at a later
    reconciliation is resolved, and one that appears again opens a new row.
    """

    class Kind(models.TextChoices):
        MISSING = "missing", "missing (cabled, no LLDP neighbor)"
        UNEXPECTED = "unexpected", "unexpected (LLDP neighbor, no cable)"
        SWAPPED = "swapped", "swapped (two cables crossed)"
        MISMATCHED = "mismatched", "mismatched (another neighbor than the cable's)"

    kind = models.CharField(max_length=16, choices=Kind.choices, db_index=True)
    key = models.CharField(max_length=255, help_text="Stable identity, e.g. the ports involved")
    summary = models.CharField(max_length=500)
    switches = models.JSONField(default=list)
    ports = models.JSONField(default=list, help_text="'switch:port' names involved")
    nodes = models.JSONField(default=list)
    details = models.JSONField(default=dict)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-last_seen_at", "kind", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "key"],
                condition=Q(resolved_at__isnull=True),
                name="fabric_lldp_finding_open_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.summary

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


class Maintenance(models.Model):
    """Planned work on a switch: its nodes drained, its host-facing ports shut once the nodes are
    empty, and an end that undoes exactly that (DESIGN.md section 12). Planned work is not a
    fault: a port shut while its switch is under maintenance opens no ticket.

    The start is one Action (`fabric.leaf_maintenance`), the end another
    (`fabric.maintenance_end`); the row remembers what the start found and did, so the end starts
    only the ports this maintenance shut and resumes only the nodes it drained. A maintenance
    window ahead of time (a Slurm MAINT reservation, a calendar) would be a start time on this
    row and a reservation Action before the drain.
    """

    class Status(models.TextChoices):
        STARTING = "starting"  # draining, waiting for the nodes' jobs to end, shutting
        ACTIVE = "active"  # ports shut, nodes drained
        ENDING = "ending"  # the end Action is queued or running
        ENDED = "ended"
        FAILED = "failed"  # the start failed or was cancelled (see its Action)

    OPEN_STATUSES = (Status.STARTING, Status.ACTIVE, Status.ENDING)

    switch = models.ForeignKey(Switch, on_delete=models.PROTECT, related_name="maintenances")
    window = models.ForeignKey("fabric.MaintenanceWindow", null=True, blank=True,
                               on_delete=models.PROTECT, related_name="maintenances")
    reason = models.TextField()
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.STARTING,
                              db_index=True)
    start_action = models.OneToOneField("portal.Action", on_delete=models.PROTECT,
                                        related_name="maintenance_started")
    # A foreign key, not one-to-one: a maintenance window's one end Action ends all of its
    # switches' maintenances.
    end_action = models.ForeignKey("portal.Action", null=True, blank=True,
                                   on_delete=models.PROTECT, related_name="maintenances_ended")
    nodes = models.JSONField(default=list, help_text="Nodes behind the ports, drained by it")
    nodes_drained_before = models.JSONField(
        default=list, help_text="Of those, the ones already drained when it was requested "
                                "(as last synced from Slurm): its end leaves them drained")
    ports = models.JSONField(default=list, help_text="Host-facing ports it shuts")
    # Null until the start read the switch just before shutting: the ports that were up then,
    # which are the ones it shuts and its end starts again. Written before the shutdown, so a
    # start re-run after a lost worker does not take its own shut ports for ones down before.
    shut_ports = models.JSONField(null=True, blank=True)
    forced_reason = models.TextField(
        blank=True, help_text="Why the ports may be shut under running jobs (empty: it waits)")
    forced_over_jobs = models.JSONField(
        default=list, help_text="The running jobs the operator was shown when forcing")
    created_at = models.DateTimeField(auto_now_add=True)
    ports_shut_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One maintenance at a time per switch: two would each think the other's shut
            # ports were down before, and the first end would start the second's.
            models.UniqueConstraint(
                fields=["switch"], condition=Q(status__in=["starting", "active", "ending"]),
                name="fabric_one_open_maintenance_per_switch",
            ),
        ]

    def __str__(self) -> str:
        return f"maintenance of {self.switch} [{self.status}]"

    @property
    def nodes_to_resume(self) -> list[str]:
        before = set(self.nodes_drained_before)
        return [name for name in self.nodes if name not in before]


class MaintenanceWindow(models.Model):
    """Maintenance planned ahead of time: a start and an end, switches and nodes, a reason and
    an owner. From its creation a Slurm MAINT reservation holds its nodes over the planned
    time, so that no job is scheduled across it; at its start (by an operator, or by the
    periodic `fabric.tasks.run_maintenance_windows` once the time has come) each of its switches
    gets a `Maintenance` (drain, wait for the jobs, shut); its end ends those, which start
    exactly the ports they shut and resume exactly the nodes they drained.

    Nodes named on their own (not behind a switch of the window) are drained at its start too,
    and its start waits for their jobs the way a switch's maintenance does (`nodes_action`);
    the window remembers which of them were drained before, which its end leaves drained.
    Its end is one Action (`end_action`) over all of it.
    """

    class Status(models.TextChoices):
        SCHEDULED = "scheduled"  # planned; the reservation holds its nodes from planned_start
        RUNNING = "running"  # started: its switches' maintenances drain, shut, stay shut
        ENDED = "ended"  # the end Action is queued; the reservation is being deleted
        CANCELLED = "cancelled"  # never started; the reservation is being deleted

    OPEN_STATUSES = (Status.SCHEDULED, Status.RUNNING)

    reason = models.TextField()
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="+")
    planned_start = models.DateTimeField(db_index=True)
    planned_end = models.DateTimeField(db_index=True)
    switches = models.ManyToManyField(Switch, blank=True, related_name="maintenance_windows")
    nodes = models.JSONField(default=list, help_text="Nodes named on their own (a hostlist "
                                                     "expanded), besides the switches' nodes")
    reserved_nodes = models.JSONField(
        default=list, help_text="Every node its Slurm reservation holds: the switches' and these")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SCHEDULED,
                              db_index=True)
    reservation_action = models.ForeignKey(
        "portal.Action", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="The last Action that made Slurm's reservation match this window")
    nodes_action = models.ForeignKey(
        "portal.Action", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="The Action that waits until the nodes named on their own are drained and "
                  "empty (none when every node is behind a switch of the window)")
    nodes_drained_before = models.JSONField(
        default=list, help_text="Of the nodes named on their own, those already drained at its "
                                "start (as last synced from Slurm): its end leaves them drained")
    end_action = models.ForeignKey(
        "portal.Action", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="The one Action that starts exactly the ports it shut and resumes exactly the "
                  "nodes it drained")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["planned_start", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(planned_end__gt=F("planned_start")),
                                   name="fabric_window_ends_after_start"),
        ]

    def __str__(self) -> str:
        return f"maintenance window #{self.pk} [{self.status}]"

    @property
    def reservation_name(self) -> str:
        return f"portal-maint-{self.pk}"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN_STATUSES

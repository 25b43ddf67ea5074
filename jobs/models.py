"""Slurm jobs as the portal knows them (squeue while they live, sacct once they end), the
accounting watermark, and the simulated cluster's own state (jobs.drivers.simulator)."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Q
from django.utils import timezone

from inventory.models import Node
from jobs.buckets import size_bucket
from jobs.drivers.base import JOB_TEXT_LIMITS
from portal.models import Tenant

LIVE_STATES = ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING", "SUSPENDED")
# Live states in which a job holds its nodes and GPUs (analytics count its GPU time so far).
RUNNING_STATES = ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED")


class Job(models.Model):
    """One Slurm job. Live jobs come from squeue; accounting (sacct) fills in how it ended."""

    class Source(models.TextChoices):
        SQUEUE = "squeue"
        SACCT = "sacct"

    job_id = models.CharField(
        max_length=JOB_TEXT_LIMITS["job_id"], unique=True, help_text="Slurm job id, e.g. 4242"
    )
    name = models.CharField(max_length=JOB_TEXT_LIMITS["name"], blank=True)
    user = models.CharField(max_length=JOB_TEXT_LIMITS["user"], blank=True, db_index=True)
    account = models.CharField(max_length=JOB_TEXT_LIMITS["account"], blank=True, db_index=True)
    partition = models.CharField(
        max_length=JOB_TEXT_LIMITS["partition"], blank=True, db_index=True
    )
    state = models.CharField(
        max_length=JOB_TEXT_LIMITS["state"],
        db_index=True,
        help_text="RUNNING, PENDING, COMPLETED, FAILED, ...",
    )
    state_reason = models.CharField(max_length=200, blank=True, help_text="Why pending")
    exit_code = models.IntegerField(null=True, blank=True)
    signal = models.IntegerField(null=True, blank=True)
    submit_time = models.DateTimeField(null=True, blank=True, db_index=True)
    start_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True, db_index=True)
    elapsed_seconds = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Runtime of a finished job (sacct Elapsed)"
    )
    time_limit_minutes = models.PositiveIntegerField(null=True, blank=True)
    gpus = models.PositiveIntegerField(default=0, help_text="Allocated GPUs, all nodes together")
    node_count = models.PositiveIntegerField(default=0, db_index=True)
    # Slurm's own node list, kept even for names the inventory does not know.
    nodelist = models.TextField(blank=True, help_text="Hostlist expression, e.g. gpu[001-004]")
    nodes = models.ManyToManyField(Node, related_name="jobs", blank=True)
    tenant = models.ForeignKey(
        Tenant,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
        help_text="The tenant whose Slurm account ran the job",
    )
    # GPU-occupied time (paper Observation 1) of a finished job: elapsed x allocated GPUs.
    gpu_seconds = models.PositiveBigIntegerField(null=True, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices)
    # Set when a live job is no longer in squeue; accounting then says how it ended.
    left_queue_at = models.DateTimeField(null=True, blank=True)
    # A trace says nothing after it was taken: counting its running jobs up to now made the same
    # analytics answer grow every day (issue 28).
    observed_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A running job imported from a trace: when the trace was taken; its GPU time "
        "is counted up to here. Empty: counted up to now (squeue lists it)",
    )
    first_seen_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-submit_time", "-id"]
        indexes = [
            # The list's default view: live jobs, newest first.
            models.Index(fields=["state", "-submit_time"], name="job_state_submit"),
            models.Index(fields=["tenant", "-submit_time"], name="job_tenant_submit"),
            models.Index(
                fields=["state"],
                condition=Q(left_queue_at__isnull=True, state="RUNNING"),
                name="job_running_in_queue",
            ),
            # Analytics (jobs.analytics): the running half of "in the period" (finished jobs use
            # end_time's index), so the OR of both is two index scans, not a table scan ...
            models.Index(
                fields=["start_time"],
                condition=Q(left_queue_at__isnull=True, state__in=RUNNING_STATES),
                name="job_running_started",
            ),
            # ... and daily submissions read only this index (PostgreSQL; SQLite ignores
            # INCLUDE and keeps a plain one).
            models.Index(
                fields=["submit_time"], include=["node_count", "gpus"], name="job_submitted_size",
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} ({self.state})"

    @property
    def is_live(self) -> bool:
        return self.state in LIVE_STATES and self.left_queue_at is None

    @property
    def size_bucket(self) -> str:
        return size_bucket(self.node_count)

    def runtime_seconds(self, now: datetime | None = None) -> int:
        """Elapsed for a finished job; time since start for a running one (up to when its trace
        was taken, for one imported from a trace); 0 before start."""
        if self.elapsed_seconds is not None and not self.is_live:
            return int(self.elapsed_seconds)
        if self.start_time is None:
            return 0
        end = self.end_time or now or timezone.now()
        if self.observed_until is not None:
            end = min(end, self.observed_until)
        return max(0, int((end - self.start_time).total_seconds()))

    def gpu_seconds_so_far(self, now: datetime | None = None) -> int:
        """GPU-occupied time: stored for finished jobs, counted up to now (or `observed_until`)
        for running ones."""
        if self.gpu_seconds is not None and not self.is_live:
            return int(self.gpu_seconds)
        return self.runtime_seconds(now) * self.gpus


class SyncWatermark(models.Model):
    """How far an incremental import has read, e.g. accounting up to a job end time."""

    name = models.CharField(max_length=64, unique=True)
    value = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name} @ {self.value:%Y-%m-%d %H:%M:%S}"


class SimulatedCluster(models.Model):
    """The simulator driver's live state (nodes, running and pending jobs, random stream
    positions) as one JSON document, so the web process and every worker share one cluster.

    `version` is bumped on every write; a writer that lost a race retries (works on SQLite too,
    where SELECT ... FOR UPDATE is not available).
    """

    name = models.CharField(max_length=64, unique=True)
    state = models.JSONField(default=dict)
    version = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"simulated cluster {self.name}"


class SimulatedFinishedJob(models.Model):
    """A job that ended in the simulated cluster: what its `sacct` would report."""

    cluster = models.ForeignKey(
        SimulatedCluster, on_delete=models.CASCADE, related_name="finished_jobs"
    )
    job_id = models.CharField(max_length=32)
    end_time = models.DateTimeField()
    record = models.JSONField()

    class Meta:
        indexes = [models.Index(fields=["cluster", "end_time"], name="simjob_cluster_end")]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "job_id"], name="simjob_unique_per_cluster")
        ]

    def __str__(self) -> str:
        return f"simulated job {self.job_id}"

"""What the portal keeps of GPU telemetry: one summary per finished GPU job.

Observation 3 is an aggregate over every finished GPU job of a period (a year on SAKURAONE is a
million jobs). Reading all of them from Prometheus and joining them in Python per request does
not scale, so each job's utilisation is asked once, after its samples have settled
(`telemetry.services.summarise_finished_jobs`, a periodic task), and the observation is then one
aggregate in the database beside the jobs it groups.
"""

from __future__ import annotations

from django.db import models


class JobUtilisationSummary(models.Model):
    """One row per finished GPU job, written as soon as accounting records it (pending: no
    `summarised_at` yet), then filled with what Prometheus says. The job's columns Observation 3
    groups and filters by are copied here, so the observation reads this table alone (a join
    with a million jobs and the count of pending jobs over them took 1.8 s, issue 28 item 3)."""

    job = models.OneToOneField(
        "jobs.Job", on_delete=models.CASCADE, primary_key=True, related_name="utilisation_summary"
    )
    # Copies of the job's columns (telemetry.services.record_finished_jobs keeps them).
    end_time = models.DateTimeField(null=True)
    # The index of the job's node-count bucket in jobs.buckets.SIZE_BUCKETS.
    node_bucket = models.SmallIntegerField(default=-1)
    # The job's GPU time: gpu_seconds as accounted, else runtime x GPUs.
    gpu_time_weight = models.BigIntegerField(default=0)
    tenant = models.ForeignKey(
        "portal.Tenant", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
        db_index=False,  # jobsummary_tenant_end below serves it
    )
    # The mean of the job's GPUs' mean utilisation; None: Prometheus had no sample of the job.
    mean_percent = models.FloatField(null=True, blank=True)
    # The share of its GPU time below 20% (0..1); None where no step of the subquery fell on a
    # sample (a job shorter than the step).
    low_share = models.FloatField(null=True, blank=True)
    gpus_reporting = models.PositiveIntegerField(default=0)
    # None: pending, the job finished and Prometheus was not asked yet.
    summarised_at = models.DateTimeField(null=True, blank=True)
    # False: asked before the job's last samples were surely scraped; asked again later.
    settled = models.BooleanField(default=False, db_index=True)

    class Meta:
        verbose_name = "job utilisation summary"
        verbose_name_plural = "job utilisation summaries"
        indexes = [
            # Observation 3 over a long period reads this index alone, already in bucket order:
            # no sort before percentile_disc groups, no heap (PostgreSQL; a whole year of a
            # million jobs 1.5 s -> 0.7 s under load, bench/README.md).
            models.Index(
                fields=["node_bucket", "end_time"],
                include=["job_id", "mean_percent", "low_share", "gpu_time_weight",
                         "summarised_at", "tenant_id"],
                name="jobsummary_bucket_end",
            ),
            # A short period's rows, and the jobs that just ended; one tenant's.
            models.Index(fields=["end_time"], name="jobsummary_end"),
            models.Index(fields=["tenant", "end_time"], name="jobsummary_tenant_end"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id}: {self.mean_percent}%"

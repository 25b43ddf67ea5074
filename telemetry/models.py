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
    job = models.OneToOneField(
        "jobs.Job", on_delete=models.CASCADE, primary_key=True, related_name="utilisation_summary"
    )
    # The mean of the job's GPUs' mean utilisation; None: Prometheus had no sample of the job.
    mean_percent = models.FloatField(null=True, blank=True)
    # The share of its GPU time below 20% (0..1); None where no step of the subquery fell on a
    # sample (a job shorter than the step).
    low_share = models.FloatField(null=True, blank=True)
    gpus_reporting = models.PositiveIntegerField(default=0)
    summarised_at = models.DateTimeField()
    # False: asked before the job's last samples were surely scraped; asked again later.
    settled = models.BooleanField(default=False, db_index=True)

    class Meta:
        verbose_name = "job utilisation summary"
        verbose_name_plural = "job utilisation summaries"

    def __str__(self) -> str:
        return f"job {self.job_id}: {self.mean_percent}%"

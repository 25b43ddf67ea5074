from django.db import models


class PeriodicTaskState(models.Model):
    """One row per periodic task (a beat schedule entry's task): whether a run holds it now, how
    the last one went, and how often a run overran its interval or was skipped because the
    previous run still held it (portal/periodic.py)."""

    task = models.CharField(max_length=100, primary_key=True)
    # Set while a run holds the task; a run that finds it set (and not yet stale) is skipped.
    running_since = models.DateTimeField(null=True, blank=True)
    # host:pid of the process that ran (or runs) it: which worker, or the embedded scheduler.
    last_run_by = models.CharField(max_length=200, blank=True)
    interval_seconds = models.FloatField(default=0)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_duration_seconds = models.FloatField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # Runs that took longer than the interval, and runs not started because one still ran.
    overran_runs = models.PositiveIntegerField(default=0)
    skipped_runs = models.PositiveIntegerField(default=0)
    last_overrun_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task"]

    def __str__(self) -> str:
        return self.task

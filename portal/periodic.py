"""Periodic work that never stacks: one run of a task at a time, overruns skipped and counted.

A beat schedule entry fires every `interval`. When a run takes longer (a fabric poll of a large
fleet, a sync against a slow controller), starting the next one beside it only doubles the load
that made it slow. So each periodic task holds a lease in the database while it runs
(`PeriodicTaskState.running_since`): a run that finds the lease held is skipped and logged, and
the task's row counts it, so the dashboard's Services card shows which work cannot keep up.
The lease lives in the database rather than in a process, because production runs the tasks in
Celery worker processes and the embedded default in a scheduler process of its own
(portal/scheduler.py): both go through `NonOverlappingTask`.

A lease expires after a few intervals (portal/services/periodic.py), so a worker killed in the
middle of a run holds the task only that long.
"""

from __future__ import annotations

from celery import Task
from django.conf import settings


def schedule_interval(task_name: str) -> float | None:
    """The interval of the beat entry that runs `task_name`, or None when none does."""
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        if entry["task"] == task_name:
            return float(entry["schedule"])
    return None


BEAT_HEADER = "celery_beat_task"


def started_by_schedule(request) -> bool:
    # A worker merges a message's custom headers into the request; Task.apply keeps them apart.
    return bool(getattr(request, BEAT_HEADER, None) or (request.headers or {}).get(BEAT_HEADER))


class NonOverlappingTask(Task):
    """Base of every periodic task: a run waits for nobody and never runs beside itself.

    Only a run the schedule started takes the lease: Celery beat marks its messages with the
    `celery_beat_task` header (celery/beat.py, Scheduler.apply_async) and the embedded
    scheduler sets the same header. Called by hand (a test, a shell, an operator's one-off),
    the task runs as written.
    """

    def __call__(self, *args, **kwargs):
        interval = schedule_interval(self.name)
        if interval is None or not started_by_schedule(self.request):
            return super().__call__(*args, **kwargs)
        # Imported here: task modules load with the Celery app, before models may be imported.
        from portal.services.periodic import claim_periodic_run, finish_periodic_run

        claim = claim_periodic_run(self.name, interval)
        if claim is None:
            return {"skipped": "previous run still running"}
        try:
            result = super().__call__(*args, **kwargs)
        except Exception as error:
            finish_periodic_run(claim, error=f"{type(error).__name__}: {error}")
            raise
        finish_periodic_run(claim)
        return result

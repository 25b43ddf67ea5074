"""Celery tasks of the faults app: thin wrappers around faults.services, run by beat."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from portal.periodic import NonOverlappingTask


@shared_task(
    name="faults.tasks.poll_bmc_events",
    base=NonOverlappingTask,
    acks_late=True,
    ignore_result=True,
)
def poll_bmc_events() -> dict:
    from faults.services.bmc_events import poll_bmc_events as poll

    return asdict(poll())

"""Celery tasks of the telemetry app: thin wrappers around telemetry.services, run by beat."""

from __future__ import annotations

import logging
from dataclasses import asdict

from celery import shared_task

from portal.periodic import NonOverlappingTask

logger = logging.getLogger(__name__)


@shared_task(
    name="telemetry.tasks.summarise_finished_jobs",
    base=NonOverlappingTask,
    acks_late=True,
    ignore_result=True,
)
def summarise_finished_jobs() -> dict:
    from telemetry.drivers.base import TelemetryUnavailable
    from telemetry.services import summarise_finished_jobs as summarise

    try:
        return asdict(summarise())
    except TelemetryUnavailable as error:
        logger.warning("job utilisation summaries skipped: %s", error)
        return {}

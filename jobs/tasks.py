"""Celery tasks of the jobs app: thin wrappers around jobs.sync, run by beat (settings' jobs
block). A controller that does not answer is logged and retried at the next beat."""

from __future__ import annotations

import logging

from celery import shared_task

from portal.periodic import NonOverlappingTask

logger = logging.getLogger(__name__)


@shared_task(
    name="jobs.tasks.sync_node_states", base=NonOverlappingTask, acks_late=True, ignore_result=True
)
def sync_node_states(names: list[str] | None = None) -> int:
    """Every node (the beat), or the named ones (after an Action changed them)."""
    from jobs.drivers.base import SlurmUnavailable
    from jobs.sync import sync_node_states as sync

    try:
        return len(sync(names=names))
    except SlurmUnavailable as error:
        logger.warning("node-state sync skipped: %s", error)
        return 0


@shared_task(
    name="jobs.tasks.sync_live_jobs", base=NonOverlappingTask, acks_late=True, ignore_result=True
)
def sync_live_jobs() -> dict:
    from jobs.drivers.base import SlurmUnavailable
    from jobs.sync import sync_live_jobs as sync

    try:
        result = sync()
    except SlurmUnavailable as error:
        logger.warning("live job sync skipped: %s", error)
        return {}
    return {"created": result.created, "updated": result.updated, "left": result.left_queue}


@shared_task(
    name="jobs.tasks.import_accounting", base=NonOverlappingTask, acks_late=True, ignore_result=True
)
def import_accounting() -> dict:
    from jobs.drivers.base import SlurmUnavailable
    from jobs.sync import import_accounting as run_import

    try:
        result = run_import()
    except SlurmUnavailable as error:
        logger.warning("accounting import skipped: %s", error)
        return {}
    return {"created": result.created, "updated": result.updated}

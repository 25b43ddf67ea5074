"""Celery tasks of the portal app: thin wrappers that fetch by id and call a service.

Neither returns a result anyone reads: the Action row is the result, so nothing is stored in
(or waited for from) the result backend.
"""

from celery import shared_task

from portal.periodic import NonOverlappingTask


@shared_task(
    name="portal.tasks.run_action",  # services.actions.RUN_ACTION_TASK sends it by this name
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_action(action_id: int) -> str:
    from celery import current_task

    from portal.services.actions import run_action as run_action_service

    worker = getattr(current_task.request, "hostname", None) or "in-process"
    return run_action_service(action_id=action_id, worker=worker)


@shared_task(
    name="portal.tasks.sweep_stuck_actions",
    base=NonOverlappingTask,
    acks_late=True,
    ignore_result=True,
)
def sweep_stuck_actions() -> dict:
    from portal.services.actions import sweep_stuck_actions as sweep

    return sweep()

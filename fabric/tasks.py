"""Celery tasks of the fabric monitor: thin wrappers over fabric.polling and fabric.lldp."""

from celery import shared_task

from portal.periodic import NonOverlappingTask


@shared_task(name="fabric.tasks.poll_fabric_counters", base=NonOverlappingTask, acks_late=True)
def poll_fabric_counters() -> dict:
    """Poll every switch's ports and counters once (beat: FABRIC_POLL_INTERVAL)."""
    from fabric.polling import poll_fabric

    return poll_fabric().as_dict()


@shared_task(name="fabric.tasks.reconcile_fabric_lldp", base=NonOverlappingTask, acks_late=True)
def reconcile_fabric_lldp() -> dict:
    """Read LLDP from every switch and compare with the cables (beat: FABRIC_LLDP_INTERVAL)."""
    from fabric.lldp import collect_and_reconcile

    run = collect_and_reconcile()
    return {
        "checked": len(run.checked),
        "failed": run.failed,
        "findings": len(run.findings),
        "opened": [finding.key for finding in run.opened],
        "resolved": run.resolved,
    }


@shared_task(
    name="fabric.tasks.check_running_jobs_rail_health", base=NonOverlappingTask, acks_late=True
)
def check_running_jobs_rail_health() -> dict:
    """Rail imbalance of every running job (beat: with the counter poll)."""
    from fabric.rail_health import check_running_jobs

    return {"imbalanced": check_running_jobs()}


@shared_task(name="fabric.tasks.run_maintenance_windows", base=NonOverlappingTask,
             acks_late=True)
def run_maintenance_windows() -> dict:
    """Start and end maintenance windows at their planned times
    (beat: MAINTENANCE_WINDOW_CHECK_SECONDS)."""
    from dataclasses import asdict

    from fabric.maintenance_windows import run_due_windows

    return asdict(run_due_windows())

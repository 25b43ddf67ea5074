"""Validate, then resume: the "slurm.validate" Action puts a node that a repair or reboot left
drained back into Slurm only for a validation job, and into service only if that job passes.

Phases (the Action's result carries the phase between attempts; no worker waits on Slurm):
1. a maintenance reservation (MAINT,IGNORE_JOBS) on the node for the portal's account, so that
   no other job lands on it once it is resumed; resume it; submit the site's validation command
   into the reservation on that node (`sbatch --reservation -w node -N1 --wrap`);
2. ActionWaiting until the job has finished;
3. passed: delete the reservation (the node is in service); failed: drain the node again with
   the reason "<ref>: validation failed: ..." and delete the reservation.
A node whose Slurm reason starts with "NHC:" belongs to the node health check, which resumes it
itself: the portal refuses to validate (or resume) it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from django.utils import timezone

from jobs.action_handlers import slurm_attempt_lease_seconds
from jobs.drivers.base import (
    BatchJobRequest,
    SlurmError,
    SlurmReservation,
    SlurmUnavailable,
    get_slurm_driver,
)
from portal.actions.registry import (
    ActionWaiting,
    PermanentActionError,
    TransientActionError,
    register_action_handler,
)

VALIDATE_ACTION = "slurm.validate"
VALIDATION_RESERVATION_FLAGS = ("MAINT", "IGNORE_JOBS")
NHC_REASON_PREFIX = "NHC:"
OUTPUT_TAIL_LINES = 20


def validation_reservation_name(ref: str) -> str:
    return f"validate-{ref}"


def validation_job_name(ref: str) -> str:
    return f"validate-{ref}"


def owned_by_node_health_check(reason: str) -> bool:
    """NHC's convention: a reason starting "NHC:" is NHC's to clear, not the portal's."""
    return reason.strip().startswith(NHC_REASON_PREFIX)


def validation_parameters(
    *,
    node: str,
    ref: str,
    command: str,
    account: str,
    minutes: int,
    output_path: str = "",
) -> dict:
    """The Action's parameters: everything an attempt needs, fixed when it is asked for."""
    return {
        "node": node,
        "ref": ref,
        "command": command,
        "account": account,
        "minutes": int(minutes),
        "output_path": output_path,
        "deadline": (timezone.now() + timedelta(minutes=int(minutes))).isoformat(),
    }


def _slurm(operation, *args):
    try:
        return operation(*args)
    except SlurmUnavailable as error:
        raise TransientActionError(f"Slurm controller unreachable: {error}") from error
    except SlurmError as error:
        raise PermanentActionError(str(error)) from error


def _output_tail(path: str) -> list[str]:
    if not path:
        return []
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []  # the output lives on the node; not every site shares it with the portal
    return lines[-OUTPUT_TAIL_LINES:]


@register_action_handler(
    VALIDATE_ACTION,
    lease_seconds=slurm_attempt_lease_seconds,
    description="Reserve a drained node, resume it, run the validation job on it, and keep it "
    "in service only if the job passes (drain it again otherwise).",
    max_attempts=10,
)
def validate_node(action) -> dict:
    parameters = action.parameters
    node, ref = parameters["node"], parameters["ref"]
    reservation = validation_reservation_name(ref)
    driver = get_slurm_driver()
    progress = action.result if isinstance(action.result, dict) else {}
    job_id = progress.get("job_id")
    if not job_id:
        (state,) = _slurm(driver.nodes, [node])
        if owned_by_node_health_check(state.reason):
            raise PermanentActionError(
                f"{node} was drained by the node health check ({state.reason!r}); NHC resumes "
                "it itself once its checks pass, the portal does not"
            )
        now = timezone.now()
        _slurm(
            driver.create_or_update_reservation,
            SlurmReservation(
                name=reservation,
                accounts=(parameters["account"],),
                node_names=(node,),
                start=now,
                end=now + timedelta(minutes=int(parameters["minutes"]) + 5),
                flags=VALIDATION_RESERVATION_FLAGS,
            ),
        )
        _slurm(driver.resume, [node])
        job_id = _slurm(
            driver.submit_batch_job,
            BatchJobRequest(
                node_name=node,
                command=parameters["command"],
                job_name=validation_job_name(ref),
                account=parameters["account"],
                reservation=reservation,
                time_limit_minutes=int(parameters["minutes"]),
                output_path=parameters.get("output_path", ""),
            ),
        )
    job = _slurm(driver.batch_job_state, job_id)
    waiting = {
        "phase": "running",
        "node": node,
        "job_id": job_id,
        "reservation": reservation,
        "progress": f"validation job {job_id} on {node}: {job.state}",
    }
    if not job.finished:
        if timezone.now() < datetime.fromisoformat(parameters["deadline"]) + timedelta(minutes=5):
            raise ActionWaiting(waiting, check_again_in=5)
        _slurm(driver.drain, [node], f"{ref}: validation failed: job {job_id} never finished")
        _slurm(driver.delete_reservation, reservation)
        raise PermanentActionError(
            f"validation job {job_id} on {node} had not finished by its deadline ({job.state}); "
            f"{node} is drained again"
        )
    result = {
        "phase": "done",
        "node": node,
        "job_id": job_id,
        "state": job.state,
        "exit_code": job.exit_code,
        "passed": job.passed,
        "output_tail": _output_tail(parameters.get("output_path", "")),
    }
    if not job.passed:
        _slurm(
            driver.drain,
            [node],
            f"{ref}: validation failed: job {job_id} {job.state} exit {job.exit_code}",
        )
    _slurm(driver.delete_reservation, reservation)
    return result


def request_validation(*, node, ref: str, reason: str, requested_by=None, via: str = "api"):
    """Queue "validate, then resume" for a drained `node` on behalf of `ref` (a ticket): the
    site's command from settings, fixed in the Action's parameters when it is asked for."""
    from django.conf import settings

    from portal.services.actions import enqueue_action

    if owned_by_node_health_check(node.slurm_reason):
        from portal.errors import Conflict

        raise Conflict(
            {
                "step": [
                    f"{node.hostname} was drained by the node health check "
                    f"({node.slurm_reason!r}); NHC resumes it once its checks pass."
                ]
            }
        )
    return enqueue_action(
        kind=VALIDATE_ACTION,
        target=node.hostname,
        reason=reason,
        requested_by=requested_by,
        parameters=validation_parameters(
            node=node.hostname,
            ref=ref,
            command=settings.FAULTS_VALIDATION_COMMAND,
            account=settings.FAULTS_VALIDATION_ACCOUNT,
            minutes=settings.FAULTS_VALIDATION_MINUTES,
            output_path=(
                str(Path(settings.FAULTS_VALIDATION_OUTPUT_DIR) / f"{validation_job_name(ref)}.out")
                if settings.FAULTS_VALIDATION_OUTPUT_DIR else ""
            ),
        ),
        via=via,
    )

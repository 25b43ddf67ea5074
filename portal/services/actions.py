"""Actions: enqueue inside the caller's transaction, run once, retry, recover, cancel.

The life of an Action (DESIGN.md section 3):
  enqueue_action()   row + audit + event in the caller's transaction; the task is sent on commit
                     (a quick one this process has room for is claimed by it in that same
                     transaction and run on its runner threads after the commit, _ActionRunner)
  run_action()       claim the row under a lock, call the handler outside any transaction,
                     record the outcome under the lock again
  sweep_stuck_actions()
                     re-send Actions whose message was lost or whose worker died
A re-delivered message finds the row terminal (or leased by a live attempt) and does nothing.
"""

from __future__ import annotations

import atexit
import copy
import logging
import os
import queue
import random
import socket
import threading
import time
import uuid
from contextlib import nullcontext
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    connections,
    transaction,
)
from django.db.models import F
from django.utils import timezone

from portal.actions.registry import (
    ActionHandler,
    ActionWaiting,
    PermanentActionError,
    TransientActionError,
    get_action_handler,
)
from portal.errors import Conflict, InvalidInput
from portal.models import Action, ActionAttempt, ActionStatus
from portal.realtime import publish
from portal.realtime.events import wait_until_published
from portal.selectors import ATTEMPT_ROW_FIELDS, action_attempt_rows
from portal.services.audit import record_change

logger = logging.getLogger(__name__)

# The worker's entry point for an Action (portal/tasks.py), sent by name: the task calls this
# module, so importing the task module from here would close a circle.
RUN_ACTION_TASK = "portal.tasks.run_action"
# A message may arrive a little before `not_before` when clocks differ between hosts.
EARLY_DELIVERY_TOLERANCE = timedelta(seconds=1)
MAX_ERROR_LENGTH = 4000
# Called with each new Action inside the transaction that queued it: the apps above the portal
# follow what is done to what they watch (faults links a drain to the node's open ticket).
_queued_listeners: list[tuple] = []


def register_action_queued_listener(listener, *, only_if=None) -> None:
    """`listener(action)` runs for each new Action, in a savepoint of the queuing transaction; a
    listener that fails is logged and never stops the Action.

    `only_if(action)`, when given, is one plain read run first, outside any savepoint: the
    listener runs only when it says so. Every drain pays for its listeners before Slurm hears
    of it, and a savepoint is two more round trips to the database; most Actions concern
    nothing a listener follows (a drained node with no open ticket)."""
    if (listener, only_if) not in _queued_listeners:
        _queued_listeners.append((listener, only_if))


def _tell(listeners: list[tuple], action: Action) -> None:
    for listener, only_if in list(listeners):
        try:
            if only_if is not None and not only_if(action):
                continue
            with transaction.atomic():
                listener(action)
        except Exception:
            logger.exception("Action listener %r failed on Action %s", listener, action.pk)


# Called with each Action that has just ended (succeeded or failed), inside the transaction
# that records its end: faults records a validation job's result on its ticket, so the ticket
# says it exactly when the Action does.
_finished_listeners: list[tuple] = []


def register_action_finished_listener(listener, *, only_if=None) -> None:
    """`listener(action)` runs for each Action that ends, in a savepoint of the transaction that
    ends it; a listener that fails is logged and never changes the Action's outcome. `only_if`
    as for register_action_queued_listener (a listener of one kind of Action says so there)."""
    if (listener, only_if) not in _finished_listeners:
        _finished_listeners.append((listener, only_if))



def enqueue_action(
    *,
    kind: str,
    target: str,
    reason: str,
    requested_by=None,
    parameters: dict | None = None,
    idempotency_key: str | None = None,
    via: str = "api",
) -> tuple[Action, bool]:
    """Write an Action in the caller's transaction and send it to a worker on commit.

    Returns (action, created). With an idempotency key that the same requester used before,
    the earlier Action is returned and nothing new is queued, so a client may safely repeat a
    request; another user's key of the same text is theirs alone (`idempotency_scope`).
    """
    handler = _handler_or_invalid(kind)
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput(
            {"reason": ["A reason is required: it is recorded and shown to others."]}
        )
    if not target or not target.strip():
        raise InvalidInput({"target": ["Say what the Action acts on."]})
    if idempotency_key is not None and not (1 <= len(idempotency_key) <= 128):
        raise InvalidInput({"idempotency_key": ["Use 1 to 128 characters."]})

    scope = idempotency_scope(requested_by)
    # Claimed by this process as it is written, when it will run here: no claim of its own
    # between the commit and the handler (on PostgreSQL here that was one more committed
    # statement, 2-3 ms, on the path of every drain).
    runner = _runner_with_room(handler)
    with transaction.atomic():
        if idempotency_key:
            existing = Action.objects.filter(
                idempotency_scope=scope, idempotency_key=idempotency_key
            ).first()
            if existing is not None:
                return _same_request_or_conflict(existing, kind, target), False
        try:
            # A savepoint, so a racing duplicate key must not doom the caller; without a key
            # there is nothing to race, and no savepoint to pay on every drain request.
            with transaction.atomic() if idempotency_key else nullcontext():
                action = Action(
                    kind=kind,
                    target=target.strip(),
                    parameters=parameters or {},
                    reason=reason,
                    requested_by=requested_by,
                    idempotency_key=idempotency_key or None,
                    idempotency_scope=scope if idempotency_key else "",
                    max_attempts=handler.max_attempts,
                    not_before=timezone.now(),
                )
                attempt = _claimed_as_written(action, handler, runner) if runner else None
                action.save(force_insert=True)
                if attempt is not None:
                    attempt.action = action
                    attempt.save(force_insert=True)
        except IntegrityError:
            existing = Action.objects.get(idempotency_scope=scope, idempotency_key=idempotency_key)
            return _same_request_or_conflict(existing, kind, target), False
        record_change(
            actor=requested_by,
            operation="action",
            instance=action,
            after=action_summary(action),
            note=f"requested: {reason}",
            via=via,
        )
        _tell(_queued_listeners, action)
        if attempt is not None:
            # Browsers hear it running at once; its runner's "succeeded" follows through the
            # same ordered publisher, so it cannot be overtaken.
            publish_action(action, attempt_log=[_attempt_row(attempt)])
            claimed = copy.copy(action)  # the caller goes on with its own (a response shows it)
            transaction.on_commit(
                lambda: runner.run_claimed(claimed, handler, attempt.claim_token))
        elif settings.CELERY_TASK_ALWAYS_EAGER:
            # In-process tasks (the embedded default) run to the end inside the send: "queued"
            # must be published before it, or browsers hear queued after succeeded and keep it.
            publish_action(action)
            transaction.on_commit(lambda: send_action_task(action.pk))
        else:
            # "queued" leaves for Redis before the task does: events go out on a publisher
            # thread, and a worker's "running" (another process) must not overtake it, or
            # browsers keep showing a running Action as queued.
            publish_action(action)
            transaction.on_commit(lambda: _send_after_published_events(action.pk))
    return action, True


def _runner_with_room(handler: ActionHandler) -> _ActionRunner | None:
    """This process's runner, when the Action is a quick one it should carry out itself: with
    a broker (in-process tasks run in the request anyway), runner threads, and room on them."""
    if (not handler.runs_where_queued or settings.ACTION_RUNNER_THREADS <= 0
            or settings.CELERY_TASK_ALWAYS_EAGER):
        return None
    runner = _action_runner()
    return runner if runner.has_room() else None


def _claimed_as_written(action: Action, handler: ActionHandler,
                        runner: _ActionRunner) -> ActionAttempt:
    """Make the unsaved `action` running under a claim of `runner`'s, with its first attempt
    (unsaved) as _claim records one. Committed with the request: if this process dies before
    or during the run, the lease runs out and the sweeper re-sends it as for any lost worker."""
    now = action.not_before
    claim_token = uuid.uuid4().hex
    action.status, action.attempts, action.claim_token = ActionStatus.RUNNING, 1, claim_token
    action.started_at = now
    action.lease_expires_at = now + timedelta(seconds=handler.lease_for(action))
    return ActionAttempt(number=1, worker=runner.worker[:200], claim_token=claim_token,
                         started_at=now)


def run_action(*, action_id: int, worker: str = "") -> str:
    """Carry out one Action if it is due and not already done. Returns what happened, in words."""
    claim_token = uuid.uuid4().hex
    claimed = _reconnecting_once(_claim, action_id, claim_token, worker)
    if isinstance(claimed, str):
        return claimed
    action, handler = claimed
    return _carry_out(action, handler, claim_token)


def _carry_out(action: Action, handler: ActionHandler, claim_token: str) -> str:
    """Call the handler of a claimed Action outside any transaction and record the outcome."""
    action_id = action.pk
    try:
        result = handler.function(action)
    except ActionWaiting as waiting:
        return _reconnecting_once(_finish, action_id, claim_token, waiting=waiting)
    except TransientActionError as error:
        return _reconnecting_once(_finish, action_id, claim_token, error=error, transient=True)
    except PermanentActionError as error:
        return _reconnecting_once(_finish, action_id, claim_token, error=error, transient=False)
    except Exception as error:
        logger.exception("Action %s (%s) failed", action_id, action.kind)
        return _reconnecting_once(_finish, action_id, claim_token, error=error, transient=False)
    return _reconnecting_once(_finish, action_id, claim_token, result=result)


def cancel_action(*, action: Action, cancelled_by, reason: str = "", via: str = "api") -> Action:
    """Cancel a queued Action. A running one cannot be taken back from the outside world."""
    with transaction.atomic():
        locked = Action.objects.select_for_update().get(pk=action.pk)
        if locked.status != ActionStatus.QUEUED:
            raise Conflict(
                f"Action #{locked.pk} is {locked.status}; only a queued Action can be cancelled.",
                status=locked.status,
            )
        locked.status = ActionStatus.CANCELLED
        locked.finished_at = timezone.now()
        locked.last_error = reason.strip() or "cancelled"
        locked.save(update_fields=["status", "finished_at", "last_error", "updated_at"])
        record_change(
            actor=cancelled_by,
            operation="action",
            instance=locked,
            before={"status": ActionStatus.QUEUED},
            after={"status": ActionStatus.CANCELLED},
            note=f"cancelled: {reason}".strip(),
            via=via,
        )
        publish_action(locked)
    return locked


def sweep_stuck_actions() -> dict[str, int]:
    """Re-send queued Actions whose message seems lost and running ones whose worker died.

    Sending twice is harmless: the claim lets exactly one delivery run, so the sweeper may be
    generous.
    """
    now = timezone.now()
    requeue_before = now - timedelta(seconds=settings.ACTION_REQUEUE_AFTER_SECONDS)
    with transaction.atomic():
        lost = list(
            Action.objects.select_for_update(skip_locked=True)
            .filter(status=ActionStatus.QUEUED, not_before__lte=requeue_before)
            .values_list("pk", flat=True)
        )
        # Push the deadline forward so a long broker backlog is not flooded with copies.
        Action.objects.filter(pk__in=lost).update(not_before=now)
    abandoned = list(
        Action.objects.filter(status=ActionStatus.RUNNING, lease_expires_at__lt=now).values_list(
            "pk", flat=True
        )
    )
    for action_id in [*lost, *abandoned]:
        send_action_task(action_id)
    if lost or abandoned:
        logger.warning("re-sent %d queued and %d abandoned Actions", len(lost), len(abandoned))
    return {"requeued": len(lost), "abandoned": len(abandoned)}


def send_action_task(action_id: int, countdown: float = 0) -> None:
    """Hand the Action to a worker; never wait on an unreachable broker.

    The publish is bounded (settings: one quick retry, short socket timeouts, no result
    backend), so a request answers promptly whatever the state of Redis. A send that fails
    leaves the committed row for the sweeper, marked so it is sent on the sweeper's next run
    after the broker is back rather than only once the row looks lost.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER and countdown > 0:
        return  # in-process mode has no timer: the sweeper runs the retry when it is due
    try:
        current_app.tasks[RUN_ACTION_TASK].apply_async((action_id,), countdown=countdown or None)
    except Exception as error:
        logger.warning(
            "could not send Action %s to the broker (%s: %s); the sweeper will send it",
            action_id,
            type(error).__name__,
            error,
        )
        _leave_for_the_sweeper(action_id)


# How long a request waits for its own "queued" event to reach Redis before sending the task
# anyway (Redis down: the send then fails too, and the sweeper has the Action).
QUEUED_EVENT_WAIT_SECONDS = 1.0


def _send_after_published_events(action_id: int) -> None:
    wait_until_published(timeout=QUEUED_EVENT_WAIT_SECONDS)
    send_action_task(action_id)


class _ActionRunner:
    """A few threads of a process that queues Actions, carrying out the quick ones it queued
    (ActionHandler.runs_where_queued) right after their commit.

    A drain through the broker spent more in the hop (waiting for its "queued" event to leave,
    the send, Redis, the worker's pickup, its locked claim) than in `scontrol update` itself.
    Here none of that: the request wrote the Action already claimed by this process
    (_claimed_as_written), and its events cannot overtake each other, all leaving through this
    process's one ordered publisher. Nothing is less durable: the row was committed first, so
    an Action this process dies before or while running is re-sent by the sweeper once its
    lease runs out, as for a worker that died. Each thread keeps its database connection
    between Actions, as a worker does (close_old_connections honours CONN_MAX_AGE); `stop`
    closes them.
    """

    def __init__(self, threads: int) -> None:
        self.pid = os.getpid()
        self.jobs: queue.Queue = queue.Queue()
        # Room for one Action running and one waiting per thread; past that a burst (a rack's
        # drains one by one) goes to the workers rather than queueing here behind Slurm.
        self.room = 2 * threads
        self.taken = 0
        self.lock = threading.Lock()
        self.worker = f"{socket.gethostname()} pid {self.pid} (where queued)"
        self.threads = [
            threading.Thread(target=self._run_each, name=f"action-runner-{number}", daemon=True)
            for number in range(threads)
        ]
        for thread in self.threads:
            thread.start()

    def has_room(self) -> bool:
        """A look, not a reservation, so a request that rolls back holds nothing: two requests
        may both see the last place, and both still run here, one a little later."""
        return self.taken < self.room

    def run_claimed(self, action: Action, handler: ActionHandler, claim_token: str) -> None:
        with self.lock:
            self.taken += 1
        self.jobs.put((action, handler, claim_token))
        # Let a runner thread take the GIL now: the request's thread goes on to render its
        # response, and a waiting thread would get the GIL only after the 5 ms switch
        # interval. In-process, with 15 ms of response after the commit, `scontrol update`
        # started 12.2 ms after the request began without this, 5.6-7.3 with it.
        time.sleep(0)

    def stop(self, timeout: float) -> None:
        """Let queued Actions finish, then end the threads and close their connections."""
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join(timeout)

    def _run_each(self) -> None:
        try:
            while (job := self.jobs.get()) is not None:
                action, handler, claim_token = job
                try:
                    close_old_connections()
                    _carry_out(action, handler, claim_token)
                except Exception:
                    # The row is durable: whatever this left running, the sweeper re-sends
                    # once its lease runs out.
                    logger.exception("Action %s could not be run where it was queued", action.pk)
                finally:
                    with self.lock:
                        self.taken -= 1
        finally:
            connections.close_all()


_runner: _ActionRunner | None = None
_runner_lock = threading.Lock()


def _action_runner() -> _ActionRunner:
    global _runner
    with _runner_lock:
        # A forked process (a Celery prefork child) inherits the object but not its threads.
        if _runner is None or _runner.pid != os.getpid():
            _runner = _ActionRunner(settings.ACTION_RUNNER_THREADS)
        return _runner


def stop_action_runner(timeout: float = 30.0) -> None:
    """Finish this process's queued Actions and close the runner's database connections (at
    exit; tests, before their database is emptied)."""
    global _runner
    with _runner_lock:
        runner, _runner = _runner, None
    if runner is not None and runner.pid == os.getpid():
        runner.stop(timeout)


atexit.register(stop_action_runner)


def retry_delay_seconds(attempt: int) -> float:
    """Exponential backoff with jitter, so retries of a fleet-wide outage do not stampede."""
    base = settings.ACTION_RETRY_BASE_SECONDS * (2 ** max(attempt - 1, 0))
    capped = min(base, settings.ACTION_RETRY_MAX_SECONDS)
    return capped * random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not security


def action_summary(action: Action) -> dict:
    """The brief, JSON-safe form used for events and audit records."""
    return {
        "id": action.pk,
        "kind": action.kind,
        "target": action.target,
        "reason": action.reason,
        "status": action.status,
        "shown_status": action.shown_status,  # "waiting" for a queued Action that re-polls
        "attempts": action.attempts,
        "last_error": action.last_error,
        "result": action.result,
        "requested_by": action.requested_by.get_username() if action.requested_by else None,
        "created_at": action.created_at,
        "finished_at": action.finished_at,
    }


def _attempt_row(attempt: ActionAttempt) -> dict:
    """An attempt in hand as action_attempt_rows reads one, for an event that needs no read."""
    return {field: getattr(attempt, field) for field in ATTEMPT_ROW_FIELDS}


def publish_action(action: Action, *, attempt_log: list[dict] | None = None) -> None:
    """Tell the Action list and the Action's page. `attempt_log`: its attempts' rows when the
    caller has them (otherwise read, as action_attempt_rows gives them)."""
    summary = action_summary(action)
    publish("actions", "action.updated", summary)
    # The Action's own page also shows when it started and each attempt: its group hears those
    # too, so an open page follows a claim, a retry or a long wait without a reload.
    publish(f"action.{action.pk}", "action.updated",
            {**summary, "started_at": action.started_at,
             "attempt_log": action_attempt_rows(action) if attempt_log is None else attempt_log})


# --- internals ---------------------------------------------------------------------------------


def idempotency_scope(requested_by) -> str:
    """Whose idempotency keys a request's key is checked against."""
    return f"user:{requested_by.pk}" if requested_by is not None else "system"


def _handler_or_invalid(kind: str) -> ActionHandler:
    handler = get_action_handler(kind)
    if handler is None:
        raise InvalidInput({"kind": [f"No handler is registered for Action kind {kind!r}."]})
    return handler


def _same_request_or_conflict(existing: Action, kind: str, target: str) -> Action:
    if existing.kind != kind or existing.target != target.strip():
        raise Conflict(
            f"Idempotency key already used for Action #{existing.pk} "
            f"({existing.kind} on {existing.target}).",
            action_id=existing.pk,
        )
    return existing


def _reconnecting_once(step, *args, **kwargs):
    """Run a claim or finish step; if the database connection was lost under it (a failover,
    pg_terminate_backend), run it once more on a new connection.

    Both steps are safe to repeat: each is one transaction that recognises its own earlier
    commit by the claim token, so a commit whose acknowledgement was lost is not done twice.
    Without this the message would be spent and the Action left to the sweeper's deadline.
    """
    try:
        return step(*args, **kwargs)
    except (OperationalError, InterfaceError):
        if connection.in_atomic_block:
            raise  # inside a caller's transaction: that transaction is lost, not ours to redo
        logger.warning("database connection lost in %s; retrying once", step.__name__)
        connection.close()
        return step(*args, **kwargs)


def _claim(action_id: int, claim_token: str, worker: str) -> tuple[Action, ActionHandler] | str:
    now = timezone.now()
    with transaction.atomic():
        action = Action.objects.select_for_update().filter(pk=action_id).first()
        if action is None:
            return "missing"
        if action.is_terminal:
            return f"skipped: already {action.status}"
        if (
            action.status == ActionStatus.QUEUED
            and action.not_before
            and action.not_before - EARLY_DELIVERY_TOLERANCE > now
        ):
            return "skipped: not due yet"
        if action.status == ActionStatus.RUNNING and action.claim_token == claim_token:
            # This very claim committed before the connection was lost: carry on with it.
            return action, get_action_handler(action.kind)
        if action.status == ActionStatus.RUNNING:
            if action.lease_expires_at and action.lease_expires_at > now:
                return "skipped: running elsewhere"
            ActionAttempt.objects.filter(
                action=action, claim_token=action.claim_token, outcome=ActionAttempt.Outcome.RUNNING
            ).update(
                outcome=ActionAttempt.Outcome.ABANDONED,
                finished_at=now,
                error="worker lost: lease expired",
            )
            if action.attempts >= action.max_attempts:
                _mark_failed(action, "worker lost on the last allowed attempt", now)
                return "failed: worker lost"
        handler = get_action_handler(action.kind)
        if handler is None:
            _mark_failed(action, f"no handler registered for {action.kind!r} in this worker", now)
            return "failed: no handler"
        # Only an Action claimed before can have a waiting attempt to go on in.
        claimed_before = action.started_at is not None
        action.status = ActionStatus.RUNNING
        action.attempts += 1
        action.claim_token = claim_token
        action.started_at = action.started_at or now
        action.lease_expires_at = now + timedelta(seconds=handler.lease_for(action))
        action.save(
            update_fields=[
                "status",
                "attempts",
                "claim_token",
                "started_at",
                "lease_expires_at",
                "updated_at",
            ]
        )
        # A check after a wait goes on in the wait's row (ActionWaiting uses up no attempt).
        reused = claimed_before and ActionAttempt.objects.filter(
            action=action, number=action.attempts, outcome=ActionAttempt.Outcome.WAITING
        ).update(worker=worker[:200], claim_token=claim_token, finished_at=None,
                 outcome=ActionAttempt.Outcome.RUNNING, error="")
        if not reused:
            ActionAttempt.objects.create(
                action=action, number=action.attempts, worker=worker[:200],
                claim_token=claim_token,
            )
        publish_action(action)
    return action, handler


def _finish(
    action_id: int,
    claim_token: str,
    *,
    result=None,
    error: Exception | None = None,
    transient: bool = False,
    waiting: ActionWaiting | None = None,
) -> str:
    now = timezone.now()
    error_text = f"{type(error).__name__}: {error}"[:MAX_ERROR_LENGTH] if error else ""
    with transaction.atomic():
        action = Action.objects.select_for_update().get(pk=action_id)
        attempt = ActionAttempt.objects.get(action=action, claim_token=claim_token)
        if attempt.finished_at is not None:
            # This very finish committed before the connection was lost: it counts as it is.
            return f"recorded: {attempt.outcome}"
        attempt.finished_at = now
        attempt.error = error_text
        if action.claim_token != claim_token or action.status != ActionStatus.RUNNING:
            # Our lease expired and another delivery took over; its outcome is the one that counts.
            attempt.outcome = ActionAttempt.Outcome.ABANDONED
            attempt.save(update_fields=["finished_at", "error", "outcome"])
            return "superseded"
        action.lease_expires_at = None
        if waiting is not None:
            delay = waiting.check_again_in
            action.status = ActionStatus.QUEUED
            action.attempts -= 1  # a check that must wait is not an attempt
            action.not_before = now + timedelta(seconds=delay)
            action.result = waiting.progress
            action.last_error = ""
            attempt.outcome = ActionAttempt.Outcome.WAITING
            attempt.error = str(waiting)[:MAX_ERROR_LENGTH]
            transaction.on_commit(lambda: send_action_task(action_id, countdown=delay))
            outcome = f"waiting, next check in {delay:.1f}s"
        elif error is None:
            action.status = ActionStatus.SUCCEEDED
            action.result = result
            action.last_error = ""
            action.finished_at = now
            attempt.outcome = ActionAttempt.Outcome.SUCCEEDED
            outcome = "succeeded"
        elif transient and action.attempts < action.max_attempts:
            delay = retry_delay_seconds(action.attempts)
            action.status = ActionStatus.QUEUED
            action.not_before = now + timedelta(seconds=delay)
            action.last_error = error_text
            attempt.outcome = ActionAttempt.Outcome.RETRY
            transaction.on_commit(lambda: send_action_task(action_id, countdown=delay))
            outcome = f"retry in {delay:.1f}s"
        else:
            action.status = ActionStatus.FAILED
            action.last_error = error_text
            action.finished_at = now
            attempt.outcome = ActionAttempt.Outcome.FAILED
            outcome = "failed"
        action.save()
        attempt.save(update_fields=["finished_at", "error", "outcome"])
        if action.is_terminal:
            record_change(
                actor=None,
                operation="action",
                instance=action,
                after=action_summary(action),
                note=outcome,
                via="worker",
            )
            _tell(_finished_listeners, action)
        # A first attempt's row is the one in hand: no read of the attempts for the event.
        publish_action(action, attempt_log=[_attempt_row(attempt)] if attempt.number == 1
                       else None)
        handler = get_action_handler(action.kind)
        if action.status == ActionStatus.SUCCEEDED and handler and handler.after_success:
            # Registered after the events, so they are queued for Redis before it runs; robust:
            # a follow-up that fails is logged and changes nothing about the Action.
            transaction.on_commit(lambda: handler.after_success(action), robust=True)
    return outcome


def _leave_for_the_sweeper(action_id: int) -> None:
    """Make an Action whose message never reached the broker due for the sweeper as soon as the
    Action itself is due.

    The sweeper re-sends a queued Action once `not_before` is ACTION_REQUEUE_AFTER_SECONDS old,
    the margin a healthy backlog needs; this message is known to be lost, so it needs none.
    """
    try:
        Action.objects.filter(pk=action_id, status=ActionStatus.QUEUED).update(
            not_before=F("not_before") - timedelta(seconds=settings.ACTION_REQUEUE_AFTER_SECONDS)
        )
    except Exception:
        # The row still recovers, only later: the sweeper finds it once it looks lost.
        logger.exception("could not mark Action %s for the sweeper", action_id)


def _mark_failed(action: Action, message: str, now) -> None:
    action.status = ActionStatus.FAILED
    action.last_error = message
    action.finished_at = now
    action.lease_expires_at = None
    action.save()
    record_change(
        actor=None,
        operation="action",
        instance=action,
        after=action_summary(action),
        note=f"failed: {message}",
        via="worker",
    )
    _tell(_finished_listeners, action)
    publish_action(action)

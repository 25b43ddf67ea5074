from django.conf import settings
from django.db import models


class ActionStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset({ActionStatus.SUCCEEDED, ActionStatus.FAILED, ActionStatus.CANCELLED})


class Action(models.Model):
    """A change to the outside world (Slurm, a switch), written before anything is done.

    The row is the outbox of DESIGN.md section 3: it is committed together with the request that
    asked for it, and a worker carries it out. A lost message or a killed worker is recovered by
    the sweeper, because the row, not the broker, is the source of truth.
    """

    kind = models.CharField(
        max_length=64, db_index=True, help_text="Registered handler, e.g. slurm.drain"
    )
    target = models.CharField(max_length=255, help_text="What it acts on, e.g. gpu[001-016]")
    parameters = models.JSONField(default=dict, blank=True)
    reason = models.TextField()
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # NULL, not "": rows without a key never clash in the unique constraint below.
    idempotency_key = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    # Whose key it is: "user:<id>" or "system". A key is unique per requester, so another
    # user's request with the same key is a request of its own, never the first user's Action.
    # Kept apart from requested_by, which a deleted user's rows lose.
    idempotency_scope = models.CharField(max_length=32, blank=True, default="")
    status = models.CharField(
        max_length=10, choices=ActionStatus.choices, default=ActionStatus.QUEUED, db_index=True
    )
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=5)
    last_error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    # When the next attempt is due; the sweeper re-sends queued Actions well past this.
    not_before = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The running attempt's claim: another delivery may take over only after the lease expires.
    claim_token = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "not_before"])]
        constraints = [
            models.CheckConstraint(condition=~models.Q(reason=""), name="action_reason_not_empty"),
            models.UniqueConstraint(
                fields=["idempotency_scope", "idempotency_key"],
                name="action_idempotency_key_per_requester",
            ),
        ]

    def __str__(self) -> str:
        return f"Action #{self.pk} {self.kind} {self.target} [{self.status}]"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def shown_status(self) -> str:
        """The status as pages show it: "waiting" for a queued Action that a handler put back
        to check again (a maintenance waiting for jobs to leave its nodes re-polls as
        "queued", with what it waits for in `result["progress"]`, portal/services/actions.py
        `_finish`); otherwise `status` itself. Display only: the state machine is unchanged."""
        if self.status == ActionStatus.QUEUED and isinstance(self.result, dict) and (
                isinstance(self.result.get("progress"), str) and self.result["progress"]):
            return "waiting"
        return self.status


class ActionAttempt(models.Model):
    """One try at carrying out an Action: which worker, when, and how it ended."""

    class Outcome(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        RETRY = "retry"  # transient error, another attempt is scheduled
        # The handler waits (ActionWaiting); the next check reuses this row, so a long wait is
        # one row and uses up no attempt.
        WAITING = "waiting"
        ABANDONED = "abandoned"  # the worker vanished; the lease expired and another took over

    action = models.ForeignKey(Action, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    worker = models.CharField(max_length=200, blank=True)
    claim_token = models.CharField(max_length=64)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.RUNNING)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["action", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["action", "number"], name="action_attempt_number_unique"
            )
        ]

    def __str__(self) -> str:
        return f"Action #{self.action_id} attempt {self.number} [{self.outcome}]"

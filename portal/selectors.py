"""Reads for accounts, tenants, tokens, audit and Actions, restricted by who is asking."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, QuerySet

from portal.models import Action, APIToken, AuditEntry, PeriodicTaskState, Role, Tenant, User
from portal.roles import may


def tenant_list(*, user) -> QuerySet[Tenant]:
    tenants = Tenant.objects.annotate(user_count=Count("users")).order_by("name")
    if may(user, "read_cluster"):
        return tenants
    if user.role == Role.TENANT_ADMIN and user.tenant_id:
        return tenants.filter(pk=user.tenant_id)
    return tenants.none()


def action_list(*, user) -> QuerySet[Action]:
    if not may(user, "read_cluster"):
        return Action.objects.none()
    return Action.objects.select_related("requested_by")


# An attempt as the Action page's table and its live event show it.
ATTEMPT_ROW_FIELDS = ("number", "worker", "started_at", "finished_at", "outcome", "error")


def action_attempt_rows(action: Action) -> list[dict]:
    """The attempts table of an Action's page, as its live event carries it: one query, at most
    max_attempts rows (a long wait reuses one row). Before the first claim there are none, and
    no query: every drain request publishes its queued Action."""
    if not action.attempts:
        return []
    return list(action.attempt_log.order_by("number").values(*ATTEMPT_ROW_FIELDS))


def action_counts_by_status() -> dict[str, int]:
    rows = Action.objects.values_list("status").annotate(count=Count("id")).order_by()
    return dict(rows)


def audit_list(*, user) -> QuerySet[AuditEntry]:
    if not may(user, "read_audit"):
        return AuditEntry.objects.none()
    return AuditEntry.objects.all()


def api_token_list(*, user) -> QuerySet[APIToken]:
    tokens = APIToken.objects.select_related("user")
    if may(user, "manage_accounts"):
        return tokens
    return tokens.filter(user=user)


def user_list(*, user) -> QuerySet[User]:
    if not may(user, "manage_accounts"):
        return User.objects.filter(pk=user.pk)
    return User.objects.select_related("tenant").prefetch_related("groups")


@dataclass(frozen=True)
class PeriodicTaskRow:
    """A beat schedule entry and how its runs go (portal/periodic.py), for the Services card."""

    name: str
    task: str
    interval_seconds: float
    state: PeriodicTaskState | None

    @property
    def behind(self) -> bool:
        """The last run took longer than the interval, or a run was skipped since it started."""
        if self.state is None:
            return False
        last = self.state.last_duration_seconds
        return (last is not None and last > self.interval_seconds) or bool(
            self.state.last_overrun_at
            and self.state.last_started_at
            and self.state.last_overrun_at >= self.state.last_started_at
        )


def periodic_task_list(*, user) -> list[PeriodicTaskRow]:
    """Every scheduled task with its last run, overruns and skips; cluster-wide roles only
    (how the portal's own work keeps up is operations data, not a tenant's)."""
    if not may(user, "read_cluster"):
        return []
    states = {state.task: state for state in PeriodicTaskState.objects.all()}
    rows = [
        PeriodicTaskRow(name, entry["task"], float(entry["schedule"]), states.get(entry["task"]))
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
    ]
    return sorted(rows, key=lambda row: (not row.behind, row.name))

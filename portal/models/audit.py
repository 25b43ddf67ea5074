from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """Who changed what, when, and how it looked before and after."""

    class Operation(models.TextChoices):
        CREATE = "create"
        UPDATE = "update"
        DELETE = "delete"
        ACTION = "action"  # an Action was requested, cancelled or finished
        LOCKOUT = "lockout"  # repeated failed logins locked a username out (portal/lockout.py)
        LOGIN = "login"  # a sign-in, with how (password, directory, proxy) and the role it got
        REFUSED = "refused"  # the directory or proxy vouched for someone the portal turned away

    timestamp = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept as text so the record survives the user's deletion.
    actor_name = models.CharField(max_length=150, blank=True)
    operation = models.CharField(max_length=10, choices=Operation.choices)
    object_type = models.CharField(max_length=100, help_text="app_label.model")
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    note = models.TextField(blank=True)
    via = models.CharField(max_length=10, blank=True, help_text="api, ui, worker or cli")

    class Meta:
        ordering = ["-timestamp", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        when = f"{self.timestamp:%Y-%m-%d %H:%M:%S}"
        return f"{when} {self.actor_name} {self.operation} {self.object_repr}"

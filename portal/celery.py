"""The Celery application; configuration comes from Django settings (CELERY_*)."""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def check_database_connections(task=None, **_kwargs) -> None:
    """Around each task, what Django does around each request: drop a connection past
    CONN_MAX_AGE or one that failed, and have the next query check it first (health check),
    so a worker reuses its connection yet survives a PostgreSQL restart. Not for a task run
    in-process (the embedded default): it runs inside its caller's request and transaction."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()

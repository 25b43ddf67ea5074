"""manage.py worker_health [--worker celery@%h] [--timeout 5]

The worker container's health check: exit 0 when what a worker needs to finish an Action
answers, 1 naming each part that does not. A worker that is up but cannot reach slurmctld
fails every drain, so `celery inspect ping` alone says too little.

Checks the database, Redis, the broker and the Slurm controller (the readiness checks of
portal/health.py, not the fabric's poll ages: a stale switch is no reason to restart a
worker); with --worker, also that this worker answers a ping over the broker. The name takes
the worker's own `-n` notation (%h: this host's name), so the check needs no $HOSTNAME, which a
container with host networking may not have.
"""

from __future__ import annotations

from celery.utils.nodenames import host_format
from django.core.management.base import BaseCommand, CommandError

from portal.health import READINESS_CHECKS

WORKER_DEPENDENCIES = ("database", "redis", "broker", "slurm")


class Command(BaseCommand):
    help = "Exit 1 naming each dependency of the Celery worker that does not answer."

    def add_arguments(self, parser):
        parser.add_argument(
            "--worker",
            default="",
            help="Also ping this worker node name over the broker (celery@%%h: this host's).",
        )
        parser.add_argument("--timeout", type=float, default=5.0, help="Ping timeout, seconds.")

    def handle(self, *args, **options):
        problems = {}
        for name in WORKER_DEPENDENCIES:
            check = READINESS_CHECKS.get(name)
            problem = check() if check else None
            if problem:
                problems[name] = problem
        if options["worker"] and "broker" not in problems:
            problem = self.ping_worker(host_format(options["worker"]), options["timeout"])
            if problem:
                problems["worker"] = problem
        for name, problem in problems.items():
            self.stderr.write(f"{name}: {problem}")
        if problems:
            raise CommandError(f"worker unhealthy: {', '.join(problems)}")
        self.stdout.write("worker healthy: " + ", ".join(WORKER_DEPENDENCIES) + " ok")

    @staticmethod
    def ping_worker(name: str, timeout: float) -> str | None:
        from django.conf import settings

        if settings.CELERY_TASK_ALWAYS_EAGER:
            return None  # tasks run in the web process: there is no worker to ping
        from portal.celery import app

        replies = app.control.ping(destination=[name], timeout=timeout)
        if not any(name in reply for reply in replies):
            return f"worker unreachable: {name} did not answer a ping within {timeout:g}s"
        return None

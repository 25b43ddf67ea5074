from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self):
        from jobs import (
            actions,  # noqa: F401 - registers the drain and resume handlers
            reservations,  # noqa: F401 - registers the reservation handler
        )
        from jobs.realtime import register_jobs_groups

        register_jobs_groups()

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self):
        from inventory.bmc.guards import register_power_guard
        from inventory.ui_panels import register_node_panel
        from jobs import (
            action_handlers,  # noqa: F401 - registers the drain and resume handlers
            reservations,  # noqa: F401 - registers the reservation handler
            validation_run,  # noqa: F401 - registers the validate-then-resume handler
        )
        from jobs.health import check_slurm_controller
        from jobs.realtime import register_jobs_groups
        from jobs.selectors import running_jobs_named_by_node
        from portal.health import register_readiness_check

        register_jobs_groups()
        register_readiness_check("slurm", check_slurm_controller)
        register_node_panel("jobs/_node_slurm_panel.html")
        register_power_guard(running_jobs_named_by_node)

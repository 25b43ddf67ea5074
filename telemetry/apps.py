from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "telemetry"

    def ready(self) -> None:
        from jobs.hooks import register_jobs_accounted_listener
        from portal.ui_panels import register_panel
        from telemetry.services import record_finished_jobs

        # A row beside each finished GPU job as accounting records it: Observation 3 then
        # counts and groups that table alone (telemetry/README.md).
        register_jobs_accounted_listener(record_finished_jobs)

        register_panel("jobs.job_detail", "telemetry/_job_utilisation_panel.html")
        register_panel("jobs.analytics", "telemetry/_observation3_panel.html")

from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "telemetry"

    def ready(self) -> None:
        from portal.ui_panels import register_panel

        register_panel("jobs.job_detail", "telemetry/_job_utilisation_panel.html")
        register_panel("jobs.analytics", "telemetry/_observation3_panel.html")

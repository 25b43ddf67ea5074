from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabric"

    def ready(self) -> None:
        from fabric import action_handlers  # noqa: F401 - registers the switch Action handlers
        from fabric.health import check_fabric_polls
        from fabric.realtime import register_fabric_groups
        from inventory.ui_panels import (
            register_node_badge,
            register_switch_badge,
            register_switch_panel,
        )
        from portal.health import register_readiness_check
        from portal.ui_panels import register_panel

        register_fabric_groups()
        register_readiness_check("fabric", check_fabric_polls)
        register_switch_panel("fabric/actions/_switch_panel.html")
        register_node_badge("fabric/_node_maintenance_badge.html")
        register_switch_badge("fabric/_switch_maintenance_badge.html")
        register_panel("jobs.job_detail", "fabric/_job_rails_panel.html")

from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabric"

    def ready(self) -> None:
        from fabric import actions  # noqa: F401 - registers the switch Action handlers
        from fabric.realtime import register_fabric_groups
        from inventory.ui_panels import register_switch_panel

        register_fabric_groups()
        register_switch_panel("fabric/actions/_switch_panel.html")

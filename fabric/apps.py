from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabric"

    def ready(self):
        from fabric import actions  # noqa: F401 - registers the switch Action handlers
        from inventory.ui_panels import register_switch_panel

        register_switch_panel("fabric/actions/_switch_panel.html")

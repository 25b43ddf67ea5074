from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """Pages and endpoints above the domain apps: they compose inventory, jobs, fabric and faults,
    so portal/ never has to import a domain app."""

    name = "console"

    def ready(self) -> None:
        from console.impact import impact_snapshot, visible_snapshot
        from faults.hooks import register_impact_provider
        from inventory.ui_panels import register_node_panel, register_switch_panel

        # Tickets keep their impact at detection; readers see it cut to their role.
        register_impact_provider(impact_snapshot, visible=visible_snapshot)

        register_node_panel("console/_impact_panel.html")
        register_switch_panel("console/_impact_panel.html")

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """Pages and endpoints above the domain apps: they compose inventory, jobs, fabric and faults,
    so portal/ never has to import a domain app."""

    name = "console"

    def ready(self) -> None:
        from console.impact import impact_snapshot, visible_snapshot
        from faults.hooks import register_impact_provider
        from inventory.ui_panels import register_node_panel, register_switch_panel
        from portal.ui_panels import register_panel

        # Tickets keep their impact at detection; readers see it cut to their role.
        register_impact_provider(impact_snapshot, visible=visible_snapshot)

        register_node_panel("console/_impact_panel.html")
        register_switch_panel("console/_impact_panel.html")
        # Who an operation or a component hits, on the pages of the apps below.
        register_panel("fabric.switch_detail", "console/_impact_panel.html")
        register_panel("fabric.action_confirm", "console/_port_action_impact.html")
        register_panel("faults.ticket_detail", "console/_ticket_impact.html")
        register_panel("jobs.bulk_drain", "console/_bulk_drain_impact.html")

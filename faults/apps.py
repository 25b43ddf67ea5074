from django.apps import AppConfig


class FaultsConfig(AppConfig):
    name = "faults"

    def ready(self):
        from fabric.hooks import register_fabric_finding_listener, register_fabric_signal_listener
        from faults.selectors import (
            action_touches_an_open_ticket,
            open_ticket_resume_blockers,
            validation_resume_blockers,
        )
        from faults.services import intake, recovery, state_changes
        from inventory.ui_panels import register_node_panel
        from jobs import hooks
        from portal.realtime import register_group_access
        from portal.roles import may
        from portal.services.actions import (
            register_action_finished_listener,
            register_action_queued_listener,
        )

        hooks.register_node_unhealthy_listener(intake.on_node_unhealthy)
        hooks.register_resume_guard(open_ticket_resume_blockers)
        # A node restarted or repaired for an open ticket goes back only through a passed
        # validation (or an override with a reason): the same rule the ticket's own resume keeps.
        hooks.register_resume_guard(validation_resume_blockers)
        # Swapped or missing links and rail imbalance found by the fabric app (fabric.hooks).
        register_fabric_finding_listener(intake.on_fabric_finding)
        # State changes that are faults or their recovery: links, switches, health-check drains,
        # nodes back in service, jobs ending NODE_FAIL.
        register_fabric_signal_listener(state_changes.on_fabric_signals)
        hooks.register_slurm_signal_listener(state_changes.on_slurm_signal)
        # The board's live group: cluster-wide roles only, never tenant admins (as the API).
        register_group_access("faults", lambda user, group: may(user, "read_faults"))
        register_node_panel("faults/_node_faults_panel.html")
        register_node_panel("faults/_node_report_event.html")
        # Steps taken anywhere for an open ticket's node or port join its timeline.
        register_action_queued_listener(recovery.link_action_to_open_tickets,
                                        only_if=action_touches_an_open_ticket)
        # A validation job's result goes on its ticket when its Action ends.
        register_action_finished_listener(recovery.record_validation_result,
                                          only_if=recovery.is_a_validation)

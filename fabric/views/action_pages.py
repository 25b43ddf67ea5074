"""Confirmation pages for switch actions: show what is behind the ports, ask why, then queue.

Each page shows the blast radius (nodes, rails, cables) before the operator confirms, needs a
reason, and on success redirects to the Action's page where its progress shows live.
"""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect
from django.views.generic import TemplateView

from fabric import services
from fabric.impact import BlastRadius, blast_radius, host_facing_ports
from inventory.cable_trace import nodes_behind_switch
from inventory.models import Pod, Switch
from inventory.selectors import switch_list
from portal.errors import Conflict, InvalidInput
from portal.models import Action
from portal.views import RoleRequiredMixin


class ConfirmActionView(RoleRequiredMixin, TemplateView):
    """GET: the preview and the form. POST: queue the Action, or show the errors again."""

    template_name = "fabric/actions/confirm.html"
    capability = "act_on_switch"
    heading = ""
    explanation = ""
    button = "Confirm"
    danger = False

    def get_subject(self):
        switch = switch_list(user=self.request.user).filter(pk=self.kwargs["pk"]).first()
        if switch is None:
            raise Http404("No such switch")
        return switch

    def preview(self, subject) -> BlastRadius | None:
        return None

    def enqueue(self, subject, reason: str) -> Action:
        raise NotImplementedError

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        subject = kwargs.get("subject") or self.get_subject()
        context.update(
            subject=subject,
            heading=self.heading.format(subject=subject),
            explanation=self.explanation,
            button=self.button,
            danger=self.danger,
            errors=kwargs.get("errors", {}),
            reason=self.request.POST.get("reason", ""),
        )
        if "radius" not in context:
            try:
                context["radius"] = self.preview(subject)
            except InvalidInput as error:
                context["radius"] = None
                context["errors"] = {**_as_dict(error.detail), **context["errors"]}
        return context

    def post(self, request, *args, **kwargs):
        subject = self.get_subject()
        if request.POST.get("preview"):
            # "Show what is behind": the same form again with the preview of what was checked,
            # and nothing queued.
            return self.render_to_response(self.get_context_data(subject=subject))
        reason = request.POST.get("reason", "")
        try:
            with transaction.atomic():
                action = self.enqueue(subject, reason)
        except InvalidInput as error:
            context = self.get_context_data(subject=subject, errors=_as_dict(error.detail))
            return self.render_to_response(context, status=400)
        except Conflict as error:
            context = self.get_context_data(subject=subject, errors=_as_dict(error.detail))
            return self.render_to_response(context, status=409)
        messages.success(request, f"Action #{action.pk} queued: {action.target}.")
        return redirect("action-detail", pk=action.pk)


def _as_dict(detail) -> dict:
    return detail if isinstance(detail, dict) else {"__all__": [str(detail)]}


def _selected_ports(request) -> list[str]:
    values = request.POST.getlist("ports") if request.method == "POST" else (
        request.GET.getlist("ports"))
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    return list(dict.fromkeys(names))


class PortAdminView(ConfirmActionView):
    heading = "Shut down or start up ports of {subject}"
    explanation = ("Shutting a host-facing port cuts that node's NIC off its rail; jobs using the "
                   "rail on those nodes will lose bandwidth or fail.")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        switch = context["subject"]
        behind = {}
        for row in nodes_behind_switch(switch):
            behind[row.port.name] = row
        selected = set(_selected_ports(self.request))
        context.update(
            # The checked ports first: the picker scrolls (a leaf has 64 rows) and the port the
            # row's Shut… link named must be in sight next to Confirm.
            port_picker=sorted(
                ({"port": port, "behind": behind.get(port.name), "checked": port.name in selected}
                 for port in switch.ports.filter(breakout_mode="").order_by("index", "name")),
                key=lambda row: not row["checked"],
            ),
            selected_ports=sorted(selected),
            state=(self.request.POST.get("state") or self.request.GET.get("state") or "down"),
            show_state=True,
        )
        return context

    def preview(self, switch: Switch) -> BlastRadius | None:
        names = _selected_ports(self.request)
        if not names:
            return None
        return blast_radius(switch=switch, ports=services.inventory_ports(switch, names))

    def enqueue(self, switch: Switch, reason: str) -> Action:
        state = self.request.POST.get("state")
        if state not in ("up", "down"):
            raise InvalidInput({"state": ["Choose up (startup) or down (shutdown)."]})
        action, _ = services.request_port_admin(
            switch=switch, ports=_selected_ports(self.request), up=state == "up", reason=reason,
            requested_by=self.request.user, via="ui",
        )
        return action


class LeafMaintenanceView(ConfirmActionView):
    heading = "Maintenance of {subject}"
    explanation = ("Maintenance drains every node behind this leaf in Slurm first, then shuts "
                   "the leaf's host-facing ports. Report only changes nothing.")
    danger = True
    button = "Queue"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["show_mode"] = True
        context["mode"] = self.request.POST.get("mode", "report")
        context["shut_under_running_jobs"] = bool(
            self.request.POST.get("shut_under_running_jobs"))
        context["force_reason"] = self.request.POST.get("force_reason", "")
        return context

    def preview(self, switch: Switch) -> BlastRadius:
        return blast_radius(switch=switch, ports=host_facing_ports(switch))

    def enqueue(self, switch: Switch, reason: str) -> Action:
        action, _ = services.request_leaf_maintenance(
            switch=switch, reason=reason, report_only=self.request.POST.get("mode") != "drain",
            shut_under_running_jobs=bool(self.request.POST.get("shut_under_running_jobs")),
            force_reason=self.request.POST.get("force_reason", ""),
            requested_by=self.request.user, via="ui",
        )
        return action


class MaintenanceEndView(ConfirmActionView):
    heading = "End the maintenance of {subject}"
    explanation = ("Starts exactly the ports this maintenance shut and resumes exactly the "
                   "nodes it drained, as one Action. Ports that were down before it and nodes "
                   "drained before it, or held by an open fault ticket, stay as they are.")
    button = "End maintenance"

    def enqueue(self, switch: Switch, reason: str) -> Action:
        action, _ = services.request_maintenance_end(
            maintenance=services.maintenance_to_end(switch), reason=reason,
            requested_by=self.request.user, via="ui",
        )
        return action


class SwitchQosView(ConfirmActionView):
    heading = "Apply the RoCE QoS profile to {subject}"
    explanation = ("Sets ECN/WRED on the WRED profile each lossless queue uses, PFC on exactly "
                   "the profile's priorities, and Xoff, Xon offset and alpha on the buffer "
                   "profiles the lossless priority groups use (on the dynamic buffer model, a "
                   "static profile replaces the calculated one), on every port; then reads them "
                   "back and fails naming what did not match. Traffic of the nodes below may "
                   "see pauses while the switch reprograms.")
    button = "Apply profile"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["profile"] = services.QOS_PROFILES["SAKURAONE_ROCE"]
        return context

    def preview(self, switch: Switch) -> BlastRadius:
        return blast_radius(switch=switch)

    def enqueue(self, switch: Switch, reason: str) -> Action:
        action, _ = services.request_apply_qos(
            switches=[switch], scope=switch.hostname, reason=reason,
            requested_by=self.request.user, via="ui",
        )
        return action


class PodQosView(SwitchQosView):
    heading = "Apply the RoCE QoS profile to every switch of pod {subject}"

    def get_subject(self):
        pod = Pod.objects.filter(pk=self.kwargs["pk"]).first()
        if pod is None:
            raise Http404("No such pod")
        return pod

    def preview(self, pod: Pod) -> None:
        return None

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["pod_switches"] = services.pod_switches(context["subject"])
        return context

    def enqueue(self, pod: Pod, reason: str) -> Action:
        action, _ = services.request_apply_qos(
            switches=services.pod_switches(pod), scope=f"pod {pod.name}", reason=reason,
            requested_by=self.request.user, via="ui",
        )
        return action


class SwitchSaveView(ConfirmActionView):
    heading = "Save the running configuration of {subject}"
    explanation = "Runs config save -y: what the switch runs now is what it boots with."
    button = "Save configuration"

    def enqueue(self, switch: Switch, reason: str) -> Action:
        action, _ = services.request_save_config(
            switch=switch, reason=reason, requested_by=self.request.user, via="ui",
        )
        return action


class SwitchEcnCountersView(ConfirmActionView):
    heading = "Collect ECN-marked queue counters on {subject}"
    explanation = ("Runs counterpoll wredqueue enable: the switch starts polling its queues' "
                   "WRED/ECN statistics, and the portal shows ECN marks instead of "
                   "\"not collected\". Traffic is not affected.")
    button = "Enable ECN counters"

    def enqueue(self, switch: Switch, reason: str) -> Action:
        action, _ = services.request_enable_ecn_counters(
            switch=switch, reason=reason, requested_by=self.request.user, via="ui",
        )
        return action

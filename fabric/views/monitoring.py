"""Fabric monitoring pages: the fabric overview (with port cells when few switches are shown),
switch detail, LLDP findings, rail health. Cluster-wide roles only; reads go through
fabric.selectors."""

from __future__ import annotations

from django.http import Http404
from django.views.generic import TemplateView

from fabric import selectors
from fabric.models import LldpFinding
from fabric.overview import ROLE_FILTERS, STATES, clean_overview_filters, fabric_overview
from fabric.rail_health import detect_rail_imbalance, rail_throughput_for_nodes
from inventory.cable_trace import nodes_behind_switch
from inventory.selectors import nodes_from_hostlist
from portal import pagination
from portal.errors import InvalidInput, NotFound
from portal.ordering import Ordering, SortableListMixin
from portal.roles import may
from portal.views import RoleRequiredMixin

# At most this many switches get their port cells on the overview (8 leafs of a pod, the 8
# spines, a small fabric); more would be the heat map that did not scale.
PORT_STRIPS_MAX_SWITCHES = 16


class FabricLiveView(RoleRequiredMixin, TemplateView):
    """The fabric overview: pods, spines and switches summed, problems first, filtered by pod,
    role and state; open pages follow the polls through "fabric.overview" deltas."""

    capability = "read_fabric"
    template_name = "fabric/switch_list.html"

    def get(self, request, *args, **kwargs):
        try:
            filters, errors = clean_overview_filters(request.GET), {}
        except InvalidInput as error:
            filters, errors = {}, error.detail
        context = self.get_context_data(filters=filters, filter_errors=errors, **kwargs)
        return self.render_to_response(context, status=400 if errors else 200)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        overview = fabric_overview(user=user, filters=context["filters"])
        context.update(
            overview=overview,
            open_findings=selectors.lldp_findings(user=user).count(),
            roles=ROLE_FILTERS,
            states=list(STATES.items()),
            port_strips=self._port_strips(overview),
        )
        return context

    def _port_strips(self, overview) -> list[selectors.HeatSwitch]:
        """A cell per port of each switch shown, when few are (a pod, the spines, a small
        fabric): the drill-down below the rows, in the rows' order."""
        if not overview.switches or len(overview.switches) > PORT_STRIPS_MAX_SWITCHES:
            return []
        return selectors.port_strips(
            user=self.request.user, hostnames=[row.hostname for row in overview.switches]
        )


class SwitchPortsView(RoleRequiredMixin, TemplateView):
    """One switch's port cells, as a fragment the overview re-reads when a poll changed the
    switch and the poll's event was too large to carry every port."""

    capability = "read_fabric"
    template_name = "fabric/_heat_switch.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        heat = selectors.heat_map(user=self.request.user, hostnames=[kwargs["hostname"]])
        entries = heat.entries()
        if not entries:
            raise Http404(f"No switch {kwargs['hostname']!r}.")
        context["entry"] = entries[0]
        return context


class SwitchDetailView(RoleRequiredMixin, TemplateView):
    capability = "read_fabric"
    template_name = "fabric/switch_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        try:
            switch = selectors.monitored_switch(user=user, hostname=kwargs["hostname"])
        except NotFound as error:
            raise Http404(str(error)) from None
        context.update(
            switch=switch,
            poll=getattr(switch, "poll_state", None),
            port_counts=selectors.switch_port_counts(switch),
            maintenance=selectors.running_maintenance(switch),
            ports=pagination.page_of_rows(
                selectors.monitored_ports(user=user, switch=switch),
                self.request.GET.get("page"), pagination.SWITCH_PORT_ROWS_PER_PAGE,
            ),
            nodes_behind=nodes_behind_switch(switch),
            may_act=may(user, "act_on_switch"),
        )
        return context


class SwitchNodesView(RoleRequiredMixin, TemplateView):
    """The nodes behind one switch, as an htmx fragment for the fabric page."""

    capability = "read_fabric"
    template_name = "fabric/_nodes_behind.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        try:
            switch = selectors.monitored_switch(user=self.request.user,
                                                hostname=kwargs["hostname"])
        except NotFound as error:
            raise Http404(str(error)) from None
        context.update(switch=switch, nodes_behind=nodes_behind_switch(switch))
        return context


class LldpView(SortableListMixin, RoleRequiredMixin, TemplateView):
    capability = "read_fabric"
    template_name = "fabric/lldp.html"
    sort_columns = Ordering(
        {"kind": ("kind", "key"), "what": ("summary",), "first_seen": ("first_seen_at",),
         "last_seen": ("last_seen_at",)},
        default="kind",
    )

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        findings = list(self.sort_queryset(selectors.lldp_findings(user=self.request.user)))
        context["findings"] = findings
        context["counts"] = [
            (kind, label, sum(1 for f in findings if f.kind == kind))
            for kind, label in LldpFinding.Kind.choices
        ]
        return context


class RailHealthView(RoleRequiredMixin, TemplateView):
    capability = "read_fabric"
    template_name = "fabric/rail_health.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        expression = self.request.GET.get("nodes", "").strip()
        context["expression"] = expression
        if not expression:
            return context
        try:
            nodes = nodes_from_hostlist(user=self.request.user, expression=expression)
        except (InvalidInput, ValueError) as error:
            detail = getattr(error, "detail", str(error))
            if isinstance(detail, dict):
                detail = "; ".join(str(m) for messages in detail.values() for m in messages)
            context["error"] = detail
            return context
        rails = rail_throughput_for_nodes(nodes)
        peak = max((rail.per_port_bytes_per_second for rail in rails), default=0) or 1
        context["rails"] = [
            {"rail": rail, "share": round(100 * rail.per_port_bytes_per_second / peak)}
            for rail in rails
        ]
        context["verdict"] = detect_rail_imbalance(nodes)
        return context

"""Node and switch pages, and the cable trace of one NIC."""

from __future__ import annotations

from collections import defaultdict

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from inventory import cable_trace, selectors
from inventory.bmc.boot import BOOT_TARGETS, request_boot_override
from inventory.bmc.power import read_power_state
from inventory.bmc.reading import bmc_reading
from inventory.bmc.targets import has_bmc
from inventory.forms import SpareStockForm
from inventory.hostlist import compress_hostlist
from inventory.models import NIC
from inventory.spares import spare_stock_set
from inventory.ui_panels import node_badges, node_panels, switch_badges, switch_panels
from inventory.views.base import InventoryPageMixin, is_htmx
from portal import pagination
from portal.errors import Conflict, InvalidInput
from portal.roles import may

RAIL_TOP, RAIL_ROW = 24, 36


class NodeDetailView(InventoryPageMixin, TemplateView):
    section = "nodes"
    template_name = "inventory/node_detail.html"
    capability = "read_inventory"  # another tenant's node is a 404 (node_get uses visible_nodes)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        node = selectors.node_get(user=self.request.user, hostname=kwargs["hostname"])
        nics = sorted(node.nics.all(), key=lambda nic: selectors.natural_sort_key(nic.device))
        rail_map = selectors.node_rail_map(node)
        context.update(
            node=node,
            gpus=list(node.gpus.all()),
            nic_rows=[(nic, selectors.nic_link(nic)) for nic in nics],
            rail_map=rail_map,
            # One row of the rail map picture per rail, RAIL_ROW units apart.
            rail_rows=[(row, RAIL_TOP + index * RAIL_ROW) for index, row in enumerate(rail_map)],
            rail_picture_height=2 * RAIL_TOP + (len(rail_map) - 1) * RAIL_ROW,
            rail_nic_count=sum(1 for nic in nics if nic.role == NIC.Role.RAIL),
            node_panels=node_panels(),
            node_badges=node_badges(),
            swaps=selectors.swap_list(user=self.request.user,
                                      filters={"node": node.hostname})[:50],
            # Read live, with BMC_PAGE_TIMEOUT: an unknown state is said, never guessed.
            bmc={"configured": has_bmc(node), "power_state": read_power_state(node)},
            boot_targets=BOOT_TARGETS,
        )
        return context


class NodeBmcView(InventoryPageMixin, TemplateView):
    """The node page's BMC section (an htmx fragment): what the BMC says now, or that it did
    not answer within BMC_PAGE_TIMEOUT."""

    template_name = "inventory/_node_bmc.html"
    capability = "read_inventory"  # another tenant's node is a 404, as on the node page

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        node = selectors.visible_nodes(user=self.request.user).filter(
            hostname=kwargs["hostname"]).first()
        if node is None:
            raise Http404(f"No node {kwargs['hostname']!r}.")
        context.update(node=node, reading=bmc_reading(node))
        return context


class NodeBootOverrideView(InventoryPageMixin, View):
    """POST of the node page's "Next boot from" form: the same service as the API, then the
    Action's page (whose result says what the BMC read back)."""

    capability = "power"

    def post(self, request, hostname):
        node = selectors.visible_nodes(user=request.user).filter(hostname=hostname).first()
        if node is None:
            raise Http404(f"No node {hostname!r}.")
        try:
            action, _ = request_boot_override(
                node=node, target=request.POST.get("target", ""),
                reason=request.POST.get("reason", ""), requested_by=request.user, via="ui",
            )
        except (InvalidInput, Conflict) as refused:
            problems = refused.detail.values() if isinstance(refused.detail, dict) else [
                [refused.detail]]
            messages.error(request, "Nothing was queued. " + " ".join(
                str(problem) for field_problems in problems for problem in field_problems))
            return redirect(reverse("inventory:node-detail", args=[node.hostname]) + "#bmc")
        messages.success(request, f"Action #{action.pk} queued: next boot of {node.hostname} "
                                  f"from {BOOT_TARGETS[action.parameters['target']]}.")
        return redirect(reverse("action-detail", args=[action.pk]))


class PartHistoryView(InventoryPageMixin, TemplateView):
    """One serial's life: the slots it went into and came out of, and what replaced it."""

    section = "search"
    template_name = "inventory/part_history.html"
    capability = "read_inventory"  # only swaps on the nodes the reader sees (swap_list)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        serial = kwargs["serial"]
        context.update(
            serial=serial,
            events=selectors.part_history(user=self.request.user, serial=serial),
            installed_in=selectors.part_installed_in(user=self.request.user, serial=serial),
        )
        return context


class SparesView(InventoryPageMixin, TemplateView):
    """The spares shelves per site and part type (free, reserved, minimum) and the latest
    reservations; those who may write the inventory set a shelf's counts here (SpareSetView),
    as through /api/inventory/spares/; reservations go through the repair cases."""

    section = "spares"
    template_name = "inventory/spares.html"
    capability = "read_inventory"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        can_edit = may(self.request.user, "write_inventory")
        context.update(
            stocks=selectors.spare_stock_list(user=self.request.user),
            reservations=selectors.spare_reservation_list()[:50],
            can_edit_spares=can_edit,
            spare_form=kwargs.get("spare_form") or (SpareStockForm() if can_edit else None),
        )
        return context


class SpareSetView(InventoryPageMixin, View):
    """POST of the spares page's form: set a shelf's count on hand and minimum through the same
    service as the API. Refused input renders the page again (400) with each problem beside the
    field it names, and nothing written."""

    capability = "write_inventory"

    def post(self, request):
        form = SpareStockForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                stock = spare_stock_set(kind=data["kind"], site=data["site"],
                                        on_hand=data["on_hand"], minimum=data["minimum"],
                                        actor=request.user, via="ui")
            except InvalidInput as refused:
                for field, problems in (refused.detail.items()
                                        if isinstance(refused.detail, dict) else []):
                    form.add_error(field if field in form.fields else None, problems)
            else:
                messages.success(request, f"{stock.get_kind_display()} at {stock.site}: "
                                          f"{stock.on_hand} on hand, minimum {stock.minimum}.")
                return redirect("inventory:spares")
        view = SparesView(request=request, args=(), kwargs={})
        context = view.get_context_data(spare_form=form)
        return TemplateResponse(request, SparesView.template_name, context, status=400)


class NicTraceView(InventoryPageMixin, TemplateView):
    """The path of one NIC through the fabric; a fragment for htmx, a page otherwise."""

    template_name = "inventory/nic_trace.html"
    section = "nodes"

    def get(self, request, *args, **kwargs):
        context = self.get_context_data(**kwargs)
        template = "inventory/_trace.html" if is_htmx(request) else self.template_name
        return TemplateResponse(request, template, context)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        node = selectors.node_get(user=self.request.user, hostname=kwargs["hostname"])
        nic = next((nic for nic in node.nics.all() if nic.device == kwargs["device"]), None)
        if nic is None:
            raise Http404(f"No NIC {kwargs['device']!r} on {node.hostname}.")
        trace = cable_trace.trace_from_nic(nic)
        uplinks_by_spine = defaultdict(list)
        for uplink in trace.uplinks:
            uplinks_by_spine[uplink.remote_port.switch.hostname].append(uplink)
        context.update(
            node=node, nic=nic, trace=trace, uplinks_by_spine=sorted(uplinks_by_spine.items())
        )
        return context


class SwitchDetailView(InventoryPageMixin, TemplateView):
    section = "switches"
    template_name = "inventory/switch_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        switch = selectors.switch_get(user=user, hostname=kwargs["hostname"])
        behind = cable_trace.nodes_behind_switch(switch)
        behind_by_port = {row.port.pk: row for row in behind}
        # A broken-out cage shares its first lane with its first half: list the cage first
        # (a cage's breakout_mode is set, a half's and a plain port's empty).
        ports = pagination.page_of_rows(
            selectors.port_list(user=user, switch=switch).order_by(
                "index", "-breakout_mode", "name_sort_key"),
            self.request.GET.get("page"), pagination.SWITCH_PORT_ROWS_PER_PAGE,
        )
        rows = [(port, selectors.port_link(port), behind_by_port.get(port.pk)) for port in ports]
        hostnames_by_rail = defaultdict(list)
        for row in behind:
            hostnames_by_rail[row.rail].append(row.node.hostname)
        context.update(
            switch=switch,
            port_rows=rows,
            ports_page=ports,
            port_counts=selectors.switch_port_cabling_counts(switch),
            behind=behind,
            behind_by_rail=[
                (rail, compress_hostlist(names), len(names))
                for rail, names in sorted(
                    hostnames_by_rail.items(), key=lambda item: (item[0] is None, item[0] or 0)
                )
            ],
            switch_panels=switch_panels(),
            switch_badges=switch_badges(),
        )
        return context

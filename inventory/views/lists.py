"""List pages: nodes, switches, cables."""

from __future__ import annotations

from django.db.models import Count

from inventory import selectors
from inventory.forms import CableFilterForm, NodeFilterForm, SwitchFilterForm
from inventory.views.base import ALL_ROLES, FilteredListView


class NodeListView(FilteredListView):
    section = "nodes"
    template_name = "inventory/node_list.html"
    results_template = "inventory/_node_results.html"
    form_class = NodeFilterForm
    allowed_roles = ALL_ROLES  # a tenant admin sees their allocations' nodes only

    def rows(self, filters):
        return (
            selectors.node_list(user=self.request.user, filters=filters)
            .annotate(gpu_count=Count("gpus"))
            .order_by("hostname")
        )  # an aggregate drops the model's default ordering


class SwitchListView(FilteredListView):
    section = "switches"
    template_name = "inventory/switch_list.html"
    results_template = "inventory/_switch_results.html"
    form_class = SwitchFilterForm

    def rows(self, filters):
        return (
            selectors.switch_list(user=self.request.user, filters=filters)
            .annotate(port_count=Count("ports"))
            .order_by("hostname")
        )


class CableListView(FilteredListView):
    section = "cables"
    template_name = "inventory/cable_list.html"
    results_template = "inventory/_cable_results.html"
    form_class = CableFilterForm
    allowed_roles = ALL_ROLES  # a tenant admin sees the cables of their nodes only
    paginate_by = 100

    def rows(self, filters):
        return selectors.cable_list(user=self.request.user, filters=filters)

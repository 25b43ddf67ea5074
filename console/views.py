"""Pages of the console app: the dashboard (cluster grid, Actions, services) and the search
behind the header's jump box. The tenant pages are in console/tenant_views.py."""

from __future__ import annotations

from django.shortcuts import redirect
from django.views.generic import TemplateView

from console.dashboard import clean_grid_filters, cluster_grid
from console.search import search
from inventory.selectors import spares_below_minimum
from portal import selectors
from portal.errors import InvalidInput
from portal.health import recent_readiness
from portal.models import ActionStatus
from portal.roles import may
from portal.views import RoleRequiredMixin


class SearchPageView(RoleRequiredMixin, TemplateView):
    """The jump box's target: straight to the object when the query names exactly one, else
    the list of matches (or why the query was refused) with the box filled in again."""

    template_name = "console/search.html"
    capability = "use_portal"

    def get(self, request, *args, **kwargs):
        query = request.GET.get("q", "").strip()
        context = self.get_context_data(query=query, result=None, error="")
        if query:
            try:
                result = search(user=request.user, query=query)
            except InvalidInput as error:
                context["error"] = "; ".join(str(m) for m in error.detail.get("q", [error]))
                return self.render_to_response(context, status=400)
            if result.jump is not None and request.GET.get("list") != "1":
                return redirect(result.jump.url)
            context["result"] = result
        return self.render_to_response(context)


class DashboardView(RoleRequiredMixin, TemplateView):
    template_name = "console/dashboard.html"
    capability = "use_portal"

    def get(self, request, *args, **kwargs):
        # ?pod=p3, ?rack= (within the pod) and ?view=problems narrow the grid; a bad value is
        # a 400 naming its field.
        try:
            grid, errors = cluster_grid(user=request.user, **clean_grid_filters(request.GET)), {}
        except InvalidInput as error:
            grid, errors = cluster_grid(user=request.user), error.detail
        context = self.get_context_data(grid=grid, grid_errors=errors, **kwargs)
        return self.render_to_response(context, status=400 if errors else 200)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        counts = selectors.action_counts_by_status() if may(user, "read_cluster") else {}
        context.update(
            action_counts=[(status, counts.get(status, 0)) for status in ActionStatus.values],
            recent_actions=selectors.action_list(user=user)[:10],
            tenants=selectors.tenant_list(user=user),
            readiness=recent_readiness(),
            periodic_tasks=selectors.periodic_task_list(user=user),
            spares_low=spares_below_minimum() if may(user, "read_inventory") else [],
        )
        return context

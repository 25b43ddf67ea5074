"""Pages of the telemetry app (namespace `telemetry`): the operators' live view of idle GPUs
inside running jobs. The other telemetry panels live on other apps' pages (templatetags)."""

from __future__ import annotations

from django.views.generic import TemplateView

from portal.views import RoleRequiredMixin
from telemetry import selectors


class IdleGpusView(RoleRequiredMixin, TemplateView):
    """Re-fetched by htmx every 15 s (?fragment=1 answers the table alone)."""

    template_name = "telemetry/idle_gpus.html"
    capability = "read_tenant_data"

    def get_template_names(self):
        if self.request.GET.get("fragment"):
            return ["telemetry/_idle_gpus.html"]
        return [self.template_name]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["telemetry"] = selectors.idle_gpus(user=self.request.user)
        return context

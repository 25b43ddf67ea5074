"""The workload analytics page (DESIGN.md section 9): job state and size shares, runtime CDFs
and daily submissions, over the jobs the user may see."""

from __future__ import annotations

from django.views.generic import TemplateView

from jobs.analytics import JOB_KINDS, parse_kind, parse_period, workload_analytics
from portal.errors import InvalidInput
from portal.models import Tenant
from portal.roles import may
from portal.views import RoleRequiredMixin


def _problems(error: InvalidInput) -> dict[str, str]:
    detail = error.detail if isinstance(error.detail, dict) else {"query": [error.detail]}
    return {
        field: " ".join(map(str, messages if isinstance(messages, list) else [messages]))
        for field, messages in detail.items()
    }


class JobAnalyticsView(RoleRequiredMixin, TemplateView):
    """Tenant admins see their own tenant's jobs only; cluster-wide job readers may pick one
    tenant with ?tenant=. Bad dates or an unknown tenant: the page with the problem, 400."""

    template_name = "jobs/analytics.html"
    capability = "read_jobs"

    def get(self, request, *args, **kwargs):
        params = request.GET
        context = self.get_context_data(
            since=params.get("since", "").strip(),
            until=params.get("until", "").strip(),
            tenant=params.get("tenant", "").strip(),
            kind=params.get("kind", "").strip(),
            kinds=JOB_KINDS,
            tenants=(
                list(Tenant.objects.order_by("name").values("slug", "name"))
                if may(request.user, "read_tenant_data")
                else []
            ),
        )
        try:
            period = parse_period(context["since"], context["until"])
            stats = workload_analytics(
                user=request.user, period=period, tenant_slug=context["tenant"] or None,
                kind=parse_kind(context["kind"]),
            )
        except InvalidInput as error:
            context["problems"] = _problems(error)
            return self.render_to_response(context, status=400)
        for row in stats["sizes"]["rows"]:
            row["runtime_hours"] = [
                (seconds, None if seconds is None else round(seconds / 3600, 2))
                for seconds in row["runtime_seconds"].values()
            ]
        daily = stats["daily_submissions"]["series"]
        context.update(stats=stats, chart=stats,
                       daily_has_data=any(any(series["counts"]) for series in daily))
        return self.render_to_response(context)

"""Pages of the portal app, and the operations endpoints."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views import View
from django.views.generic import DetailView, ListView
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from portal import selectors
from portal.errors import Conflict
from portal.health import readiness
from portal.metrics import register_portal_collector
from portal.models import ActionStatus
from portal.ordering import Ordering, SortableListMixin
from portal.roles import may
from portal.services.actions import cancel_action


class RoleRequiredMixin(LoginRequiredMixin):
    """Pages declare the `capability` they need (portal/roles.py); a role without it gets 403."""

    capability = "read_cluster"

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and not may(request.user, self.capability):
            raise PermissionDenied("Your role does not allow this page.")
        return super().dispatch(request, *args, **kwargs)


class ActionListView(SortableListMixin, RoleRequiredMixin, ListView):
    template_name = "portal/action_list.html"
    context_object_name = "actions"
    paginate_by = 50
    sort_columns = Ordering(
        {"id": ("id",), "kind": ("kind",), "target": ("target",), "status": ("status",),
         "attempts": ("attempts",), "by": ("requested_by__username",),
         "created": ("created_at",)},
        default="-created",
    )

    def get_queryset(self):
        actions = selectors.action_list(user=self.request.user)
        status = self.request.GET.get("status")
        if status in ActionStatus.values:
            actions = actions.filter(status=status)
        return self.sort_queryset(actions)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["statuses"] = ActionStatus.values
        context["current_status"] = self.request.GET.get("status", "")
        return context


class ActionDetailView(RoleRequiredMixin, DetailView):
    template_name = "portal/action_detail.html"
    context_object_name = "action"

    def get_queryset(self):
        return selectors.action_list(user=self.request.user).prefetch_related("attempt_log")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["can_cancel"] = (
            may(self.request.user, "cancel_action") and self.object.status == ActionStatus.QUEUED
        )
        # The fault tickets this Action caused or answered (a port shut opens one):
        # the reverse of the faults app's link, so portal imports no domain app; tickets are
        # cluster-wide records, not shown to a tenant admin.
        linked = getattr(self.object, "fault_tickets", None)
        if linked is not None and may(self.request.user, "read_faults"):
            context["fault_tickets"] = list(linked.order_by("pk"))
        return context


class ActionCancelView(RoleRequiredMixin, View):
    capability = "cancel_action"

    def post(self, request, pk):
        action = selectors.action_list(user=request.user).filter(pk=pk).first()
        if action is None:
            raise Http404("No such Action")
        try:
            cancel_action(
                action=action,
                cancelled_by=request.user,
                reason=request.POST.get("reason", ""),
                via="ui",
            )
            messages.success(request, f"Action #{pk} cancelled.")
        except Conflict as error:
            messages.error(request, error.detail)
        return redirect("action-detail", pk=pk)


class AuditListView(SortableListMixin, RoleRequiredMixin, ListView):
    template_name = "portal/audit_list.html"
    context_object_name = "entries"
    paginate_by = 100
    capability = "read_audit"
    sort_columns = Ordering(
        {"when": ("timestamp",), "who": ("actor__username",), "via": ("via",),
         "operation": ("operation",), "object": ("object_type", "object_id")},
        default="-when",
    )

    def get_queryset(self):
        entries = selectors.audit_list(user=self.request.user)
        object_type = self.request.GET.get("object_type")
        if object_type:
            entries = entries.filter(object_type=object_type)
        return self.sort_queryset(entries)


class TenantListView(SortableListMixin, RoleRequiredMixin, ListView):
    template_name = "portal/tenant_list.html"
    context_object_name = "tenants"
    capability = "read_tenants"
    sort_columns = Ordering(
        {"name": ("name",), "slug": ("slug",), "account": ("slurm_account",),
         "vni": ("evpn_vni",), "users": ("user_count",)},
        default="name",
    )

    def get_queryset(self):
        return self.sort_queryset(selectors.tenant_list(user=self.request.user))


# --- operations endpoints ----------------------------------------------------------------------


def healthz(request):
    """The process is up and serving; says nothing about its dependencies."""
    return JsonResponse({"status": "ok"})


def readyz(request):
    """Every dependency reachable, or 503 naming the ones that are not."""
    report = readiness()
    down = {name: state for name, state in report.items() if "unreachable" in state}
    body = {"status": "unavailable" if down else "ready", "checks": report}
    if down:
        body["down"] = sorted(down)
    return JsonResponse(body, status=503 if down else 200)


def metrics(request):
    register_portal_collector()
    return HttpResponse(generate_latest(), content_type=CONTENT_TYPE_LATEST)


# --- errors: JSON under /api/, pages elsewhere -------------------------------------------------


def page_not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"detail": f"No API endpoint at {request.path}. See /api/docs/ for the list."},
            status=404,
        )
    from django.views.defaults import page_not_found as django_page_not_found

    return django_page_not_found(request, exception, template_name="404.html")


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal error; it has been logged."}, status=500)
    from django.views.defaults import server_error as django_server_error

    return django_server_error(request, template_name="500.html")

"""Tenant pages: a tenant's allocations and their nodes' states, their jobs, GPU-hours
used against the allocations' capacity and open faults on their nodes; operators allocate nodes
and end allocations here, tenant admins read their own tenant and export it as CSV."""

from __future__ import annotations

from collections import Counter

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views import View
from django.views.generic import TemplateView

from console import usage
from inventory.allocations import allocation_create, allocation_end
from inventory.hostlist import compress_hostlist
from inventory.models import Pod, Rack
from inventory.selectors import allocation_list, may_read_tenant_data
from portal import selectors
from portal.csv_export import csv_writer
from portal.errors import ServiceError
from portal.node_states import GRID_STATES, grid_state
from portal.roles import may
from portal.views import RoleRequiredMixin


class AllocationForm(forms.Form):
    hostlist = forms.CharField(required=False, help_text="e.g. gpu[001-016]")
    pod = forms.ModelChoiceField(Pod.objects.all(), required=False, empty_label="(no pod)")
    rack = forms.ModelChoiceField(Rack.objects.all(), required=False, empty_label="(no rack)")
    start = forms.DateTimeField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    end = forms.DateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="empty: open-ended",
    )
    purpose = forms.CharField(required=False, max_length=200)


def tenant_for(user, slug: str):
    """The tenant if `user` may see it; 404 otherwise (never reveal another tenant exists)."""
    tenant = selectors.tenant_list(user=user).filter(slug=slug).first()
    if tenant is None:
        raise Http404("No such tenant.")
    return tenant


def private_tenant_for(user, slug: str):
    """The tenant for a page or file of its private data; 403 for a role that sees only that
    the tenant exists (a viewer's file would be empty, which reads as "nothing allocated")."""
    tenant = tenant_for(user, slug)
    if not may_read_tenant_data(user, tenant):
        raise PermissionDenied("Your role does not see this tenant's allocations, jobs or usage.")
    return tenant


def allocation_rows(user, tenant) -> list[dict]:
    rows = []
    for allocation in allocation_list(user=user).filter(tenant=tenant):
        nodes = sorted(allocation.nodes.all(), key=lambda node: node.hostname)
        states = Counter(grid_state(node.slurm_state) for node in nodes)
        rows.append(
            {
                "allocation": allocation,
                "hostlist": compress_hostlist([node.hostname for node in nodes]),
                "node_count": len(nodes),
                "states": [
                    (state, GRID_STATES[state], states[state])
                    for state in GRID_STATES
                    if states[state]
                ],
            }
        )
    return rows


class TenantDetailView(RoleRequiredMixin, TemplateView):
    template_name = "console/tenant_detail.html"
    capability = "read_tenants"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        tenant = tenant_for(user, kwargs["slug"])
        # A viewer may see that a tenant exists, not its private data: the page says "hidden
        # for your role" rather than "No allocations" and "0.00 GPU-hours".
        private_hidden = not may_read_tenant_data(user, tenant)
        context.update(tenant=tenant, private_hidden=private_hidden,
                       can_allocate=may(user, "allocate"),
                       form=kwargs.get("form") or AllocationForm())
        if private_hidden:
            return context
        tenant_usage = usage.tenant_usage(user=user, tenant=tenant)
        context.update(
            allocations=allocation_rows(user, tenant),
            node_faults=usage.tenant_open_faults(user=user, tenant=tenant),
            usage=tenant_usage,
            now=tenant_usage.end,
            usage_rows=tenant_usage.rows(),
            usage_by_user=[
                (name, usage.gpu_hours(seconds))
                for name, seconds in tenant_usage.used_seconds_by_user.items()
            ],
            usage_total_hours=usage.gpu_hours(tenant_usage.total_used_seconds),
            usage_capacity_hours=usage.gpu_hours(tenant_usage.total_capacity_seconds),
            usage_chart=tenant_usage.chart(),
            running_jobs=usage.tenant_running_jobs(user=user, tenant=tenant)[:100],
            past_jobs=usage.tenant_past_jobs(user=user, tenant=tenant),
        )
        return context

    def post(self, request, slug):
        if not may(request.user, "allocate"):
            return HttpResponse("Your role does not allow this.", status=403)
        tenant = tenant_for(request.user, slug)
        form = AllocationForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                allocation = allocation_create(
                    tenant=tenant,
                    start=data["start"],
                    end=data["end"],
                    hostlist=data["hostlist"] or None,
                    pod=data["pod"],
                    rack=data["rack"],
                    purpose=data["purpose"],
                    created_by=request.user,
                    via="ui",
                )
            except ServiceError as error:
                problems = (
                    error.detail if isinstance(error.detail, dict) else {None: [error.detail]}
                )
                for field, messages_ in problems.items():
                    for message in messages_:
                        form.add_error(field if field in form.fields else None, message)
            else:
                messages.success(
                    request,
                    f"Allocation #{allocation.pk} created; its Slurm reservation is queued.",
                )
                return redirect("tenant-detail", slug=slug)
        context = self.get_context_data(slug=slug, form=form)
        return self.render_to_response(context, status=400)


class AllocationEndView(RoleRequiredMixin, View):
    capability = "allocate"

    def post(self, request, slug, pk):
        tenant = tenant_for(request.user, slug)
        allocation = allocation_list(user=request.user).filter(tenant=tenant, pk=pk).first()
        if allocation is None:
            raise Http404("No such allocation.")
        try:
            allocation_end(allocation=allocation, ended_by=request.user, via="ui")
            messages.success(request, f"Allocation #{pk} ended; its reservation will be removed.")
        except ServiceError as error:
            messages.error(request, str(error.detail))
        return redirect("tenant-detail", slug=slug)


class TenantAllocationsCsvView(RoleRequiredMixin, View):
    capability = "read_tenants"

    def get(self, request, slug):
        tenant = private_tenant_for(request.user, slug)
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="{tenant.slug}-allocations.csv"'
        writer = csv_writer(response)
        writer.writerow(["allocation", "tenant", "nodes", "node_count", "start", "end", "purpose"])
        for row in allocation_rows(request.user, tenant):
            allocation = row["allocation"]
            writer.writerow(
                [
                    allocation.pk,
                    tenant.slug,
                    row["hostlist"],
                    row["node_count"],
                    allocation.start.isoformat(),
                    allocation.end.isoformat() if allocation.end else "",
                    allocation.purpose,
                ]
            )
        return response


class TenantUsageCsvView(RoleRequiredMixin, View):
    """GPU-hours per UTC day and user over the usage period, the tenant's own jobs only."""

    capability = "read_tenants"

    def get(self, request, slug):
        tenant = private_tenant_for(request.user, slug)
        tenant_usage = usage.tenant_usage(user=request.user, tenant=tenant)
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="{tenant.slug}-gpu-usage.csv"'
        writer = csv_writer(response)
        writer.writerow(["date", "tenant", "user", "gpu_hours"])
        for day, user_name, hours in tenant_usage.rows():
            writer.writerow([day.isoformat(), tenant.slug, user_name, f"{hours:.2f}"])
        return response

"""Pages of the jobs app: the job list and detail, and the drain/resume forms behind the node
panel and the bulk drain form (the inventory pages include those partials)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from django.contrib import messages
from django.db import transaction
from django.db.models.functions import Length
from django.http import Http404, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View
from django.views.generic import DetailView, ListView, TemplateView

from inventory.selectors import visible_nodes
from jobs import selectors
from jobs.buckets import SIZE_BUCKET_LABELS
from jobs.services import request_cancel_reboot, request_drain, request_resume
from portal.errors import Conflict, InvalidInput
from portal.ordering import Ordering, SortableListMixin
from portal.views import RoleRequiredMixin

LIST_FILTERS = ("state", "user", "account", "partition", "size", "live", "node")


def _messages_of(error: InvalidInput | Conflict) -> str:
    detail = error.detail
    if isinstance(detail, dict):
        return "; ".join(
            f"{field}: {' '.join(map(str, problems if isinstance(problems, list) else [problems]))}"
            for field, problems in detail.items()
        )
    return str(detail)


class JobListView(SortableListMixin, RoleRequiredMixin, ListView):
    template_name = "jobs/job_list.html"
    context_object_name = "jobs"
    paginate_by = 50
    capability = "read_jobs"
    # Slurm job ids are numbers stored as text: shorter first sorts 999 before 1098.
    sort_columns = Ordering(
        {"job": (Length("job_id"), "job_id"), "name": ("name",), "user": ("user",),
         "account": ("account",), "partition": ("partition",), "state": ("state",),
         "nodes": ("node_count",), "gpus": ("gpus",), "submitted": ("submit_time",),
         "exit": ("exit_code",)},
        default="-submitted",
    )

    def get_filters(self) -> dict:
        filters = {name: self.request.GET.get(name, "").strip() for name in LIST_FILTERS}
        if "live" not in self.request.GET and not any(filters.values()):
            filters["live"] = "1"  # the default view: what is in the queue now
        return {name: value for name, value in filters.items() if value}

    def get_queryset(self):
        self.filter_error = ""
        try:
            return self.sort_queryset(
                selectors.job_list(user=self.request.user, filters=self.get_filters()))
        except InvalidInput as error:
            self.filter_error = _messages_of(error)
            return selectors.job_list(user=self.request.user).none()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        query = self.request.GET.copy()
        query.pop("page", None)
        context.update(
            filters=self.get_filters(),
            filter_error=self.filter_error,
            choices=selectors.job_filter_choices(user=self.request.user),
            sizes=SIZE_BUCKET_LABELS,
            query=query.urlencode(),
            now=timezone.now(),
        )
        return context


class JobDetailView(RoleRequiredMixin, DetailView):
    template_name = "jobs/job_detail.html"
    context_object_name = "job"
    slug_field = "job_id"
    slug_url_kwarg = "job_id"
    capability = "read_jobs"

    def get_queryset(self):
        return selectors.visible_jobs(user=self.request.user).select_related("tenant")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        hardware = selectors.job_hardware(self.object)
        context["hardware"] = hardware
        # A tenant's job may run on shared nodes outside its allocation: their names show, but
        # only the nodes this user may open are links (a tenant admin's link was a 404).
        context["openable_nodes"] = set(
            visible_nodes(user=self.request.user)
            .filter(pk__in=[row.node.pk for row in hardware.nodes])
            .values_list("hostname", flat=True)
        )
        context["now"] = timezone.now()
        return context


class NodeSlurmPanelView(RoleRequiredMixin, TemplateView):
    """The node panel on its own (the inventory's node page includes the same partial)."""

    template_name = "jobs/node_slurm_panel_page.html"
    capability = "read_inventory"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        node = visible_nodes(user=self.request.user).filter(hostname=kwargs["hostname"]).first()
        if node is None:
            raise Http404("No such node")
        context["node"] = node
        return context


class BulkDrainPageView(RoleRequiredMixin, TemplateView):
    template_name = "jobs/bulk_drain_page.html"
    capability = "drain"

    def get_context_data(self, **kwargs):
        # The node list links here with its current hostlist filter, e.g. ?hostlist=gpu[001-016].
        return super().get_context_data(hostlist=self.request.GET.get("hostlist", "")[:1000])


class _NodeActionView(RoleRequiredMixin, View):
    """POST from the node panel or the bulk form: one Action, then its page."""

    verb = ""

    def back(self, request):
        """To the form's page, carrying what was typed (the hostlist and the reason) in the
        query string so the refused form comes back filled in."""
        target = request.POST.get("next", "")
        if not (target and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )):
            target = reverse("jobs:bulk-drain")
        return redirect(_with_typed_input(target, request.POST, self.verb))

    def post(self, request):
        if request.POST.get("confirm") != "yes":
            messages.error(request, f"Tick the confirmation box to {self.verb} the nodes.")
            return self.back(request)
        node_ids = [value for value in request.POST.getlist("node_id") if value]
        try:
            with transaction.atomic():
                nodes = selectors.nodes_for_request(
                    user=request.user,
                    hostlist=request.POST.get("hostlist", "").strip() or None,
                    node_ids=node_ids or None,
                )
                action = self.request_action(request, nodes)
        except (InvalidInput, Conflict) as error:
            messages.error(request, f"Nothing was queued. {_messages_of(error)}")
            return self.back(request)
        messages.success(
            request, f"Action #{action.pk} queued: {self.verb} {action.target}."
        )
        return redirect(reverse("action-detail", args=[action.pk]))

    def request_action(self, request, nodes):
        raise NotImplementedError


def _with_typed_input(url: str, posted, verb: str) -> str:
    parts = urlsplit(url)
    query = QueryDict(parts.query, mutable=True)
    if posted.get("hostlist", "").strip():
        query["hostlist"] = posted["hostlist"].strip()[:1000]
    if posted.get("reason", "").strip():
        query[f"{verb}_reason"] = posted["reason"].strip()[:1000]
    return urlunsplit(parts._replace(query=query.urlencode()))


class NodeDrainFormView(_NodeActionView):
    capability = "drain"
    verb = "drain"

    def request_action(self, request, nodes):
        action, _ = request_drain(
            nodes=nodes, reason=request.POST.get("reason", ""), requested_by=request.user,
            via="ui",
        )
        return action


class NodeResumeFormView(_NodeActionView):
    capability = "resume"
    verb = "resume"

    def request_action(self, request, nodes):
        action, _ = request_resume(
            nodes=nodes,
            reason=request.POST.get("reason", ""),
            requested_by=request.user,
            override=request.POST.get("override") == "yes",
            via="ui",
        )
        return action


class NodeCancelRebootFormView(_NodeActionView):
    """The node panel's "Cancel the reboot", offered while Slurm holds a requested reboot."""

    capability = "reboot"
    verb = "cancel_reboot"

    def request_action(self, request, nodes):
        action, _ = request_cancel_reboot(
            nodes=nodes, reason=request.POST.get("reason", ""), requested_by=request.user,
            via="ui",
        )
        return action

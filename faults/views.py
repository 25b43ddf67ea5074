"""Pages of the faults app: the on-call board, a ticket, the report form, statistics."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.views import View
from django.views.generic import ListView, TemplateView

from faults import selectors, statistics
from faults.forms import NodeEventForm, TransitionForm, UserReportForm
from faults.hooks import visible_impact
from faults.models import Category, RecoveryMethod, Source
from faults.parsing import reported_gpu
from faults.services import intake, repairs, tickets
from faults.services.recovery import recovery_steps, request_recovery, resolve_blockers
from faults.workflow import Status, allowed_targets
from inventory import selectors as inventory_selectors
from inventory.models import ComponentKind, Node, Pod
from portal.csv_export import csv_writer
from portal.errors import Conflict, InvalidInput, ServiceError
from portal.ordering import Ordering, SortableListMixin
from portal.roles import may
from portal.views import RoleRequiredMixin

# Column headings of the statistics page's month table (the full labels are in the title).
SHORT_CATEGORY_LABELS = {
    Category.GPU: "GPU",
    Category.NVLINK_NVSWITCH_PCIE: "NVLink / NVSwitch / PCIe",
    Category.NIC_TRANSCEIVER: "NIC / transceiver",
    Category.INTERCONNECT_SWITCH: "Interconnect switch",
    Category.STORAGE_SWITCH: "Storage switch",
    Category.MISCONFIGURATION: "Misconfiguration",
}
BOARD_FILTERS = ("category", "pod", "component", "severity", "source")
COMPONENTS = ("gpu", "nic", "node", "switch", "port")


def _error_text(error: ServiceError) -> str:
    if isinstance(error.detail, dict):
        return " ".join(
            f"{field}: {' '.join(m if isinstance(m, str) else str(m) for m in messages_)}"
            if isinstance(messages_, list) else f"{field}: {messages_}"
            for field, messages_ in error.detail.items()
        )
    return str(error.detail)


def _show_refusal_on(form, refused: ServiceError) -> None:
    """A service's refusal on the form that asked, each problem beside its field."""
    for field, problems in (refused.detail.items() if isinstance(refused.detail, dict) else []):
        form.add_error(field if field in form.fields else None, problems)


def _visible_ticket(request, pk: int):
    ticket = selectors.ticket_get(user=request.user, pk=pk)
    if ticket is None:
        raise Http404("No such fault ticket")
    return ticket


class BoardView(RoleRequiredMixin, TemplateView):
    """Open tickets by state; filters; acknowledge and transition in place."""

    template_name = "faults/board.html"
    capability = "read_faults"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        filters = {name: self.request.GET.get(name, "") for name in BOARD_FILTERS}
        columns = selectors.board_columns(user=self.request.user, filters=filters)
        context.update(
            columns=columns,
            open_count=sum(len(tickets) for _, tickets in columns),
            filters=filters,
            categories=Category.choices,
            pods=Pod.objects.order_by("name").values_list("name", flat=True),
            components=COMPONENTS,
            sources=Source.choices,
            recovery_methods=RecoveryMethod.choices,
            can_act=may(self.request.user, "respond_to_faults"),
        )
        return context


class TicketListView(SortableListMixin, RoleRequiredMixin, ListView):
    """Every ticket, newest first: a node's or a category's history."""

    template_name = "faults/ticket_list.html"
    capability = "read_faults"
    context_object_name = "tickets"
    paginate_by = 50
    filter_names = ("status", "category", "node", "pod", "component", "source", "q")
    sort_columns = Ordering(
        {"ticket": ("id",), "status": ("status",), "severity": ("severity",),
         "category": ("category",), "summary": ("summary",), "detected": ("detected_at",),
         "recovery": ("recovery_method",)},
        default="-detected",
    )

    def get_queryset(self):
        filters = {name: self.request.GET.get(name, "") for name in self.filter_names}
        return self.sort_queryset(selectors.ticket_list(user=self.request.user, filters=filters))

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["filters"] = {name: self.request.GET.get(name, "") for name in self.filter_names}
        return context


class TicketDetailView(RoleRequiredMixin, TemplateView):
    template_name = "faults/ticket_detail.html"
    capability = "read_faults"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        ticket = _visible_ticket(self.request, kwargs["pk"])
        history = selectors.component_history(ticket)
        context.update(self.form_values(ticket, kwargs.get("kept_operation", ""),
                                        kwargs.get("kept") or {}))
        context.update(
            ticket=ticket,
            timeline=selectors.ticket_timeline(ticket),
            transitions=ticket.transitions.select_related("actor"),
            actions=ticket.actions.order_by("pk"),
            history=history,
            history_count=len(history),
            standing=selectors.ticket_standing(ticket),
            allowed=allowed_targets(ticket.status),
            categories=Category.choices,
            recovery_methods=RecoveryMethod.choices,
            intake_records=ticket.intake_records.order_by("received_at")[:50],
            can_act=may(self.request.user, "respond_to_faults"),
            reopened_as=ticket.reopened_as.all(),
            recovery_steps=recovery_steps(ticket, user=self.request.user),
            resolve_blockers=resolve_blockers(ticket),
            impact_at_detection=visible_impact(ticket.impact, user=self.request.user),
            impact_captured_at=parse_datetime((ticket.impact or {}).get("captured_at") or ""),
            allowed_choices=[(value, Status(value).label)
                             for value in allowed_targets(ticket.status)],
            repair_cases=selectors.ticket_repair_cases(user=self.request.user, ticket=ticket),
            vendor_case_proposal=selectors.vendor_case_proposal(ticket),
            component_kinds=ComponentKind.choices,
        )
        return context

    @staticmethod
    def form_values(ticket, operation: str, kept) -> dict:
        """What the page's forms show: the ticket's values, or what was typed into the form
        the server just refused, so a refusal never throws the typing away."""
        transition = kept if operation == "transition" else {}
        evidence = selectors.recovery_evidence(ticket)
        expected = ticket.rma_expected_at.isoformat() if ticket.rma_expected_at else ""
        return {
            "transition_values": {
                "to_status": transition.get("to_status", ""),
                "category": transition.get("category", ticket.category),
                "subtype": transition.get("subtype", ticket.subtype),
                "recovery_method": transition.get(
                    "recovery_method",
                    ticket.recovery_method or (evidence.method if evidence else ""),
                ),
                "recovery_evidence": evidence,
                "rma_part": transition.get("rma_part", ticket.rma_part),
                "rma_case_number": transition.get("rma_case_number", ticket.rma_case_number),
                "rma_expected_at": transition.get("rma_expected_at", expected),
                "note": transition.get("note", ""),
            },
            "repair_values": (
                {name: kept.get(name, "") for name in ("vendor", "vendor_case_number", "component",
                                                       "gpu_index", "nic", "position",
                                                       "expected_at")}
                if operation == "repair" else _repair_slot_of(ticket)
            ),
            "note_text": kept.get("text", "") if operation == "note" else "",
            "reopen_note": kept.get("note", "") if operation == "reopen" else "",
        }


def _repair_slot_of(ticket) -> dict:
    """A new case's form starts at the component the ticket names: its GPU or its NIC."""
    if ticket.gpu_id:
        return {"component": ComponentKind.GPU, "gpu_index": ticket.gpu.index}
    if ticket.nic_id:
        return {"component": ComponentKind.NIC, "nic": ticket.nic.device}
    return {}


class TicketActView(RoleRequiredMixin, View):
    """POSTs from the board and the ticket page: acknowledge, transition, note, reopen.

    From htmx (the board) the answer is the ticket's card, re-rendered, with any refusal shown
    on it; from a plain form it is a redirect to the ticket with a message.
    """

    capability = "respond_to_faults"
    operation = ""
    # A recovery step only queues an Action (its own message says so): "done" would be untrue.
    says_done = True

    def post(self, request, pk):
        ticket = _visible_ticket(request, pk)
        error = None
        try:
            ticket = self.perform(request, ticket)
        except ServiceError as refused:
            error = _error_text(refused)
        if request.headers.get("HX-Request"):
            ticket = _visible_ticket(request, ticket.pk)
            response = render(request, "faults/_ticket_card.html", {
                "ticket": ticket, "can_act": True, "card_error": error,
                "categories": Category.choices, "recovery_methods": RecoveryMethod.choices,
            })
            return response
        if error:
            # The ticket page again, with the refusal and what was typed, not a redirect that
            # would empty the form.
            messages.error(request, error)
            page = TicketDetailView()
            page.setup(request, pk=ticket.pk)
            context = page.get_context_data(pk=ticket.pk, kept=request.POST,
                                            kept_operation=self.operation)
            return render(request, page.template_name, context, status=400)
        if self.says_done:
            messages.success(request, f"{ticket.reference}: {self.operation} done.")
        return redirect("faults:ticket", pk=ticket.pk)

    def perform(self, request, ticket):
        raise NotImplementedError


class AcknowledgeView(TicketActView):
    operation = "acknowledge"

    def perform(self, request, ticket):
        return tickets.acknowledge_ticket(ticket=ticket, actor=request.user)


class TransitionView(TicketActView):
    operation = "transition"

    def perform(self, request, ticket):
        form = TransitionForm(request.POST)
        if not form.is_valid():
            raise InvalidInput(
                {field: list(errors) for field, errors in form.errors.items()}
            )
        return tickets.transition_ticket(
            ticket=ticket, actor=request.user, via="ui", **form.service_arguments()
        )


class NoteView(TicketActView):
    operation = "note"

    def perform(self, request, ticket):
        tickets.add_note(ticket=ticket, author=request.user, text=request.POST.get("text", ""))
        return ticket


class RecoveryView(TicketActView):
    """One click on a recovery step of the ticket (drain, resume, shut or start the port)."""

    operation = "recovery"
    says_done = False

    def perform(self, request, ticket):
        step = request.POST.get("step", "")
        offered = {option.step: option for option in recovery_steps(ticket)}
        if step in offered and not may(request.user, offered[step].capability):
            raise Conflict({"step": [f"Your role may not {offered[step].label.lower()}."]})
        action = request_recovery(ticket=ticket, step=step, actor=request.user, via="ui",
                                  confirm=request.POST.get("confirm") == "1",
                                  override_reason=request.POST.get("override_reason", ""))
        messages.info(request, f"Action #{action.pk} queued: {action.kind} {action.target}.")
        return ticket


class ReopenView(TicketActView):
    operation = "reopen"

    def perform(self, request, ticket):
        return tickets.reopen_ticket(
            ticket=ticket, actor=request.user, note=request.POST.get("note", "")
        )


class ReportView(RoleRequiredMixin, View):
    """The user report form: what a person saw, on which node/GPU or switch."""

    capability = "respond_to_faults"
    template_name = "faults/report.html"

    def get(self, request):
        initial = {"node": request.GET.get("node")} if request.GET.get("node") else None
        return render(request, self.template_name, {"form": UserReportForm(initial=initial)})

    def post(self, request):
        form = UserReportForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                ticket, created = intake.submit_user_report(
                    reported_by=request.user, summary=data["summary"], node=data["node"],
                    gpu=reported_gpu(data["node"], data.get("gpu")), switch=data["switch"],
                    category=data["category"], description=data["description"],
                )
            except ServiceError as refused:
                _show_refusal_on(form, refused)
            else:
                word = "opened" if created else "added to the open ticket"
                messages.success(request, f"Report {word}: {ticket.reference}.")
                return redirect("faults:ticket", pk=ticket.pk)
        return render(request, self.template_name, {"form": form}, status=400)


class NodeEventReportView(RoleRequiredMixin, View):
    """Report an XID, ECC, NVLink or NIC event seen on one node (the node page's form posts
    here; a refusal is shown on this page with what was chosen, never thrown away)."""

    capability = "respond_to_faults"
    template_name = "faults/report_node_event.html"

    def _node(self, hostname: str) -> Node:
        node = Node.objects.prefetch_related("gpus", "nics").filter(hostname=hostname).first()
        if node is None:
            raise Http404("No such node")
        return node

    def get(self, request, hostname):
        node = self._node(hostname)
        return render(request, self.template_name, {"node": node, "form": NodeEventForm(node=node)})

    def post(self, request, hostname):
        node = self._node(hostname)
        form = NodeEventForm(request.POST, node=node)
        if form.is_valid():
            try:
                ticket, created = intake.submit_node_event(reported_by=request.user,
                                                           event=form.event())
            except ServiceError as refused:
                _show_refusal_on(form, refused)
            else:
                word = "opened" if created else "added to the open ticket"
                messages.success(request, f"Event reported, {word}: {ticket.reference}.")
                return redirect("faults:ticket", pk=ticket.pk)
        return render(request, self.template_name, {"node": node, "form": form}, status=400)


class StatisticsView(RoleRequiredMixin, TemplateView):
    template_name = "faults/statistics.html"
    capability = "read_faults"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        stats = statistics.fault_statistics()
        chart = {
            "months": [row["month"] for row in stats["by_month"]],
            "counts": [row["count"] for row in stats["by_month"]],
            "mttr": [row["mttr_hours"] for row in stats["by_month"]],
            "categories": [
                {"label": label, "counts": [row["by_category"].get(value, 0)
                                            for row in stats["by_month"]]}
                for value, label in Category.choices if value != Category.UNCLASSIFIED
            ],
        }
        chart["has_faults"] = any(chart["counts"])
        chart["has_repairs"] = any(hours is not None for hours in chart["mttr"])
        short = [(value, label, SHORT_CATEGORY_LABELS[value])
                 for value, label in Category.choices if value in SHORT_CATEGORY_LABELS]
        context.update(
            stats=stats, chart=chart, month_columns=short,
            repair_rows=stats["repair_statistics"],
            offenders=selectors.repeat_offenders(user=self.request.user),
        )
        return context


class RepairCaseCsvView(RoleRequiredMixin, View):
    """Every repair case as CSV, for the vendor review; cells a spreadsheet would run as a
    formula (a vendor case number typed as `=...`) are neutralised by csv_writer."""

    capability = "read_faults"

    def get(self, request):
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="repair-cases.csv"'
        writer = csv_writer(response)
        writer.writerow(statistics.REPAIR_CASE_CSV_HEADER)
        writer.writerows(statistics.repair_case_csv_rows())
        return response


class SwapCsvView(RoleRequiredMixin, View):
    """Every part swapped (inventory.ComponentSwap) as CSV, next to the repair cases': the
    serials, UUIDs and firmware the vendor review asks for. Who may read it: as the cases CSV;
    cells a spreadsheet would run as a formula (a serial typed as `=...`) are neutralised."""

    capability = "read_faults"

    def get(self, request):
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="swaps.csv"'
        writer = csv_writer(response)
        writer.writerow(inventory_selectors.SWAP_CSV_HEADER)
        writer.writerows(inventory_selectors.swap_csv_rows(
            inventory_selectors.swap_list(user=request.user)))
        return response


# -- repair cases (the ticket page's panel) -------------------------------------------------------


def _form_datetime(request, name: str):
    """A datetime-local field (the browser's wall clock, in the portal's time zone), or None."""
    text = (request.POST.get(name) or "").strip()
    if not text:
        return None
    value = parse_datetime(text)
    if value is None:
        raise InvalidInput({name: ["Use a date and time, e.g. 2025-03-01T14:30."]})
    return timezone.make_aware(value) if timezone.is_naive(value) else value


def _form_date(request, name: str):
    text = (request.POST.get(name) or "").strip()
    if not text:
        return None
    value = parse_date(text)
    if value is None:
        raise InvalidInput({name: ["Use a date, e.g. 2025-03-14."]})
    return value


def _visible_case(request, ticket, case_pk: int):
    case = selectors.repair_case_list(user=request.user, filters={"ticket": ticket.pk}).filter(
        pk=case_pk).first()
    if case is None:
        raise Http404("No such repair case on this ticket")
    return case


class RepairOpenView(TicketActView):
    """Open a vendor case with its first part, in the slot the form names on the ticket's
    node (the failed component is the part to replace)."""

    operation = "repair"
    says_done = False  # its own message names the case

    def perform(self, request, ticket):
        component = request.POST.get("component", "")
        index = (request.POST.get("gpu_index") or "").strip()
        if index and not index.isdigit():
            raise InvalidInput({"gpu_index": ["A GPU index is a number, 0-7."]})
        part = repairs.PartRequest(
            kind=component, gpu_index=int(index) if index else None,
            nic=(request.POST.get("nic") or "").strip(),
            position=(request.POST.get("position") or "").strip(),
        )
        case = repairs.open_repair_case(
            ticket=ticket, vendor=request.POST.get("vendor", ""), component=component,
            vendor_case_number=request.POST.get("vendor_case_number", ""),
            expected_at=_form_date(request, "expected_at"), parts=[part], actor=request.user,
            via="ui",
        )
        messages.info(request, f"{case.reference} opened.")
        return ticket


class RepairTransitionView(TicketActView):
    operation = "repair case move"

    def post(self, request, pk, case_pk):
        self.case_pk = case_pk
        return super().post(request, pk)

    def perform(self, request, ticket):
        case = _visible_case(request, ticket, self.case_pk)
        repairs.transition_repair_case(
            case=case, to_status=request.POST.get("to_status", ""),
            at=_form_datetime(request, "at"), note=request.POST.get("note", ""),
            actor=request.user, via="ui",
        )
        return ticket


class RepairReserveSpareView(TicketActView):
    """Hold a spare of the case's failed component from the shelf the form names, so the part
    need not wait for the vendor (the ticket page's side of POST .../reserve-spare/)."""

    operation = "spare reservation"
    says_done = False  # its own message names the shelf

    def post(self, request, pk, case_pk):
        self.case_pk = case_pk
        return super().post(request, pk)

    def perform(self, request, ticket):
        case = _visible_case(request, ticket, self.case_pk)
        reservation = repairs.reserve_case_spare(
            case=case, site=request.POST.get("site", ""), actor=request.user, via="ui"
        )
        messages.info(request, f"{case.reference}: a {reservation.stock.get_kind_display()} "
                               f"spare reserved at {reservation.stock.site}.")
        return ticket


class RepairInstallView(TicketActView):
    operation = "part install"

    def post(self, request, pk, case_pk):
        self.case_pk = case_pk
        return super().post(request, pk)

    def perform(self, request, ticket):
        case = _visible_case(request, ticket, self.case_pk)
        part_pk = (request.POST.get("part") or "").strip()
        part = case.parts.filter(pk=int(part_pk)).first() if part_pk.isdigit() else None
        if part is None:
            raise InvalidInput({"part": [f"{case.reference} has no such part."]})
        repairs.install_repair_part(
            case=case, part=part, serial_in=request.POST.get("serial_in", ""),
            uuid_in=request.POST.get("uuid_in", ""), mac_in=request.POST.get("mac_in", ""),
            firmware_version_in=request.POST.get("firmware_version_in", ""),
            installed_at=_form_datetime(request, "installed_at"), actor=request.user, via="ui",
        )
        return ticket

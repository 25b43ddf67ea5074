"""The faults API: tickets and their workflow, intake channels, statistics."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from faults import selectors, statistics
from faults.api import serializers as fault_serializers
from faults.models import FaultTicket, IntakeRecord, RepairCase
from faults.parsing import reported_gpu
from faults.services import intake, repairs, tickets
from faults.services.recovery import recovery_steps, request_recovery
from inventory.models import Node, Switch
from portal.api.serializers import ActionSerializer
from portal.api.views import action_accepted
from portal.api.viewsets import SelectorQuerysetMixin
from portal.errors import InvalidInput
from portal.roles import may
from portal.timeparse import parse_datetime_utc

TICKET_FILTERS = ("status", "category", "severity", "source", "pod", "node", "component", "q")


class FaultPermissions:
    """Cluster-wide roles read; admins, operators and on-call act; tenant admins get nothing."""

    read_capability = "read_faults"
    write_capability = "respond_to_faults"


def _raw_body(request) -> str:
    return request.body.decode("utf-8", errors="replace")


class TicketViewSet(
    FaultPermissions,
    SelectorQuerysetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Fault tickets. Filters: status (or `open`), category, severity, source, pod, node,
    component (gpu, nic, switch, port, node), q."""

    queryset = FaultTicket.objects.none()
    serializer_class = fault_serializers.TicketSerializer
    filter_backends: list = []  # the selector filters; see TICKET_FILTERS

    def restrict_queryset(self, user):
        filters = {name: self.request.query_params.get(name) for name in TICKET_FILTERS}
        tickets = selectors.ticket_list(user=user, filters=filters)
        if self.action == "retrieve":
            tickets = tickets.prefetch_related("timeline__author", "transitions__actor", "actions")
        return tickets

    def get_serializer_class(self):
        if self.action == "retrieve":
            return fault_serializers.TicketDetailSerializer
        return super().get_serializer_class()

    @extend_schema(
        summary="List fault tickets",
        parameters=[OpenApiParameter(name, OpenApiTypes.STR) for name in TICKET_FILTERS],
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Report a fault (user report channel)",
        request=fault_serializers.UserReportSerializer,
        responses={201: fault_serializers.IntakeResultSerializer,
                   200: fault_serializers.IntakeResultSerializer},
    )
    def create(self, request, *args, **kwargs):
        body = fault_serializers.UserReportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        node = _by_name(Node, data.get("node"), "node")
        switch = _by_name(Switch, data.get("switch"), "switch")
        ticket, created = intake.submit_user_report(
            reported_by=request.user, summary=data["summary"], node=node,
            gpu=reported_gpu(node, data.get("gpu")), switch=switch,
            category=data.get("category", ""), description=data.get("description", ""),
            detected_at=data.get("detected_at"),
        )
        return _intake_response(ticket, created)

    @extend_schema(
        summary="Move a ticket along the workflow",
        request=fault_serializers.TransitionRequestSerializer,
        responses={200: fault_serializers.TicketSerializer,
                   409: OpenApiResponse(description="Not allowed from this state; `allowed` "
                                                    "names the states that are")},
    )
    @action(detail=True, methods=["post"])
    def transition(self, request, pk=None):
        body = fault_serializers.TransitionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ticket = tickets.transition_ticket(
            ticket=self.get_object(), actor=request.user, **body.validated_data
        )
        return Response(fault_serializers.TicketSerializer(ticket).data)

    @extend_schema(summary="Acknowledge: become the responder", request=None,
                   responses={200: fault_serializers.TicketSerializer})
    @action(detail=True, methods=["post"])
    def acknowledge(self, request, pk=None):
        ticket = tickets.acknowledge_ticket(ticket=self.get_object(), actor=request.user)
        return Response(fault_serializers.TicketSerializer(ticket).data)

    @extend_schema(summary="Add a note to the timeline", request=fault_serializers.NoteSerializer,
                   responses={201: fault_serializers.TimelineEntrySerializer})
    @action(detail=True, methods=["post"])
    def notes(self, request, pk=None):
        body = fault_serializers.NoteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        entry = tickets.add_note(
            ticket=self.get_object(), author=request.user, text=body.validated_data["text"]
        )
        return Response(fault_serializers.TimelineEntrySerializer(entry).data, status=201)

    @extend_schema(summary="Reopen: a new ticket linked to this one (within the window)",
                   request=fault_serializers.ReopenSerializer,
                   responses={201: fault_serializers.TicketSerializer})
    @action(detail=True, methods=["post"])
    def reopen(self, request, pk=None):
        body = fault_serializers.ReopenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ticket = tickets.reopen_ticket(
            ticket=self.get_object(), actor=request.user, note=body.validated_data.get("note", "")
        )
        return Response(fault_serializers.TicketSerializer(ticket).data, status=201)

    @extend_schema(
        summary="Take one of the ticket's recovery steps (an Action, the ticket as reason)",
        request=fault_serializers.RecoveryRequestSerializer,
        responses={202: ActionSerializer,
                   400: OpenApiResponse(description="`step` does not apply to this ticket now"),
                   403: OpenApiResponse(description="Your role may not take this step"),
                   409: OpenApiResponse(description="Other open tickets hold the node (resume), "
                                                    "the node has not passed a validation since "
                                                    "its restart or repair (`override_reason`), "
                                                    "or the step needs `confirm`")},
    )
    @action(detail=True, methods=["post"])
    def recovery(self, request, pk=None):
        body = fault_serializers.RecoveryRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ticket = self.get_object()
        step = body.validated_data["step"]
        offered = {option.step: option for option in recovery_steps(ticket)}
        if step in offered and not may(request.user, offered[step].capability):
            raise PermissionDenied(f"Your role may not {offered[step].label.lower()}.")
        with transaction.atomic():
            action = request_recovery(ticket=ticket, step=step, actor=request.user,
                                      confirm=body.validated_data["confirm"],
                                      override_reason=body.validated_data["override_reason"])
        return action_accepted(request, action)

    @extend_schema(summary="Earlier and later tickets on the same GPU serial, node or switch",
                   responses={200: fault_serializers.HistoryTicketSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None)  # all of it, in one list
    def history(self, request, pk=None):
        history = selectors.component_history(self.get_object())
        return Response(fault_serializers.HistoryTicketSerializer(history, many=True).data)


def _by_name(model, hostname, field_name):
    if not hostname:
        return None
    found = model.objects.filter(hostname=hostname).first()
    if found is None:
        raise InvalidInput({field_name: [f"Unknown {field_name} {hostname!r}."]})
    return found


def _intake_response(ticket, created) -> Response:
    body = {"ticket": fault_serializers.TicketSerializer(ticket).data, "created": created}
    return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class PlatformEventView(FaultPermissions, APIView):
    """Platform monitor intake (node agent, DCGM exporter, switch log forwarder)."""

    @extend_schema(
        summary="Deliver a platform event (XID, ECC, GPU unresponsive, NVLink, NIC, switch)",
        request=fault_serializers.PlatformEventSerializer,
        responses={201: fault_serializers.IntakeResultSerializer,
                   200: fault_serializers.IntakeResultSerializer,
                   400: OpenApiResponse(description="Unknown kind, XID or component; the raw "
                                                    "event is kept as an intake record")},
    )
    def post(self, request):
        ticket, created = intake.receive_platform_event(
            raw_body=_raw_body(request), submitted_by=request.user
        )
        return _intake_response(ticket, created)


class AlertmanagerWebhookView(FaultPermissions, APIView):
    """Alertmanager webhook receiver (payload version 4), authenticated with a portal token."""

    @extend_schema(
        summary="Alertmanager webhook (v4): firing opens or attaches, resolved is recorded",
        request=fault_serializers.AlertmanagerWebhookSerializer,
        responses={200: fault_serializers.AlertmanagerResultSerializer,
                   400: OpenApiResponse(description="Malformed; the raw body is kept")},
    )
    def post(self, request):
        outcome = intake.receive_alertmanager(
            raw_body=_raw_body(request), submitted_by=request.user
        )
        return Response({"alerts": outcome})


class IntakeRecordViewSet(FaultPermissions, SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    """Every delivery to an intake channel as received, accepted or refused (with the reason)."""

    queryset = IntakeRecord.objects.none()
    serializer_class = fault_serializers.IntakeRecordSerializer
    filterset_fields = ["channel", "accepted"]

    def restrict_queryset(self, user):
        return selectors.intake_list(user=user)


class StatisticsView(FaultPermissions, APIView):
    @extend_schema(
        summary="Fault statistics: Table 13 by category, by month, MTTA, MTTR, MTBF, failures "
                "per component type per month, repair cases per part type and vendor, "
                "repeat offenders",
        parameters=[
            OpenApiParameter("start", OpenApiTypes.DATETIME, description="detected at or after"),
            OpenApiParameter("end", OpenApiTypes.DATETIME, description="detected before"),
        ],
        responses={200: fault_serializers.StatisticsSerializer},
    )
    def get(self, request):
        bounds = {}
        for name in ("start", "end"):
            value = request.query_params.get(name)
            if value:
                try:
                    bounds[name] = parse_datetime_utc(value)
                except ValueError:
                    raise InvalidInput({name: ["Use an ISO 8601 date and time."]}) from None
        data = statistics.fault_statistics(**bounds)
        data["repeat_offenders"] = selectors.repeat_offenders(user=request.user)
        return Response(fault_serializers.StatisticsSerializer(data).data)


REPAIR_FILTERS = ("ticket", "status", "vendor", "node")


class RepairCaseViewSet(
    FaultPermissions,
    SelectorQuerysetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Vendor repair cases opened from tickets, their parts, and the parts' swaps in the
    inventory. Filters: ticket (id), status, vendor, node (the ticket's)."""

    queryset = RepairCase.objects.none()
    serializer_class = fault_serializers.RepairCaseSerializer
    filter_backends: list = []  # the selector filters; see REPAIR_FILTERS

    def restrict_queryset(self, user):
        filters = {name: self.request.query_params.get(name) for name in REPAIR_FILTERS}
        return selectors.repair_case_list(user=user, filters=filters)

    def _reread(self, case) -> dict:
        case = selectors.repair_case_list(user=self.request.user).get(pk=case.pk)
        return fault_serializers.RepairCaseSerializer(case).data

    @extend_schema(
        summary="List repair cases",
        parameters=[OpenApiParameter(name, OpenApiTypes.STR) for name in REPAIR_FILTERS],
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Open a vendor repair case on a ticket, with its parts",
        request=fault_serializers.RepairCaseCreateSerializer,
        responses={201: fault_serializers.RepairCaseSerializer,
                   400: OpenApiResponse(description="A field names the problem (an unknown "
                                                    "ticket, part type or slot, a date before "
                                                    "the ticket); nothing is written")},
    )
    def create(self, request, *args, **kwargs):
        body = fault_serializers.RepairCaseCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        ticket = selectors.ticket_get(user=request.user, pk=data.pop("ticket"))
        if ticket is None:
            raise InvalidInput({"ticket": ["No such ticket."]})
        parts = [repairs.PartRequest(**part) for part in data.pop("parts", [])]
        case = repairs.open_repair_case(ticket=ticket, actor=request.user, parts=parts, **data)
        return Response(self._reread(case), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Move a repair case along its workflow, dated",
        request=fault_serializers.RepairTransitionSerializer,
        responses={200: fault_serializers.RepairCaseSerializer,
                   400: OpenApiResponse(description="`at` before the case opened or in the "
                                                    "future; `parts` not all installed"),
                   409: OpenApiResponse(description="Not allowed from this state; `allowed` "
                                                    "names the states that are")},
    )
    @action(detail=True, methods=["post"])
    def transition(self, request, pk=None):
        body = fault_serializers.RepairTransitionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        case = repairs.transition_repair_case(
            case=self.get_object(), actor=request.user, **body.validated_data
        )
        return Response(self._reread(case))

    @extend_schema(
        summary="Add a part to a repair case",
        request=fault_serializers.RepairPartRequestSerializer,
        responses={201: fault_serializers.RepairCaseSerializer,
                   409: OpenApiResponse(description="The case is installed or closed")},
    )
    @action(detail=True, methods=["post"])
    def parts(self, request, pk=None):
        body = fault_serializers.RepairPartRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        case = self.get_object()
        repairs.add_repair_part(case=case, request=repairs.PartRequest(**body.validated_data),
                                actor=request.user)
        return Response(self._reread(case), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Reserve a spare from a site's shelf for this case",
        request=fault_serializers.RepairSpareRequestSerializer,
        responses={201: fault_serializers.RepairCaseSerializer,
                   400: OpenApiResponse(description="`kind` unknown or none free at the site, "
                                                    "`site` blank; nothing is written"),
                   409: OpenApiResponse(description="The case is installed or closed")},
    )
    @action(detail=True, methods=["post"], url_path="reserve-spare")
    def reserve_spare(self, request, pk=None):
        body = fault_serializers.RepairSpareRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        case = self.get_object()
        repairs.reserve_case_spare(case=case, actor=request.user, **body.validated_data)
        return Response(self._reread(case), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Install a part: its serial replaces the slot's in the inventory, with history",
        request=fault_serializers.RepairInstallSerializer,
        responses={200: fault_serializers.RepairCaseSerializer,
                   400: OpenApiResponse(description="`part` unknown, `serial_in` installed "
                                                    "elsewhere, `installed_at` before the case "
                                                    "opened; nothing is written"),
                   409: OpenApiResponse(description="The part is not received or already in")},
    )
    @action(detail=True, methods=["post"])
    def install(self, request, pk=None):
        body = fault_serializers.RepairInstallSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        case = self.get_object()
        part = case.parts.filter(pk=data.pop("part")).first()
        if part is None:
            raise InvalidInput({"part": [f"{case.reference} has no such part."]})
        repairs.install_repair_part(case=case, part=part, actor=request.user, **data)
        return Response(self._reread(case))

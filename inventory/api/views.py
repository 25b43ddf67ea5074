"""Viewsets of the inventory API. Querysets come from `inventory.selectors` (who may see what);
joins and prefetches come from the serializers (`inventory.api.prefetch`)."""

from __future__ import annotations

from django.db import IntegrityError
from django.db.models.deletion import ProtectedError, RestrictedError
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.filters import SearchFilter
from rest_framework.generics import get_object_or_404
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from inventory import cable_trace, filtersets, selectors
from inventory.allocations import allocation_create, allocation_delete, allocation_update
from inventory.api import fast_lists
from inventory.api import serializers as inventory_serializers
from inventory.api.bulk import with_bulk_writes
from inventory.api.errors import integrity_error_fields
from inventory.api.ordering import NaturalOrderingFilter
from inventory.api.pagination import InventoryCursorPagination, NicRowsCursorPagination
from inventory.api.parsers import TextYAMLParser, YAMLParser
from inventory.api.prefetch import related_paths
from inventory.bmc.boot import request_boot_override
from inventory.bmc.power import OPERATIONS, power_impact, read_power_state, request_power_action
from inventory.bmc.reading import DEFAULT_EVENT_LIMIT, MAX_EVENT_LIMIT, bmc_reading
from inventory.bmc.targets import has_bmc
from inventory.models import (
    GPU,
    NIC,
    Allocation,
    Cable,
    ComponentSwap,
    Node,
    Pod,
    Rack,
    SpareStock,
    Switch,
    SwitchPort,
)
from inventory.services import cable_create_on_rail, cable_update
from inventory.spares import spare_stock_set
from inventory.topology.importer import import_topology
from inventory.topology.spec import spec_from_yaml
from inventory.validation import RULES, current_violations
from portal.api.mixins import AuditedModelMixin
from portal.api.serializers import ActionSerializer
from portal.api.views import action_accepted
from portal.api.viewsets import SelectorQuerysetMixin
from portal.errors import Conflict, InvalidInput
from portal.planner import joins_as_written


class InventoryViewSet(SelectorQuerysetMixin, AuditedModelMixin, viewsets.ModelViewSet):
    """CRUD over a selector's queryset: readable by every role (the selector decides what each
    sees; another tenant's object is 404), writable by admins and operators."""

    read_capability = "read_inventory"
    write_capability = "write_inventory"
    filter_backends = [DjangoFilterBackend, SearchFilter, NaturalOrderingFilter]
    # {name field: its stored natural sort key}; the default order is the models' Meta.ordering.
    natural_ordering: dict[str, str] = {}
    # {nullable field: an annotated key of it that is never NULL, sorted by in its place}
    ordering_replaced_by: dict[str, str] = {}

    def get_queryset(self):
        queryset = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):
            return queryset
        selects, prefetches = related_paths(self.get_serializer_class())
        return queryset.select_related(*selects).prefetch_related(*prefetches)

    def perform_create(self, serializer):
        try:
            super().perform_create(serializer)
        except IntegrityError as exc:
            raise InvalidInput(integrity_error_fields(self.queryset.model, exc)) from exc

    def perform_update(self, serializer):
        try:
            super().perform_update(serializer)
        except IntegrityError as exc:
            raise InvalidInput(integrity_error_fields(self.queryset.model, exc)) from exc

    def perform_destroy(self, instance):
        try:
            super().perform_destroy(instance)
        except ProtectedError as exc:
            raise _still_referenced(instance, exc.protected_objects) from None
        except RestrictedError as exc:
            raise _still_referenced(instance, exc.restricted_objects) from None


def _still_referenced(instance, blocking) -> Conflict:
    """409 naming (up to five of) the rows that keep `instance` from being deleted, e.g. the
    cables on a NIC: deleting them silently would lose the cabling record."""
    names = sorted({str(obj) for obj in list(blocking)[:5]})
    return Conflict(
        f"{instance} is still referenced by {', '.join(names)}; remove or decommission those first."
    )


class CursorPaginatedMixin:
    pagination_class = InventoryCursorPagination
    ordering = ["id"]


@with_bulk_writes
class PodViewSet(InventoryViewSet):
    queryset = Pod.objects.none()
    serializer_class = inventory_serializers.PodSerializer
    filterset_class = filtersets.PodFilterSet
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at"]

    def restrict_queryset(self, user):
        return Pod.objects.all()  # pods name no tenant's data


@with_bulk_writes
class RackViewSet(InventoryViewSet):
    queryset = Rack.objects.none()
    serializer_class = inventory_serializers.RackSerializer
    filterset_class = filtersets.RackFilterSet
    search_fields = ["name"]
    ordering_fields = ["name", "created_at"]
    natural_ordering = {"name": "name_sort_key"}

    def restrict_queryset(self, user):
        return Rack.objects.all()  # racks name no tenant's data


@with_bulk_writes
class NodeViewSet(InventoryViewSet):
    queryset = Node.objects.none()
    serializer_class = inventory_serializers.NodeSerializer
    filterset_class = filtersets.NodeFilterSet
    search_fields = ["hostname", "serial", "model"]
    ordering_fields = ["hostname", "status", "slurm_state", "created_at", "updated_at"]
    natural_ordering = {"hostname": "hostname_sort_key"}
    # Reading the power state and the impact is the first half of acting on it.
    action_capabilities = {"power": "power", "boot_override": "power"}

    def restrict_queryset(self, user):
        return selectors.node_list(user=user)

    def list(self, request, *args, **kwargs):
        # Rows from plain values written as JSON text (fast_lists), as the NIC list does.
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(fast_lists.node_values(queryset))
        return self.get_paginated_response(fast_lists.node_page_json(page, request))

    @extend_schema(
        methods=["GET"],
        summary="The node's power state (read live from its BMC) and what a power-off would hit",
        responses={200: inventory_serializers.NodePowerSerializer},
    )
    @extend_schema(
        methods=["POST"],
        summary="Power on, off (graceful or forced), cycle, or reset the BMC (202 with the Action)",
        request=inventory_serializers.NodePowerRequestSerializer,
        responses={
            202: ActionSerializer,
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Bad input; the field is named"),
            403: OpenApiResponse(OpenApiTypes.OBJECT, description="Your role may not power nodes"),
            409: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="The node has no BMC, or runs jobs (named): repeat with force",
            ),
        },
    )
    @action(detail=True, methods=["get", "post"], url_path="power", url_name="power")
    def power(self, request, pk=None):
        node = get_object_or_404(self.restrict_queryset(request.user), pk=pk)
        self.check_object_permissions(request, node)
        if request.method == "GET":
            return Response(
                {
                    "hostname": node.hostname,
                    "bmc_configured": has_bmc(node),
                    "power_state": read_power_state(node),
                    "operations": [
                        {"name": op.name, "label": op.label, "disruptive": op.disruptive}
                        for op in OPERATIONS.values()
                    ],
                    "jobs": power_impact(node)["jobs"],
                }
            )
        body = inventory_serializers.NodePowerRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        action_row, _ = request_power_action(
            node=node,
            operation=data["operation"],
            reason=data["reason"],
            force=data["force"],
            requested_by=request.user,
            idempotency_key=data.get("idempotency_key") or request.headers.get("Idempotency-Key"),
        )
        return action_accepted(request, action_row)


    @extend_schema(
        summary="Boot from PXE, BIOS setup or another source at the next boot only (202 with "
        "the Action; its result says what the BMC read back)",
        request=inventory_serializers.NodeBootOverrideRequestSerializer,
        responses={
            202: ActionSerializer,
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Bad input; the field is named"),
            403: OpenApiResponse(OpenApiTypes.OBJECT, description="Your role may not power nodes"),
            409: OpenApiResponse(OpenApiTypes.OBJECT, description="The node has no BMC"),
        },
    )
    @action(detail=True, methods=["post"], url_path="boot-override", url_name="boot-override")
    def boot_override(self, request, pk=None):
        node = get_object_or_404(self.restrict_queryset(request.user), pk=pk)
        self.check_object_permissions(request, node)
        body = inventory_serializers.NodeBootOverrideRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        action_row, _ = request_boot_override(
            node=node,
            target=data["target"],
            reason=data["reason"],
            requested_by=request.user,
            idempotency_key=data.get("idempotency_key") or request.headers.get("Idempotency-Key"),
        )
        return action_accepted(request, action_row)

    @extend_schema(
        summary="What the node's BMC says now: health, sensors, firmware, events, GPUs matched "
        "by serial or UUID",
        description="Read live from the BMC with the page timeout. A BMC that does not answer "
        "is a 200 saying so (`answered` false, `error`), a resource it lacks is `not_offered`.",
        parameters=[
            OpenApiParameter(
                "events",
                {"type": "integer", "minimum": 1, "maximum": MAX_EVENT_LIMIT},
                description="How many of the newest event-log entries (default "
                f"{DEFAULT_EVENT_LIMIT})",
            )
        ],
        responses={200: inventory_serializers.NodeBmcSerializer},
    )
    @action(detail=True, methods=["get"], url_path="bmc", url_name="bmc")
    def bmc(self, request, pk=None):
        node = get_object_or_404(self.restrict_queryset(request.user), pk=pk)
        self.check_object_permissions(request, node)
        raw_limit = request.query_params.get("events", str(DEFAULT_EVENT_LIMIT))
        try:
            limit = int(raw_limit)
        except ValueError:
            limit = 0
        if not 1 <= limit <= MAX_EVENT_LIMIT:
            raise InvalidInput({"events": [f"A whole number from 1 to {MAX_EVENT_LIMIT}."]})
        return Response(bmc_reading(node, event_limit=limit).as_dict())


@with_bulk_writes
class GPUViewSet(CursorPaginatedMixin, InventoryViewSet):
    queryset = GPU.objects.none()
    serializer_class = inventory_serializers.GPUSerializer
    filterset_class = filtersets.GPUFilterSet
    search_fields = ["uuid", "serial", "pci_bus_id", "node__hostname"]
    ordering_fields = ["id", "index"]

    def restrict_queryset(self, user):
        return selectors.gpu_list(user=user)


@with_bulk_writes
class NICViewSet(CursorPaginatedMixin, InventoryViewSet):
    queryset = NIC.objects.none()
    serializer_class = inventory_serializers.NICSerializer
    filterset_class = filtersets.NICFilterSet
    search_fields = ["device", "netdev", "mac", "serial", "node__hostname"]
    ordering_fields = ["id", "rail", "device"]
    ordering_replaced_by = {"rail": fast_lists.RAIL_ORDER}  # never NULL, as a cursor needs
    pagination_class = NicRowsCursorPagination  # its cursors read fast_lists.NIC_ROW
    # The fabric behind a NIC (leafs, spines) is not part of a tenant's slice (see selectors).
    action_capabilities = {"cable_trace": "read_fabric"}

    def restrict_queryset(self, user):
        if self.action == "cable_trace":
            return selectors.nic_list(user=user)  # the trace reads the cables itself
        # Hand-added prefetch (two queries per page): the serializer's `link` reads each NIC's
        # active cable and far end from it (the list reads them as plain rows instead).
        nics = selectors.nic_list_with_links(user=user)
        return fast_lists.with_rail_order(nics) if self.action == "list" else nics

    def list(self, request, *args, **kwargs):
        # Rows from plain values written as JSON text (fast_lists): the same representation as the
        # serializer's, at a fraction of the cost for pages of up to 1,000 NICs.
        queryset = self.filter_queryset(self.get_queryset())
        with joins_as_written():  # seven tables, planned longer than they take to read
            page = self.paginate_queryset(fast_lists.nic_rows(queryset))
        return self.get_paginated_response(fast_lists.nic_page_json(page, request))

    @extend_schema(
        summary="Cable trace: NIC -> leaf port -> leaf -> uplinks -> spines",
        responses={200: inventory_serializers.TraceSerializer},
    )
    # Not named `trace`: DRF dispatches HTTP TRACE to a method of that name, on every route.
    @action(detail=True, methods=["get"], url_path="trace", url_name="trace")
    def cable_trace(self, request, pk=None):
        # Not get_object(): the list's serializer-derived joins and prefetches are of no use to
        # a trace and were a quarter of its time. Visibility still comes from the selector.
        nic = get_object_or_404(self.restrict_queryset(request.user).select_related("node"), pk=pk)
        self.check_object_permissions(request, nic)
        # The trace's dataclasses already have the documented shape (TraceSerializer).
        return Response(cable_trace.trace_from_nic(nic).as_dict())


@with_bulk_writes
class SwitchViewSet(InventoryViewSet):
    queryset = Switch.objects.none()
    serializer_class = inventory_serializers.SwitchSerializer
    filterset_class = filtersets.SwitchFilterSet
    search_fields = ["hostname", "serial", "model", "nos_version"]
    ordering_fields = ["hostname", "role", "rail", "status", "created_at"]
    natural_ordering = {"hostname": "hostname_sort_key"}

    def restrict_queryset(self, user):
        return selectors.switch_list(user=user)

    @extend_schema(
        summary="Each port of the switch with the node, NIC and rail cabled to it",
        responses={200: inventory_serializers.NodeBehindPortSerializer(many=True)},
        filters=False,
    )
    @action(detail=True, methods=["get"], url_path="nodes-behind", pagination_class=None)
    def nodes_behind(self, request, pk=None):
        rows = cable_trace.nodes_behind_switch(self.get_object())
        body = inventory_serializers.NodeBehindPortSerializer(
            [row._asdict() for row in rows], many=True, context=self.get_serializer_context()
        )
        return Response(body.data)


@with_bulk_writes
class SwitchPortViewSet(CursorPaginatedMixin, InventoryViewSet):
    queryset = SwitchPort.objects.none()
    serializer_class = inventory_serializers.SwitchPortSerializer
    filterset_class = filtersets.SwitchPortFilterSet
    search_fields = ["name", "alias", "description", "switch__hostname"]
    ordering_fields = ["id", "index", "name"]
    natural_ordering = {"name": "name_sort_key"}
    # The fabric behind a NIC (leafs, spines) is not part of a tenant's slice (see selectors).
    action_capabilities = {"cable_trace": "read_fabric"}

    def restrict_queryset(self, user):
        # Hand-added prefetch (two queries per page): the serializer's `link` reads each port's
        # active cable and far end from it.
        return selectors.port_list_with_links(user=user)

    @extend_schema(
        summary="Cable trace through a switch port",
        responses={200: inventory_serializers.TraceSerializer},
    )
    @action(detail=True, methods=["get"], url_path="trace", url_name="trace")
    def cable_trace(self, request, pk=None):
        return Response(cable_trace.trace_from_port(self.get_object()).as_dict())


@with_bulk_writes
class CableViewSet(CursorPaginatedMixin, InventoryViewSet):
    """Cables are made through the cabling service: one active cable per NIC or port (either
    side), the rail rule, no broken-out cages; each refusal names side `a` or `b`."""

    queryset = Cable.objects.none()
    serializer_class = inventory_serializers.CableSerializer
    filterset_class = filtersets.CableFilterSet
    search_fields = ["label", "a_transceiver_serial", "b_transceiver_serial"]
    ordering_fields = ["id", "status", "created_at"]

    def restrict_queryset(self, user):
        return selectors.cable_list(user=user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        ends = {
            side: data.pop(f"{side}_nic", None) or data.pop(f"{side}_port", None)
            for side in ("a", "b")
        }
        for end in ("a_nic", "a_port", "b_nic", "b_port"):
            data.pop(end, None)
        # The service audits the new cable itself.
        serializer.instance = cable_create_on_rail(
            a=ends["a"], b=ends["b"], actor=self.request.user, via="api", **data
        )

    def perform_update(self, serializer):
        changes = {
            name: value
            for name, value in serializer.validated_data.items()
            if name not in inventory_serializers.CABLE_ENDS
        }
        serializer.instance = cable_update(
            cable=serializer.instance, changes=changes, actor=self.request.user, via="api"
        )


@with_bulk_writes
class AllocationViewSet(InventoryViewSet):
    """Allocations of nodes to tenants: tenant-private (a tenant admin sees their own, viewers
    none); written by admins and operators."""

    queryset = Allocation.objects.none()
    serializer_class = inventory_serializers.AllocationSerializer
    filterset_class = filtersets.AllocationFilterSet
    search_fields = ["purpose", "tenant__name", "tenant__slug"]
    ordering_fields = ["start", "end", "created_at"]

    def restrict_queryset(self, user):
        return selectors.allocation_list(user=user)

    # Writes go through inventory.allocations, which refuses overlaps with other tenants and
    # maintenance nodes and queues the Slurm reservation in the same transaction (and audits).
    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = allocation_create(
            tenant=data["tenant"],
            start=data.get("start"),
            end=data.get("end"),
            nodes=data.get("nodes"),
            purpose=data.get("purpose", ""),
            created_by=self.request.user,
        )

    def perform_update(self, serializer):
        data = serializer.validated_data
        allocation = serializer.instance
        for field in ("tenant", "start"):
            if field in data and data[field] != getattr(allocation, field):
                raise InvalidInput({field: ["cannot change; end this allocation and make another"]})
        serializer.instance = allocation_update(
            allocation=allocation,
            end=data.get("end", ...),
            nodes=data.get("nodes"),
            purpose=data.get("purpose"),
            updated_by=self.request.user,
        )

    def perform_destroy(self, instance):
        allocation_delete(allocation=instance, deleted_by=self.request.user)


def _typed_query_options(query) -> dict:
    """A YAML body's options from the query string, as the JSON body would carry them: the
    query reader (portal/api/query_parameters.py) has already refused a malformed one."""
    options = query.dict()
    if "dry_run" in options:
        options["dry_run"] = options["dry_run"] == "true"
    if "scale" in options:
        options["scale"] = int(options["scale"])
    return options


class TopologyImportView(APIView):
    """Import a topology spec (inventory/topology/SPEC.md): checked whole first, then written in
    one transaction; idempotent. Send JSON `{"spec": {...} or "<yaml text>", "scale", "dry_run"}`,
    or the YAML file itself (`Content-Type: application/yaml`) with `?scale=&dry_run=`."""

    parser_classes = [JSONParser, YAMLParser, TextYAMLParser]

    @extend_schema(
        summary="Import a topology spec (operators)",
        request={
            "application/json": inventory_serializers.TopologyImportRequestSerializer,
            "application/yaml": OpenApiTypes.OBJECT,
        },
        parameters=[
            OpenApiParameter("scale", int, description="YAML bodies: repeat the pods N times"),
            OpenApiParameter("dry_run", bool, description="YAML bodies: report, change nothing"),
        ],
        responses={
            200: inventory_serializers.TopologyImportReportSerializer,
            400: OpenApiResponse(description="Every error of the spec with its location"),
        },
    )
    def post(self, request):
        if request.content_type.split(";")[0].strip() in ("application/yaml", "text/yaml"):
            options = inventory_serializers.TopologyImportRequestSerializer(
                data={**_typed_query_options(request.query_params), "spec": request.data}
            )
        else:
            if not isinstance(request.data, dict):
                raise InvalidInput({"spec": ["send a JSON object with the spec under `spec`"]})
            options = inventory_serializers.TopologyImportRequestSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        spec = options.validated_data["spec"]
        if isinstance(spec, str):
            spec = spec_from_yaml(spec)
        report = import_topology(
            spec,
            scale=options.validated_data["scale"],
            dry_run=options.validated_data["dry_run"],
            actor=request.user,
            via="api",
        )
        return Response(report.as_dict())


def _comma_separated_pattern(names) -> str:
    """Any of `names`, comma-separated, spaces around each allowed (they are stripped); or
    nothing, which means all."""
    name = "(?:" + "|".join(names) + ")"
    return rf"^(?:\s*{name}\s*(?:,\s*{name}\s*)*)?$"


class TopologyValidationView(APIView):
    """Every violation of the fabric's rules in the whole fleet (rail, bisection, dangling,
    double-cabled, speeds, leaf-spine mesh, GPU affinity)."""

    read_capability = "read_fabric"

    @extend_schema(
        summary="Check the whole fleet's cabling against the fabric rules",
        parameters=[
            OpenApiParameter(
                "rule",
                {"type": "string", "pattern": _comma_separated_pattern(RULES)},
                description=f"Only these rules, comma-separated: {', '.join(RULES)}",
            )
        ],
        responses={200: inventory_serializers.ValidationReportSerializer},
    )
    def get(self, request):
        rules = None
        if request.query_params.get("rule"):
            rules = {rule.strip() for rule in request.query_params["rule"].split(",")}
            unknown = sorted(rules - set(RULES))
            if unknown:
                raise InvalidInput(
                    {"rule": [f"unknown rule(s) {', '.join(unknown)}; known: {', '.join(RULES)}"]}
                )
        violations = [violation.as_dict() for violation in current_violations(rules=rules)]
        body = {"count": len(violations), "rules": RULES, "violations": violations}
        return Response(inventory_serializers.ValidationReportSerializer(body).data)


SWAP_FILTERS = ("node", "kind", "serial", "reference")


class ComponentSwapViewSet(SelectorQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    """Parts swapped in slots, newest first: the history of a GPU, NIC, transceiver, node or a
    positional part, and of a serial (in or out). Written by repair cases
    (/api/faults/repair-cases/{id}/install/), never edited. Filters: node (hostname), kind,
    serial, reference (RC-12)."""

    read_capability = "read_inventory"
    write_capability = "write_inventory"
    queryset = ComponentSwap.objects.none()
    serializer_class = inventory_serializers.ComponentSwapSerializer
    filter_backends: list = []  # the selector filters; see SWAP_FILTERS

    def restrict_queryset(self, user):
        filters = {name: self.request.query_params.get(name) for name in SWAP_FILTERS}
        return selectors.swap_list(user=user, filters=filters)

    @extend_schema(
        summary="Parts swapped in slots (history)",
        parameters=[OpenApiParameter(name, OpenApiTypes.STR) for name in SWAP_FILTERS],
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)


class SpareStockViewSet(
    SelectorQuerysetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Spare parts per part type and site: on hand, reserved by repair cases, free, and the
    minimum below which the dashboard warns. POST sets a shelf's count (creating it), PATCH its
    count or minimum; reservations are made by repair cases
    (/api/faults/repair-cases/{id}/reserve-spare/). Filters: kind, site."""

    read_capability = "read_inventory"
    write_capability = "write_inventory"
    queryset = SpareStock.objects.none()
    serializer_class = inventory_serializers.SpareStockSerializer
    filter_backends: list = []  # the selector filters; see SPARE_FILTERS

    def restrict_queryset(self, user):
        filters = {name: self.request.query_params.get(name) for name in selectors.SPARE_FILTERS}
        return selectors.spare_stock_list(user=user, filters=filters)

    def _reread(self, stock) -> dict:
        stock = selectors.spare_stock_list(user=self.request.user).get(pk=stock.pk)
        return inventory_serializers.SpareStockSerializer(stock).data

    @extend_schema(
        summary="Spare parts per type and site",
        parameters=[OpenApiParameter(name, OpenApiTypes.STR) for name in selectors.SPARE_FILTERS],
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Set a spares shelf's count and minimum (creates it)",
        request=inventory_serializers.SpareStockWriteSerializer,
        responses={201: inventory_serializers.SpareStockSerializer,
                   400: OpenApiResponse(description="`kind` unknown, `site` blank, `on_hand` "
                                                    "below what cases hold; nothing is written")},
    )
    def create(self, request, *args, **kwargs):
        body = inventory_serializers.SpareStockWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        stock = spare_stock_set(actor=request.user, **body.validated_data)
        return Response(self._reread(stock), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a spares shelf's count or minimum",
        request=inventory_serializers.SpareStockUpdateSerializer,
        responses={200: inventory_serializers.SpareStockSerializer,
                   400: OpenApiResponse(description="`on_hand` below what cases hold")},
    )
    def partial_update(self, request, *args, **kwargs):
        body = inventory_serializers.SpareStockUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        stock = self.get_object()
        stock = spare_stock_set(kind=stock.kind, site=stock.site, actor=request.user,
                                **body.validated_data)
        return Response(self._reread(stock))

"""The node and NIC lists' rows built from plain values, for pages of up to 1,000.

A page of 1,000 NICs through model instances and DRF fields builds some 6,000 objects and walks
20,000 fields: about a quarter of a second. Here the page is one `values_list()` query: a NIC
is in at most one active cable per side (the database's partial unique constraints), so its
active cable on each side is LEFT JOINed in without multiplying rows; the far ends' names come
from one more query by id. Each row is then written straight as JSON text
(portal/api/renderers.py puts the page's text into the response). The result is exactly what
`NICSerializer` produces (a test compares the two over the whole fleet, ugly strings included),
so clients see one representation; writes and single objects still go through the serializer.

The node list is the same idea without the joins: a page of 100 nodes through NodeSerializer took
some 30 ms of DRF fields on the CI machine, most of the request.
"""

from __future__ import annotations

from collections.abc import Iterable
from json.encoder import encode_basestring as _json_string  # json.dumps's own, in C

from django.db.models import (
    F,
    FilteredRelation,
    Q,
    QuerySet,
    SmallIntegerField,
    TextField,
    Value,
)
from django.db.models.functions import Cast, Coalesce
from django.urls import reverse
from django.utils import timezone

from inventory.models import NIC, CableStatus, Node, SwitchPort
from portal.api.renderers import EncodedJSONArray
from portal.lookups import InArray

NIC_COLUMNS = (
    "id",
    "node_id",
    "node__hostname",
    "device",
    "netdev",
    "mac",
    "serial",
    "role",
    "rail",
    "affinity_gpu_id",
    "affinity_gpu__index",
    "affinity_kind",
    "speed_gbps",
)
# The JSON array as PostgreSQL writes it, put into the row's text unparsed.
BOND_MEMBERS_TEXT = "bond_members_json"
# Per side, the NIC's active cable and the ids of its far end (that cable's other side). The far
# ends' names are read by id afterwards, with one array of keys: joined into the page (fifteen
# tables) they cost more, planned as written or not (measured at scale 1: 10 ms of planning
# otherwise, and whole port and switch tables hashed ahead of the page's LIMIT; as scalar
# subqueries, 6 ms more execution for a page of 1,000).
_CABLE_COLUMNS = ("id", "type", "status", "label")
SIDES = {"as_a": "b", "as_b": "a"}
LINK_COLUMNS = tuple(
    f"cable_{near}__{column}"
    for near, far in SIDES.items()
    for column in (*_CABLE_COLUMNS, f"{far}_port", f"{far}_nic")
)
# A cursor cannot stand on a NULL (DRF filters `rail__gt="None"`), and a NIC off the rails has no
# rail: the list sorts by rail through this key instead, -1 for none (`with_rail_order`).
RAIL_ORDER = "rail_order"
# A NIC row is a tuple of these, in this order (`nic_rows`; `nic_page_json` unpacks it): a page
# of 1,000 as dicts cost 1.5 ms more to build and to read.
NIC_ROW = (*NIC_COLUMNS, *LINK_COLUMNS, BOND_MEMBERS_TEXT, RAIL_ORDER)
NIC_ROW_PLACE = {name: place for place, name in enumerate(NIC_ROW)}


NODE_COLUMNS = (
    "id",
    "hostname",
    "serial",
    "model",
    "cpu_model",
    "cpu_count",
    "memory_gb",
    "pod_id",
    "pod__name",
    "rack_id",
    "rack__name",
    "status",
    "slurm_state",
    "slurm_reason",
    "slurm_state_changed_at",
    "slurm_reboot",
    "bmc_address",
    "bmc_system_id",
    "bmc_credentials_ref",
    "created_at",
    "updated_at",
)
DISKS_TEXT = "disks_json"


def node_values(queryset: QuerySet[Node]) -> QuerySet:
    """The filtered, ordered node queryset as rows of NODE_COLUMNS, the disks as JSON text."""
    return (
        queryset.select_related(None)
        .prefetch_related(None)
        .values(*NODE_COLUMNS, **{DISKS_TEXT: Cast("disks", output_field=TextField())})
    )


def node_page_json(rows: Iterable[dict], request) -> EncodedJSONArray:
    """NodeSerializer's output for rows read through `node_values`, as JSON text, no query."""
    (node_head, node_tail), pod_url, rack_url = (
        _url_parts(request, name) for name in ("node", "pod", "rack")
    )
    text = _nullable_string
    zone = timezone.get_current_timezone()

    def moment(value) -> str:
        # As DRF's DateTimeField writes one: in the current time zone, ISO 8601, "Z" for UTC.
        if value is None:
            return "null"
        written = value.astimezone(zone).isoformat()
        if written.endswith("+00:00"):
            written = f"{written.removesuffix('+00:00')}Z"
        return f'"{written}"'

    objects = []
    for row in rows:
        pk = row["id"]
        objects.append(
            f'{{"id":{pk},"url":"{node_head}{pk}{node_tail}",'
            f'"hostname":{text(row["hostname"])},"serial":{text(row["serial"])},'
            f'"model":{text(row["model"])},"cpu_model":{text(row["cpu_model"])},'
            f'"cpu_count":{_number(row["cpu_count"])},"memory_gb":{_number(row["memory_gb"])},'
            f'"disks":{row[DISKS_TEXT] or "null"},'
            f'"pod":{_brief(pod_url, row["pod_id"], row["pod__name"])},'
            f'"rack":{_brief(rack_url, row["rack_id"], row["rack__name"])},'
            f'"status":{text(row["status"])},"slurm_state":{text(row["slurm_state"])},'
            f'"slurm_reason":{text(row["slurm_reason"])},'
            f'"slurm_state_changed_at":{moment(row["slurm_state_changed_at"])},'
            f'"slurm_reboot":{text(row["slurm_reboot"])},'
            f'"bmc_address":{text(row["bmc_address"])},'
            f'"bmc_system_id":{text(row["bmc_system_id"])},'
            f'"bmc_credentials_ref":{text(row["bmc_credentials_ref"])},'
            f'"created_at":{moment(row["created_at"])},'
            f'"updated_at":{moment(row["updated_at"])}}}'
        )
    return EncodedJSONArray(f"[{','.join(objects)}]")


def _brief(url: tuple[str, str], pk: int | None, name: str) -> str:
    """A pod's or rack's brief representation: id, url, name."""
    if pk is None:
        return "null"
    head, tail = url
    return f'{{"id":{pk},"url":"{head}{pk}{tail}","name":{_json_string(name)}}}'


def _nullable_string(value: str | None) -> str:
    return "null" if value is None else _json_string(value)


def with_rail_order(queryset: QuerySet[NIC]) -> QuerySet[NIC]:
    """The NICs with their RAIL_ORDER, for an ordering (and a cursor) by rail. A signed column:
    as the rail's own (positive) type, Django answers `rail_order = -1` with no rows unasked."""
    key = Coalesce("rail", Value(-1), output_field=SmallIntegerField())
    return queryset.annotate(**{RAIL_ORDER: key})


def nic_rows(queryset: QuerySet[NIC]) -> QuerySet:
    """The filtered, ordered NIC queryset (`with_rail_order`) as tuples of NIC_ROW (joins and
    prefetches made for model instances are dropped)."""
    active = {
        f"cable_{near}": FilteredRelation(
            f"cables_{near}",
            condition=~Q(**{f"cables_{near}__status": CableStatus.DECOMMISSIONED}),
        )
        for near in SIDES
    }
    return (
        queryset.select_related(None)
        .prefetch_related(None)
        .annotate(**active, **{BOND_MEMBERS_TEXT: Cast("bond_members", output_field=TextField())})
        .values_list(*NIC_ROW)
    )


def _url_parts(request, name: str) -> tuple[str, str]:
    """(head, tail) of an object's absolute detail URL around its key, reversed once, each
    already escaped as the inside of a JSON string."""
    placeholder = 2**31 - 1
    url = request.build_absolute_uri(reverse(f"api:inventory:{name}-detail", args=[placeholder]))
    head, _, tail = url.rpartition(str(placeholder))
    return _json_string(head)[1:-1], _json_string(tail)[1:-1]


def nic_page_json(rows: Iterable[tuple], request) -> EncodedJSONArray:
    """NICSerializer's output for rows read through `nic_rows`, as JSON text: one more query
    for the far ports of the page's cables, and one when a cable ends at another NIC.

    Each row is written as text by one format string (every string through the escaping that
    `json.dumps` itself uses): building a dict per object and encoding them afterwards took
    three times as long for a page of 1,000."""
    rows = list(rows)
    urls = {
        name: _url_parts(request, name)
        for name in ("nic", "node", "gpu", "cable", "port", "switch")
    }
    far_ports = _far_ends_json(
        SwitchPort, _far_end_ids(rows, "port"), urls, kind="port", name="name", parent="switch"
    )
    far_nics = _far_ends_json(
        NIC, _far_end_ids(rows, "nic"), urls, kind="nic", name="device", parent="node"
    )
    (nic_head, nic_tail), (node_head, node_tail) = urls["nic"], urls["node"]
    (gpu_head, gpu_tail), (cable_head, cable_tail) = urls["gpu"], urls["cable"]
    text = _json_string
    objects = []
    for (
        pk, node_pk, hostname, device, netdev, mac, serial, role, rail,
        gpu_pk, gpu_index, affinity_kind, speed_gbps,
        a_cable, a_type, a_status, a_label, a_far_port, a_far_nic,
        b_cable, b_type, b_status, b_label, b_far_port, b_far_nic,
        bond_members, _rail_order,
    ) in rows:  # fmt: skip
        gpu = (
            "null"
            if gpu_pk is None
            else f'{{"id":{gpu_pk},"url":"{gpu_head}{gpu_pk}{gpu_tail}",'
            f'"index":{_number(gpu_index)}}}'
        )
        # As `nic_link` chooses: the active cable with the NIC on side A, else on side B.
        if a_cable is not None:
            cable, kind, status, label, far_port, far_nic = (
                a_cable, a_type, a_status, a_label, a_far_port, a_far_nic
            )  # fmt: skip
        else:
            cable, kind, status, label, far_port, far_nic = (
                b_cable, b_type, b_status, b_label, b_far_port, b_far_nic
            )  # fmt: skip
        link = (
            "null"
            if cable is None
            else f'{{"cable":{{"id":{cable},"url":"{cable_head}{cable}{cable_tail}",'
            f'"type":{text(kind)},"status":{text(status)},"label":{text(label)}}},'
            f'"port":{far_ports.get(far_port, "null")},"nic":{far_nics.get(far_nic, "null")}}}'
        )
        objects.append(
            f'{{"id":{pk},"url":"{nic_head}{pk}{nic_tail}",'
            f'"node":{{"id":{node_pk},"url":"{node_head}{node_pk}{node_tail}",'
            f'"hostname":{text(hostname)}}},'
            f'"device":{text(device)},"netdev":{text(netdev)},'
            f'"mac":{text(mac)},"serial":{text(serial)},'
            f'"role":{text(role)},"rail":{_number(rail)},'
            f'"affinity_gpu":{gpu},"affinity_kind":{text(affinity_kind)},'
            f'"speed_gbps":{_number(speed_gbps)},'
            f'"bond_members":{bond_members},"link":{link}}}'
        )
    return EncodedJSONArray(f"[{','.join(objects)}]")


def _number(value: int | None) -> str:
    return "null" if value is None else str(int(value))


def _far_end_ids(rows: list[tuple], kind: str) -> set[int]:
    """The ids of the far ports (or NICs) of the page's cables, on either side."""
    places = [NIC_ROW_PLACE[f"cable_{near}__{far}_{kind}"] for near, far in SIDES.items()]
    ids = {row[place] for row in rows for place in places}
    ids.discard(None)
    return ids


def _far_ends_json(
    model, ids: set[int], urls, *, kind: str, name: str, parent: str
) -> dict[int, str]:
    """Each far end's brief representation, as JSON text, by its id: a port's (its name, its
    switch's hostname) or a NIC's (its device, its node's hostname)."""
    if not ids:
        return {}  # no query
    (head, tail), (parent_head, parent_tail) = urls[kind], urls[parent]
    rows = (
        model.objects.filter(InArray(F("pk"), ids))
        .order_by()
        .values_list("id", name, parent, f"{parent}__hostname")
    )
    return {
        pk: f'{{"id":{pk},"url":"{head}{pk}{tail}","{name}":{_json_string(value)},'
        f'"{parent}":{{"id":{parent_pk},"url":"{parent_head}{parent_pk}{parent_tail}",'
        f'"hostname":{_json_string(hostname)}}}}}'
        for pk, value, parent_pk, hostname in rows
    }

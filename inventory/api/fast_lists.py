"""The NIC list's rows built from plain values, for pages of up to 1,000 NICs.

A page of 1,000 NICs through model instances and DRF fields builds some 6,000 objects and walks
20,000 fields: about a quarter of a second. Here the page is one `values()` query: a NIC is in at
most one active cable per side (the database's partial unique constraints), so its active cable
on each side is LEFT JOINed in without multiplying rows; the far ends' names come from one more
query by id. Each row is then a dict literal. The result is exactly what `NICSerializer`
produces (a test compares the two over the whole fleet), so clients see one representation;
writes and single objects still go through the serializer.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import FilteredRelation, Q, QuerySet
from django.urls import reverse

from inventory.models import NIC, CableStatus, SwitchPort

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
    "bond_members",
)
# Per side, the NIC's active cable and the ids of its far end (that cable's other side). The far
# ends' names are read by id afterwards: joining the port and switch tables into the page query
# makes PostgreSQL spend several times longer planning it than running it.
_CABLE_COLUMNS = ("id", "type", "status", "label")
SIDES = {"as_a": "b", "as_b": "a"}
LINK_COLUMNS = tuple(
    f"cable_{near}__{column}"
    for near, far in SIDES.items()
    for column in (*_CABLE_COLUMNS, f"{far}_port", f"{far}_nic")
)


def nic_values(queryset: QuerySet[NIC]) -> QuerySet:
    """The filtered, ordered NIC queryset as rows of NIC_COLUMNS and LINK_COLUMNS (joins and
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
        .annotate(**active)
        .values(*NIC_COLUMNS, *LINK_COLUMNS)
    )


def _url_parts(request, name: str) -> tuple[str, str]:
    """(head, tail) of an object's absolute detail URL around its key, reversed once."""
    placeholder = 2**31 - 1
    url = request.build_absolute_uri(reverse(f"api:inventory:{name}-detail", args=[placeholder]))
    head, _, tail = url.rpartition(str(placeholder))
    return head, tail


def nic_representations(rows: Iterable[dict], request) -> list[dict]:
    """NICSerializer's output for rows read through `nic_values`: one more query for the far
    ports of the page's cables, and one when a cable ends at another NIC."""
    rows = list(rows)
    far_ports = _by_id(
        SwitchPort.objects,
        _far_end_ids(rows, "port"),
        ("id", "name", "switch", "switch__hostname"),
    )
    far_nics = _by_id(
        NIC.objects, _far_end_ids(rows, "nic"), ("id", "device", "node", "node__hostname")
    )
    urls = {
        name: _url_parts(request, name)
        for name in ("nic", "node", "gpu", "cable", "port", "switch")
    }
    (nic_head, nic_tail), (gpu_head, gpu_tail) = urls["nic"], urls["gpu"]
    node_head, node_tail = urls["node"]
    return [
        {
            "id": row["id"],
            "url": f"{nic_head}{row['id']}{nic_tail}",
            "node": {
                "id": row["node_id"],
                "url": f"{node_head}{row['node_id']}{node_tail}",
                "hostname": row["node__hostname"],
            },
            "device": row["device"],
            "netdev": row["netdev"],
            "mac": row["mac"],
            "serial": row["serial"],
            "role": row["role"],
            "rail": row["rail"],
            "affinity_gpu": (
                None
                if row["affinity_gpu_id"] is None
                else {
                    "id": row["affinity_gpu_id"],
                    "url": f"{gpu_head}{row['affinity_gpu_id']}{gpu_tail}",
                    "index": row["affinity_gpu__index"],
                }
            ),
            "affinity_kind": row["affinity_kind"],
            "speed_gbps": row["speed_gbps"],
            "bond_members": row["bond_members"],
            "link": _link(row, urls, far_ports, far_nics),
        }
        for row in rows
    ]


def _far_end_ids(rows: list[dict], kind: str) -> set[int]:
    ids = (row[f"cable_{near}__{far}_{kind}"] for row in rows for near, far in SIDES.items())
    return {pk for pk in ids if pk is not None}


def _by_id(manager, ids: set[int], columns: tuple[str, ...]) -> dict[int, dict]:
    if not ids:
        return {}  # no query
    return {row["id"]: row for row in manager.filter(pk__in=ids).values(*columns)}


def _link(row: dict, urls, far_ports: dict[int, dict], far_nics: dict[int, dict]) -> dict | None:
    """As `nic_link` chooses: the active cable with the NIC on side A, else on side B."""
    near = next((side for side in SIDES if row[f"cable_{side}__id"] is not None), None)
    if near is None:
        return None
    far, cable_id = SIDES[near], row[f"cable_{near}__id"]

    def url(name: str, pk: int) -> str:
        head, tail = urls[name]
        return f"{head}{pk}{tail}"

    port = far_ports.get(row[f"cable_{near}__{far}_port"])
    nic = far_nics.get(row[f"cable_{near}__{far}_nic"])
    return {
        "cable": {
            "id": cable_id,
            "url": url("cable", cable_id),
            "type": row[f"cable_{near}__type"],
            "status": row[f"cable_{near}__status"],
            "label": row[f"cable_{near}__label"],
        },
        "port": None
        if port is None
        else {
            "id": port["id"],
            "url": url("port", port["id"]),
            "name": port["name"],
            "switch": {
                "id": port["switch"],
                "url": url("switch", port["switch"]),
                "hostname": port["switch__hostname"],
            },
        },
        "nic": None
        if nic is None
        else {
            "id": nic["id"],
            "url": url("nic", nic["id"]),
            "device": nic["device"],
            "node": {
                "id": nic["node"],
                "url": url("node", nic["node"]),
                "hostname": nic["node__hostname"],
            },
        },
    }

"""Reading SONiC's COUNTERS_DB into a CounterSnapshot: one reader for every driver that sees
the SAI counters (the SSH driver through sonic-db-dump, the in-process emulated driver).

Absent is not zero. sonic-utilities' portstat (`utilities_common/portstat.py`,
`Portstat.get_cnstat`, inner `get_counters`) prints N/A for a column when any SAI counter it
sums is missing from the port's hash; the same rule applies here, and a port whose hash is
missing altogether has every counter None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from fabric.drivers.base import CounterSnapshot, PortCounters
from fabric.drivers.sonic_flex_counters import ECN_MARKED_FIELD, ecn_counter_state

PFC_PRIORITIES = range(8)
Hash = Mapping[str, str]


def _number(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(float(value)) if "." in value else int(value)
    except ValueError:
        return None


def _sum(*values: int | None) -> int | None:
    """portstat's bucket: N/A as soon as one of its counters is."""
    if any(value is None for value in values):
        return None
    return sum(values)  # type: ignore[arg-type]


def port_counters_from_sai(
    name: str, stats: Hash | None, ecn_marked: dict[int, int | None]
) -> PortCounters:
    """`stats` is the port's COUNTERS:oid:... hash (SAI_PORT_STAT_* -> value), None when the
    hash does not exist."""
    stats = stats or {}

    def stat(field: str) -> int | None:
        return _number(stats.get(f"SAI_PORT_STAT_{field}"))

    return PortCounters(
        name=name,
        in_octets=stat("IF_IN_OCTETS"),
        out_octets=stat("IF_OUT_OCTETS"),
        in_packets=_sum(stat("IF_IN_UCAST_PKTS"), stat("IF_IN_NON_UCAST_PKTS")),
        out_packets=_sum(stat("IF_OUT_UCAST_PKTS"), stat("IF_OUT_NON_UCAST_PKTS")),
        in_errors=stat("IF_IN_ERRORS"),
        out_errors=stat("IF_OUT_ERRORS"),
        in_discards=stat("IF_IN_DISCARDS"),
        out_discards=stat("IF_OUT_DISCARDS"),
        pfc_rx={priority: stat(f"PFC_{priority}_RX_PKTS") for priority in PFC_PRIORITIES},
        pfc_tx={priority: stat(f"PFC_{priority}_TX_PKTS") for priority in PFC_PRIORITIES},
        ecn_marked=ecn_marked,
    )


def counter_snapshot(
    taken_at: datetime,
    port_map: Hash,
    queue_map: Hash,
    counters: Mapping[str, Hash],
    queues: Iterable[int],
    port_order: Iterable[str] | None = None,
    *,
    flex_group: Hash | None = None,
    capability: Hash | None = None,
) -> CounterSnapshot:
    """A snapshot from COUNTERS_PORT_NAME_MAP (port -> oid), COUNTERS_QUEUE_NAME_MAP
    ("port:queue" -> oid) and the COUNTERS hashes by oid (`oid:0x...`).

    Ports come in `port_order` where given (the map's own order otherwise). A queue has an
    ECN-marked entry only where its hash holds the field: a switch that does not collect them
    (CONFIG_DB `flex_group`, STATE_DB `capability`: sonic_flex_counters.py) leaves ports'
    `ecn_marked` empty, "not collected", never 0."""
    names = [name for name in (port_order or port_map) if name in port_map]
    queues = tuple(queues)
    ports = []
    for name in names:
        ecn: dict[int, int | None] = {}
        for queue in queues:
            oid = queue_map.get(f"{name}:{queue}")
            stats = counters.get(oid) if oid is not None else None
            if stats and ECN_MARKED_FIELD in stats:
                ecn[queue] = _number(stats[ECN_MARKED_FIELD])
        ports.append(port_counters_from_sai(name, counters.get(port_map[name]), ecn))
    state = ecn_counter_state(
        flex_group or {}, capability or {}, any(port.ecn_marked for port in ports)
    )
    return CounterSnapshot(taken_at=taken_at, ports=tuple(ports), ecn_counters=state)

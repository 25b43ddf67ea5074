"""Reading SONiC's COUNTERS_DB port hash into PortCounters: one reader for every driver that
sees the SAI counters (the SSH driver through sonic-db-cli, the in-process emulated driver)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabric.drivers.base import PortCounters

PFC_PRIORITIES = range(8)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def port_counters_from_sai(
    name: str, stats: Mapping[str, Any], ecn_marked: dict[int, int]
) -> PortCounters:
    """`stats` is the port's COUNTERS:oid:... hash (SAI_PORT_STAT_* -> value)."""

    def stat(field: str) -> int:
        return _int(stats.get(f"SAI_PORT_STAT_{field}"))

    return PortCounters(
        name=name,
        in_octets=stat("IF_IN_OCTETS"),
        out_octets=stat("IF_OUT_OCTETS"),
        in_packets=stat("IF_IN_UCAST_PKTS") + stat("IF_IN_NON_UCAST_PKTS"),
        out_packets=stat("IF_OUT_UCAST_PKTS") + stat("IF_OUT_NON_UCAST_PKTS"),
        in_errors=stat("IF_IN_ERRORS"),
        out_errors=stat("IF_OUT_ERRORS"),
        in_discards=stat("IF_IN_DISCARDS"),
        out_discards=stat("IF_OUT_DISCARDS"),
        pfc_rx={priority: stat(f"PFC_{priority}_RX_PKTS") for priority in PFC_PRIORITIES},
        pfc_tx={priority: stat(f"PFC_{priority}_TX_PKTS") for priority in PFC_PRIORITIES},
        ecn_marked=ecn_marked,
    )

"""Counter polling (writes): ask every switch for its ports and counters, concurrently with a
bound, then store the latest sample per port, rates from the previous sample, one history slot
per port, and each switch's poll state; publish a compact "fabric" event on commit.

Switches are read in a thread pool without touching the database (drivers are plain I/O); the
results are written in one transaction by the calling thread. An unreachable switch records its
error and keeps its last-seen time; the others are stored as usual.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from fabric.drivers.base import (
    CounterSnapshot,
    FabricError,
    PortCounters,
    PortStatus,
    SwitchTarget,
    get_fabric_driver,
)
from fabric.drivers.sonic_flex_counters import COLLECTED as ECN_COLLECTED
from fabric.hooks import (
    FabricFinding,
    LinkChange,
    SwitchReachability,
    notify_fabric_finding,
    notify_fabric_signals,
)
from fabric.models import (
    PortCounterHistory,
    PortCounterLatest,
    SwitchPollState,
    SwitchThroughputLatest,
)
from fabric.overview import overview_delta, unscoped_overview_cells
from fabric.port_state import is_link_change, link_status, port_state_letter
from fabric.selectors import throughput_by_facing
from fabric.targets import SwitchNotAddressable, switch_target
from inventory.models import Switch, SwitchPort
from portal.bulk_copy import bulk_upsert
from portal.realtime import publish

logger = logging.getLogger(__name__)

COUNTER_WRAP = 2**64  # SAI counters are unsigned 64-bit
# One lost poll is noise (a busy switch CPU); this many in a row is a switch gone.
DEFAULT_UNREACHABLE_AFTER_FAILURES = 2
FABRIC_GROUP = "fabric"
OVERVIEW_GROUP = "fabric.overview"


def poll_target(switch: Switch) -> SwitchTarget:
    """How to reach a switch (fabric.targets, the same as the switch actions use). One the
    inventory gives no address is tried by its hostname, so it fails on its own and is recorded
    like any unreachable switch instead of stopping the poll."""
    try:
        return switch_target(switch)
    except SwitchNotAddressable:
        return SwitchTarget(
            hostname=switch.hostname,
            address=switch.hostname,
            credentials_ref=switch.credentials_ref,
        )


@dataclass
class SwitchReading:
    """What one poll of one switch returned (or why it did not)."""

    hostname: str
    ports: list[PortStatus] = field(default_factory=list)
    snapshot: CounterSnapshot | None = None
    error: str = ""
    seconds: float = 0.0


def read_switch(target: SwitchTarget) -> SwitchReading:
    """Ports and counters of one switch; any driver error is captured, never raised.

    The driver's connection is left open for the next poll (the SSH driver keeps one per
    switch per process and reopens one the switch dropped): a fresh SSH handshake per switch
    per poll was a third of a poll's CPU, on the poller and on the switch. A failed read
    closes it, so the next poll starts from a clean connection."""
    started = time.monotonic()
    driver = None
    failed = True
    try:
        driver = get_fabric_driver(target)  # inside: a misconfigured driver fails each switch
        ports, snapshot = driver.ports_and_counters()
        failed = False
        return SwitchReading(target.hostname, ports, snapshot, seconds=time.monotonic() - started)
    except FabricError as error:
        return SwitchReading(
            target.hostname,
            error=str(error) or type(error).__name__,
            seconds=time.monotonic() - started,
        )
    except Exception as error:  # a driver bug on one switch must not stop the others
        logger.exception("polling %s failed", target.hostname)
        return SwitchReading(
            target.hostname,
            error=f"{type(error).__name__}: {error}",
            seconds=time.monotonic() - started,
        )
    finally:
        try:
            if driver is not None and failed:
                driver.close()
        except Exception:
            logger.debug("closing the driver of %s failed", target.hostname, exc_info=True)


def read_switches(
    targets: list[SwitchTarget], concurrency: int | None = None
) -> list[SwitchReading]:
    """Read every target with at most `concurrency` (FABRIC_POLL_CONCURRENCY) at a time."""
    if not targets:
        return []
    workers = max(1, min(concurrency or settings.FABRIC_POLL_CONCURRENCY, len(targets)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fabric-poll") as pool:
        return list(pool.map(read_switch, targets))


# -- rates ---------------------------------------------------------------------------------------


def counter_delta(previous: int, current: int) -> tuple[int, bool]:
    """How far a cumulative counter moved, and whether it went backwards.

    A counter close to 2**64 that comes back small wrapped; any other step backwards is a reset
    (a reboot or `sonic-clear counters`), after which the counter counted up from zero.
    """
    if current >= previous:
        return current - previous, False
    if previous > COUNTER_WRAP - 2**62:
        return current + COUNTER_WRAP - previous, False
    return current, True


@dataclass(frozen=True)
class PortRates:
    """Rates between two samples; None where either sample lacks the counter (unknown is not
    zero: no rate, and no reset)."""

    in_bytes_per_second: float | None
    out_bytes_per_second: float | None
    pfc_rx_rates: list[float | None]
    pfc_tx_rates: list[float | None]
    ecn_marked_per_second: float | None
    counter_reset: bool


def _as_list(values: dict[int, int | None], length: int = 8) -> list[int | None]:
    return [None if values.get(index) is None else int(values[index]) for index in range(length)]


def _known_sum(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def compute_rates(previous: Mapping, current: PortCounters, seconds: float) -> PortRates | None:
    """Rates between the stored sample (a mapping with in_octets, out_octets, pfc_rx, pfc_tx,
    ecn_marked) and a new one; None when no time has passed."""
    if seconds <= 0:
        return None
    reset = False

    def rate(before, after) -> float | None:
        nonlocal reset
        if before is None or after is None:
            return None
        delta, went_back = counter_delta(int(before), int(after))
        reset = reset or went_back
        return delta / seconds

    def rates(before: list, after: list[int | None]) -> list[float | None]:
        before = list(before) + [None] * (len(after) - len(before))
        return [rate(b, a) for b, a in zip(before, after, strict=False)]

    in_rate = rate(previous["in_octets"], current.in_octets)
    out_rate = rate(previous["out_octets"], current.out_octets)
    pfc_rx = rates(previous["pfc_rx"], _as_list(current.pfc_rx))
    pfc_tx = rates(previous["pfc_tx"], _as_list(current.pfc_tx))
    ecn = None
    if previous["ecn_marked"] and current.ecn_marked:  # empty: not collected at that sample
        ecn = _known_sum(rates(previous["ecn_marked"], _as_list(current.ecn_marked)))
    return PortRates(in_rate, out_rate, pfc_rx, pfc_tx, ecn, reset)


# -- history -------------------------------------------------------------------------------------


def history_slots() -> int:
    return max(1, settings.FABRIC_HISTORY_SECONDS // settings.FABRIC_HISTORY_RESOLUTION_SECONDS)


def history_slot(moment: datetime) -> tuple[int, datetime]:
    """The ring-buffer slot of a moment and the start of its bucket."""
    resolution = settings.FABRIC_HISTORY_RESOLUTION_SECONDS
    bucket = int(moment.timestamp()) // resolution
    start = datetime.fromtimestamp(bucket * resolution, tz=UTC)
    return bucket % history_slots(), start


def prune_history(now: datetime | None = None) -> int:
    """Delete history older than FABRIC_HISTORY_SECONDS (rows of ports no longer polled, which
    the ring would otherwise keep). Returns the number of rows deleted."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.FABRIC_HISTORY_SECONDS)
    deleted, _ = PortCounterHistory.objects.filter(bucket_start__lt=cutoff).delete()
    return deleted


# -- storing a poll ------------------------------------------------------------------------------


@dataclass
class PollResult:
    polled_at: datetime
    switches: int = 0
    failed: list[str] = field(default_factory=list)
    ports: int = 0
    seconds: float = 0.0
    read_seconds: float = 0.0
    pruned: int = 0

    def as_dict(self) -> dict:
        return {
            "polled_at": self.polled_at.isoformat(),
            "switches": self.switches,
            "failed": self.failed,
            "ports": self.ports,
            "seconds": round(self.seconds, 3),
            "read_seconds": round(self.read_seconds, 3),
            "pruned": self.pruned,
        }


def poll_fabric(
    *, switches: list[Switch] | None = None, concurrency: int | None = None
) -> PollResult:
    """Poll every inventory switch (or `switches`) once and store the results."""
    started = time.monotonic()
    polled_at = timezone.now()
    switches = list(switches if switches is not None else Switch.objects.order_by("hostname"))
    readings = read_switches([poll_target(switch) for switch in switches], concurrency)
    read_seconds = time.monotonic() - started
    result = PollResult(polled_at=polled_at, switches=len(switches), read_seconds=read_seconds)
    with transaction.atomic():
        overview_before = unscoped_overview_cells()
        summaries = store_readings(switches, readings, polled_at, result)
        # Prune against the switches' clock: samples carry the time the switch reported.
        newest = max((r.snapshot.taken_at for r in readings if r.snapshot), default=polled_at)
        result.pruned = prune_history(newest)
        if result.ports > settings.FABRIC_EVENT_MAX_PORTS:
            # Keep the event compact on a large fabric: per-switch summaries only; pages that
            # draw every port re-read them when they see "ports_omitted".
            for summary in summaries.values():
                summary.pop("ports", None)
        publish(
            FABRIC_GROUP,
            "fabric.poll",
            {
                "polled_at": polled_at,
                "switches": summaries,
                "ports_omitted": result.ports > settings.FABRIC_EVENT_MAX_PORTS,
            },
        )
        # The overview page's rows that this poll changed, so open pages update in place
        # whatever the fabric's size (fabric.overview).
        publish(
            OVERVIEW_GROUP,
            "fabric.overview",
            {"polled_at": polled_at,
             **overview_delta(overview_before, unscoped_overview_cells())},
        )
    result.seconds = time.monotonic() - started
    return result


@dataclass
class _PollWrites:
    """What storing one poll writes once every switch is read, gathered switch by switch."""

    latest: list[dict] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    changed_ports: list[tuple[int, str, str]] = field(default_factory=list)
    signals: list = field(default_factory=list)


@dataclass
class _SwitchTraffic:
    """One switch's ports summed over one poll."""

    port_codes: dict[str, str] = field(default_factory=dict)
    in_bytes: float = 0.0
    out_bytes: float = 0.0
    pfc_pauses: float = 0.0
    ecn_marked: float = 0.0
    utilizations: list[float] = field(default_factory=list)
    hottest: tuple = ()  # (utilization, -port index, port name) of the busiest up port


def store_readings(
    switches: list[Switch], readings: list[SwitchReading], polled_at: datetime, result: PollResult
) -> dict[str, dict]:
    """Write latest counters, rates, history and poll state; return the per-switch summary the
    "fabric" event carries.

    Rows travel as dicts of column values rather than model instances: at scale 20 a poll
    handles 43,000 ports, and instantiating models twice per port was a third of its time.
    """
    by_switch = {switch.hostname: switch for switch in switches}
    states = {
        state.switch_id: state for state in SwitchPollState.objects.filter(switch__in=switches)
    }
    answered = [by_switch[r.hostname].pk for r in readings if not r.error]
    inventory_ports = _inventory_ports(answered)
    previous = _previous_samples(answered)
    unreachable_after = getattr(
        settings, "FABRIC_UNREACHABLE_AFTER_FAILURES", DEFAULT_UNREACHABLE_AFTER_FAILURES
    )
    writes = _PollWrites()
    summaries: dict[str, dict] = {}
    for reading in readings:
        switch = by_switch[reading.hostname]
        state = states.get(switch.pk) or SwitchPollState(switch=switch)
        state.last_polled_at = polled_at
        state.poll_seconds = reading.seconds
        states[switch.pk] = state
        if reading.error:
            _record_failure(state, reading, unreachable_after, writes.signals)
            result.failed.append(reading.hostname)
            summaries[reading.hostname] = {"ok": False, "error": state.last_error[:200]}
            continue
        traffic = _store_ports(switch, reading, inventory_ports, previous, writes, result)
        _record_success(state, reading, traffic, unreachable_after, writes.signals)
        summaries[reading.hostname] = _switch_summary(state, traffic)
    _save_states(list(states.values()))
    bulk_upsert(PortCounterLatest, writes.latest, unique_fields=["port"])
    bulk_upsert(PortCounterHistory, writes.history, unique_fields=["port", "slot"])
    refresh_switch_throughput(answered, polled_at)
    _record_port_status(writes.changed_ports, polled_at)
    notify_fabric_signals(writes.signals)
    return summaries


def refresh_switch_throughput(switch_ids: list[int], summed_at: datetime) -> None:
    """Store the switches' latest counters summed by what their ports face, for the aggregates
    API (SwitchThroughputLatest): replaced whole, so a facing that no port has any more (its
    cables moved) does not linger."""
    rows = [
        SwitchThroughputLatest(
            switch_id=switch_id, facing=facing, summed_at=summed_at, ports=sums.ports,
            ports_up=sums.ports_up, in_bytes_per_second=sums.in_bytes_per_second,
            out_bytes_per_second=sums.out_bytes_per_second,
            ecn_marked_per_second=sums.ecn_marked_per_second,
            ecn_ports_not_collected=sums.ecn_ports_not_collected,
            pfc_rx_per_second=sums.pfc_rx_per_second, pfc_tx_per_second=sums.pfc_tx_per_second,
        )
        for switch_id, facing, sums in throughput_by_facing(switch_ids)
    ]
    with transaction.atomic():
        SwitchThroughputLatest.objects.filter(switch_id__in=switch_ids).delete()
        SwitchThroughputLatest.objects.bulk_create(rows, batch_size=2000)


def _inventory_ports(
    switch_ids: list[int],
) -> dict[tuple[int, str], tuple[int, str, str, int]]:
    """{(switch id, port name): (port id, admin status, oper status, index)} of the whole ports
    the inventory lists (a breakout cage has no counters of its own)."""
    return {
        (switch_id, name): (port_id, admin, oper, index)
        for port_id, switch_id, name, admin, oper, index in SwitchPort.objects.filter(
            switch_id__in=switch_ids, breakout_mode=""
        ).values_list("id", "switch_id", "name", "admin_status", "oper_status", "index")
    }


def _previous_samples(switch_ids: list[int]) -> dict[int, dict]:
    """The stored sample of each port, by port id, that this poll's rates start from."""
    return {
        row["port_id"]: row
        for row in PortCounterLatest.objects.filter(port__switch_id__in=switch_ids).values(
            *PREVIOUS_SAMPLE_FIELDS
        )
    }


def _record_failure(
    state: SwitchPollState, reading: SwitchReading, unreachable_after: int, signals: list
) -> None:
    """A switch that did not answer keeps its last-seen time; it is reported unreachable once,
    when the failures in a row reach `unreachable_after`."""
    state.last_error = reading.error[:2000]
    state.consecutive_failures += 1
    if state.consecutive_failures == unreachable_after:
        signals.append(SwitchReachability(
            reading.hostname, False, state.last_error, state.consecutive_failures
        ))


def _store_ports(
    switch: Switch,
    reading: SwitchReading,
    inventory_ports: dict[tuple[int, str], tuple[int, str, str, int]],
    previous: dict[int, dict],
    writes: _PollWrites,
    result: PollResult,
) -> _SwitchTraffic:
    """Latest and history rows of one switch's ports, their status changes and link signals;
    returns the switch's traffic summed over its ports."""
    taken_at = reading.snapshot.taken_at
    slot, bucket_start = history_slot(taken_at)
    counted = {counters.name: counters for counters in reading.snapshot.ports}
    traffic = _SwitchTraffic()
    for status in reading.ports:
        known = inventory_ports.get((switch.pk, status.name))
        if known is None:
            continue  # the switch has ports the inventory does not list (e.g. management)
        port_id, stored_admin, stored_oper, port_index = known
        counters = counted.get(status.name) or PortCounters(status.name, None, None)
        row = latest_row(port_id, status, counters, taken_at, previous.get(port_id))
        row["counters_mapped"] = status.name in counted
        writes.latest.append(row)
        result.ports += 1
        utilization = row["utilization"] or 0.0
        admin_up, oper_up = status.known_admin_up, status.known_oper_up  # None: unknown
        traffic.port_codes[status.name] = (
            f"{port_state_letter(admin_up, oper_up)}{round(utilization * 100)}"
        )
        if row["in_bytes_per_second"] is not None:
            traffic.in_bytes += row["in_bytes_per_second"]
            traffic.out_bytes += row["out_bytes_per_second"] or 0.0
            traffic.pfc_pauses += (_known_sum(row["pfc_rx_rates"]) or 0.0) + (
                _known_sum(row["pfc_tx_rates"]) or 0.0)
            traffic.ecn_marked += row["ecn_marked_per_second"] or 0.0
            writes.history.append(history_row(row, slot, bucket_start))
        if status.oper_up and row["utilization"] is not None:
            traffic.utilizations.append(utilization)
            # The busiest up port, the lowest index among equals, for the overview's row.
            if (utilization, -port_index) > traffic.hottest:
                traffic.hottest = (utilization, -port_index, status.name)
        admin, oper = link_status(admin_up), link_status(oper_up)
        if (stored_admin, stored_oper) != (admin, oper):
            writes.changed_ports.append((port_id, admin, oper))
            if is_link_change(stored_admin=stored_admin, stored_oper=stored_oper,
                              admin_up=admin_up, oper_up=oper_up):
                writes.signals.append(
                    LinkChange(switch.hostname, status.name, status.admin_up, status.oper_up)
                )
    return traffic


def _record_success(
    state: SwitchPollState,
    reading: SwitchReading,
    traffic: _SwitchTraffic,
    unreachable_after: int,
    signals: list,
) -> None:
    """The poll state of a switch that answered: seen now, failures cleared (reported reachable
    again if it had been reported unreachable), its ports counted and its traffic summed."""
    counted = {counters.name for counters in reading.snapshot.ports}
    unmapped = [status.name for status in reading.ports if status.name not in counted]
    if unmapped and unmapped != list(state.unmapped_ports or []):
        _report_unmapped(reading.hostname, unmapped)
    state.unmapped_ports = unmapped
    if state.consecutive_failures >= unreachable_after:
        signals.append(SwitchReachability(reading.hostname, True))
    state.last_seen_at = reading.snapshot.taken_at
    state.last_error = ""
    state.consecutive_failures = 0
    # A port whose state is unknown is neither: not up, and not a port down to look at.
    state.ports_up = sum(1 for s in reading.ports if s.known_oper_up is True)
    state.ports_down = sum(1 for s in reading.ports
                           if s.known_admin_up is True and s.known_oper_up is False)
    state.in_bytes_per_second = traffic.in_bytes
    state.out_bytes_per_second = traffic.out_bytes
    state.pfc_pause_per_second = traffic.pfc_pauses
    state.ecn_counters = reading.snapshot.ecn_counters
    state.ecn_marked_per_second = (traffic.ecn_marked if state.ecn_counters == ECN_COLLECTED
                                   else None)
    utilizations = traffic.utilizations
    state.mean_utilization = sum(utilizations) / len(utilizations) if utilizations else 0.0
    state.max_utilization = max(utilizations, default=0.0)
    state.hottest_port = traffic.hottest[2] if traffic.hottest else ""


def _switch_summary(state: SwitchPollState, traffic: _SwitchTraffic) -> dict:
    """A switch that answered, as the "fabric" event carries it."""
    return {
        "ok": True,
        "in_bps": round(traffic.in_bytes),
        "out_bps": round(traffic.out_bytes),
        "mean_util": round(state.mean_utilization, 4),
        "max_util": round(state.max_utilization, 4),
        "up": state.ports_up,
        "down": state.ports_down,
        "ports": traffic.port_codes,
    }


def _report_unmapped(hostname: str, ports: list[str]) -> None:
    """A port the switch has but COUNTERS_PORT_NAME_MAP does not name has no counters at all
    (flex counters not created for it, or a port added after syncd started): told to the
    finding listeners when the set first appears or changes, not at every poll."""
    shown = ", ".join(ports[:8]) + (f" and {len(ports) - 8} more" if len(ports) > 8 else "")
    notify_fabric_finding(FabricFinding(
        kind="counters_unmapped",
        key=f"counters_unmapped:{hostname}:{','.join(ports)}",
        summary=f"{hostname}: {len(ports)} port(s) missing from COUNTERS_PORT_NAME_MAP, "
                f"no counters: {shown}",
        switches=(hostname,),
        ports=tuple(f"{hostname}:{port}" for port in ports),
        details={"ports": ports},
    ))


def _record_port_status(changed: list[tuple[int, str, str]], seen_at: datetime) -> None:
    """Copy admin/oper status into the inventory's ports where it changed."""
    if not changed:
        return
    if connection.vendor != "postgresql":
        ports = SwitchPort.objects.in_bulk([port_id for port_id, _, _ in changed])
        for port_id, admin, oper in changed:
            port = ports[port_id]
            port.admin_status, port.oper_status, port.last_seen_at = admin, oper, seen_at
        SwitchPort.objects.bulk_update(
            list(ports.values()), ["admin_status", "oper_status", "last_seen_at"], batch_size=500
        )
        return
    # One statement, where bulk_update's CASE expression costs seconds for 40,000 ports.
    table = connection.ops.quote_name(SwitchPort._meta.db_table)
    ids, admins, opers = (list(column) for column in zip(*changed, strict=True))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS port SET admin_status = changed.admin, "  # noqa: S608
            "oper_status = changed.oper, last_seen_at = %s "
            "FROM (SELECT unnest(%s::bigint[]) AS id, unnest(%s::text[]) AS admin, "
            "unnest(%s::text[]) AS oper) AS changed WHERE port.id = changed.id",
            [seen_at, ids, admins, opers],
        )


def _save_states(states: list[SwitchPollState]) -> None:
    if connection.vendor == "postgresql":
        # One COPY and upsert: bulk_update's CASE per column and row took seconds for 520
        # switches, longer than storing their 43,000 ports.
        fields = [f.attname for f in SwitchPollState._meta.concrete_fields if not f.primary_key]
        bulk_upsert(SwitchPollState, [{name: getattr(state, name) for name in fields}
                                 for state in states], unique_fields=["switch"])
        return
    new = [state for state in states if state.pk is None]
    old = [state for state in states if state.pk is not None]
    if new:
        SwitchPollState.objects.bulk_create(new)
    if old:
        SwitchPollState.objects.bulk_update(
            old,
            [
                f.name
                for f in SwitchPollState._meta.concrete_fields
                if f.name not in ("id", "switch")
            ],
        )


PREVIOUS_SAMPLE_FIELDS = (
    "port_id",
    "sampled_at",
    "in_octets",
    "out_octets",
    "pfc_rx",
    "pfc_tx",
    "ecn_marked",
    "interval_seconds",
    "in_bytes_per_second",
    "out_bytes_per_second",
    "pfc_rx_rates",
    "pfc_tx_rates",
    "ecn_marked_per_second",
    "utilization",
)
_CARRIED_RATES = PREVIOUS_SAMPLE_FIELDS[7:]


def latest_row(
    port_id: int,
    status: PortStatus,
    counters: PortCounters,
    taken_at: datetime,
    previous: Mapping | None,
) -> dict:
    """The PortCounterLatest columns of a new sample, with rates from `previous` (a mapping of
    PREVIOUS_SAMPLE_FIELDS), if any."""
    row = {
        "port_id": port_id,
        "sampled_at": taken_at,
        "admin_up": status.known_admin_up,  # None: unknown (intfutil's N/A)
        "oper_up": status.known_oper_up,
        "speed_mbps": status.speed_mbps,
        "fec": status.fec[:16],
        "intent_differences": status.intent_differences(),
        "counters_mapped": True,
        "in_octets": counters.in_octets,
        "out_octets": counters.out_octets,
        "in_packets": counters.in_packets,
        "out_packets": counters.out_packets,
        "in_errors": counters.in_errors,
        "out_errors": counters.out_errors,
        "in_discards": counters.in_discards,
        "out_discards": counters.out_discards,
        "pfc_rx": _as_list(counters.pfc_rx),
        "pfc_tx": _as_list(counters.pfc_tx),
        # Empty while the switch does not collect ECN marks: not a row of zeros.
        "ecn_marked": _as_list(counters.ecn_marked) if counters.ecn_marked else [],
        "interval_seconds": None,
        "in_bytes_per_second": None,
        "out_bytes_per_second": None,
        "pfc_rx_rates": [],
        "pfc_tx_rates": [],
        "ecn_marked_per_second": None,
        "utilization": None,
        "counter_reset": False,
    }
    if previous is None:
        return row
    seconds = (taken_at - previous["sampled_at"]).total_seconds()
    rates = compute_rates(previous, counters, seconds)
    if rates is None:
        # Same instant as the stored sample (two polls within the driver's clock resolution):
        # keep the previous rates rather than reporting nothing.
        row.update({name: previous[name] for name in _CARRIED_RATES})
        return row
    # Utilisation against the running speed (intfutil's), not CONFIG_DB's: a port configured
    # 40G that came up at 25G is full at 25G.
    line_rate = (status.speed_mbps or 0) * 1_000_000 / 8
    known = [r for r in (rates.in_bytes_per_second, rates.out_bytes_per_second) if r is not None]
    utilization = min(1.0, max(known) / line_rate) if known and line_rate else None
    row.update(
        interval_seconds=seconds,
        in_bytes_per_second=rates.in_bytes_per_second,
        out_bytes_per_second=rates.out_bytes_per_second,
        pfc_rx_rates=rates.pfc_rx_rates,
        pfc_tx_rates=rates.pfc_tx_rates,
        ecn_marked_per_second=rates.ecn_marked_per_second,
        counter_reset=rates.counter_reset,
        utilization=utilization,
    )
    return row


def history_row(row: dict, slot: int, bucket_start: datetime) -> dict:
    return {
        "port_id": row["port_id"],
        "slot": slot,
        "bucket_start": bucket_start,
        "in_bytes_per_second": row["in_bytes_per_second"] or 0.0,
        "out_bytes_per_second": row["out_bytes_per_second"] or 0.0,
        "pfc_rx_per_second": _known_sum(row["pfc_rx_rates"]) or 0.0,
        "pfc_tx_per_second": _known_sum(row["pfc_tx_rates"]) or 0.0,
        "ecn_marked_per_second": row["ecn_marked_per_second"],  # None: not collected
        "utilization": row["utilization"] or 0.0,
        "oper_up": row["oper_up"],
    }

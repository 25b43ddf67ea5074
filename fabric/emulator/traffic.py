"""Simulated traffic that makes a switch's SAI counters move the way a RoCE fabric's do.

Each port has a target utilization of its line rate. `advance(seconds)` adds octets and
packets at that rate (with a few percent of seeded jitter) on ports that are oper up, spreads
egress traffic over queues (most of it on the lossless RoCE queue 3), and turns load above a
congestion threshold into PFC pause frames on PFC-enabled priorities, ECN marks on queues with
an ECN-capable WRED profile, and drops on congested queues that PFC does not protect.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

QUEUES_PER_PORT = 8
PRIORITIES = 8
ROCE_QUEUE = 3
# Share of egress bytes per queue: best effort, RoCEv2 (lossless), network control.
QUEUE_SHARE: dict[int, float] = {0: 0.08, ROCE_QUEUE: 0.90, 7: 0.02}
MEAN_PACKET_BYTES = 4160  # 4 KiB RoCE payload plus headers
PFC_FRAMES_PER_SECOND = 50_000  # pause frames per priority at full congestion
LOSSY_DROP_FRACTION = 0.02  # share of a congested, unprotected queue's packets dropped
LLDP_FRAMES_PER_SECOND = 1 / 30  # the only non-unicast traffic on a routed fabric port
JITTER = 0.05


@dataclass
class PortCounters:
    """Cumulative port counters; floats so that sub-packet rates accumulate exactly."""

    in_octets: float = 0.0
    out_octets: float = 0.0
    in_ucast_pkts: float = 0.0
    out_ucast_pkts: float = 0.0
    in_non_ucast_pkts: float = 0.0
    out_non_ucast_pkts: float = 0.0
    in_errors: float = 0.0
    out_errors: float = 0.0
    in_discards: float = 0.0
    out_discards: float = 0.0
    pfc_rx_pkts: list[float] = field(default_factory=lambda: [0.0] * PRIORITIES)
    pfc_tx_pkts: list[float] = field(default_factory=lambda: [0.0] * PRIORITIES)

    def as_sai(self) -> dict[str, str]:
        """The COUNTERS:oid:<port> hash: SAI stat names to decimal strings."""
        stats = {
            "SAI_PORT_STAT_IF_IN_OCTETS": self.in_octets,
            "SAI_PORT_STAT_IF_OUT_OCTETS": self.out_octets,
            "SAI_PORT_STAT_IF_IN_UCAST_PKTS": self.in_ucast_pkts,
            "SAI_PORT_STAT_IF_OUT_UCAST_PKTS": self.out_ucast_pkts,
            "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS": self.in_non_ucast_pkts,
            "SAI_PORT_STAT_IF_OUT_NON_UCAST_PKTS": self.out_non_ucast_pkts,
            "SAI_PORT_STAT_IF_IN_ERRORS": self.in_errors,
            "SAI_PORT_STAT_IF_OUT_ERRORS": self.out_errors,
            "SAI_PORT_STAT_IF_IN_DISCARDS": self.in_discards,
            "SAI_PORT_STAT_IF_OUT_DISCARDS": self.out_discards,
            # portstat reads these for RX_OVR/TX_OVR and prints N/A when they are absent.
            "SAI_PORT_STAT_ETHER_RX_OVERSIZE_PKTS": 0,
            "SAI_PORT_STAT_ETHER_TX_OVERSIZE_PKTS": 0,
        }
        for priority in range(PRIORITIES):
            stats[f"SAI_PORT_STAT_PFC_{priority}_RX_PKTS"] = self.pfc_rx_pkts[priority]
            stats[f"SAI_PORT_STAT_PFC_{priority}_TX_PKTS"] = self.pfc_tx_pkts[priority]
        return {name: str(int(value)) for name, value in stats.items()}


@dataclass
class QueueCounters:
    """Cumulative egress counters of one unicast queue."""

    packets: float = 0.0
    bytes: float = 0.0
    dropped_packets: float = 0.0
    dropped_bytes: float = 0.0
    ecn_marked_packets: float = 0.0
    ecn_marked_bytes: float = 0.0

    def as_sai(self) -> dict[str, str]:
        stats = {
            "SAI_QUEUE_STAT_PACKETS": self.packets,
            "SAI_QUEUE_STAT_BYTES": self.bytes,
            "SAI_QUEUE_STAT_DROPPED_PACKETS": self.dropped_packets,
            "SAI_QUEUE_STAT_DROPPED_BYTES": self.dropped_bytes,
            "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": self.ecn_marked_packets,
            "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": self.ecn_marked_bytes,
        }
        return {name: str(int(value)) for name, value in stats.items()}


@dataclass(frozen=True)
class PortRates:
    """Rates over the last advance, as the RATES:oid:<port> hash holds them (bytes/s, pkts/s)."""

    rx_bps: float = 0.0
    rx_pps: float = 0.0
    tx_bps: float = 0.0
    tx_pps: float = 0.0

    def as_rates_hash(self) -> dict[str, str]:
        return {
            "RX_BPS": f"{self.rx_bps:.2f}",
            "RX_PPS": f"{self.rx_pps:.2f}",
            "TX_BPS": f"{self.tx_bps:.2f}",
            "TX_PPS": f"{self.tx_pps:.2f}",
        }


@dataclass(frozen=True)
class PortQos:
    """The QoS configuration that shapes a port's congestion signals.

    `ecn_marking` maps a queue with an ECN-enabled WRED profile to its maximum marking
    probability (0..1).
    """

    pfc_priorities: frozenset[int] = frozenset()
    ecn_marking: Mapping[int, float] = field(default_factory=dict)


@dataclass
class _PortState:
    line_rate_bytes: float  # bytes per second at 100 %
    utilization: float
    error_rate: float = 0.0
    counters: PortCounters = field(default_factory=PortCounters)
    queues: list[QueueCounters] = field(
        default_factory=lambda: [QueueCounters() for _ in range(QUEUES_PER_PORT)]
    )
    rates: PortRates = field(default_factory=PortRates)


def _congestion(load: float, threshold: float) -> float:
    """0 at or below the threshold, rising linearly to 1 at full line rate."""
    return max(0.0, min(1.0, (load - threshold) / (1.0 - threshold)))


class TrafficModel:
    """Per-port load and cumulative counters of one switch; deterministic for a given seed."""

    def __init__(
        self, seed: int, default_utilization: float = 0.3, congestion_threshold: float = 0.8
    ) -> None:
        if not 0.0 < congestion_threshold < 1.0:
            raise ValueError("congestion_threshold must be between 0 and 1")
        # Seeded on purpose: runs must be reproducible, nothing here is security-sensitive.
        self._rng = random.Random(seed)  # noqa: S311
        self._seed = seed
        self.default_utilization = default_utilization
        self.congestion_threshold = congestion_threshold
        self._ports: dict[str, _PortState] = {}

    def add_port(self, name: str, speed_mbps: int, utilization: float | None = None) -> None:
        self._ports[name] = _PortState(
            line_rate_bytes=speed_mbps * 1_000_000 / 8,
            utilization=self.default_utilization if utilization is None else utilization,
        )

    def _port(self, name: str) -> _PortState:
        try:
            return self._ports[name]
        except KeyError:
            raise KeyError(f"no such port {name!r}") from None

    def set_utilization(self, port: str, value: float) -> None:
        """Target share of line rate (0..1) the port carries in each direction while up."""
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"utilization must be between 0 and 1, got {value}")
        self._port(port).utilization = value

    def set_error_rate(self, port: str, fraction: float) -> None:
        """Share of received packets counted as IN_ERRORS (e.g. a dirty optic)."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"error rate must be between 0 and 1, got {fraction}")
        self._port(port).error_rate = fraction

    def counters(self, port: str) -> PortCounters:
        return self._port(port).counters

    def queue(self, port: str, index: int) -> QueueCounters:
        return self._port(port).queues[index]

    def rates(self, port: str) -> PortRates:
        return self._port(port).rates

    def reset(self) -> None:
        """Zero every counter, as a syncd restart (config reload, reboot) does."""
        self._rng = random.Random(self._seed)  # noqa: S311
        for state in self._ports.values():
            state.counters = PortCounters()
            state.queues = [QueueCounters() for _ in range(QUEUES_PER_PORT)]
            state.rates = PortRates()

    def advance(self, seconds: float, active: Mapping[str, PortQos]) -> None:
        """Let `seconds` of traffic flow on the ports in `active` (the oper-up ones).

        Ports not in `active` keep their counters and report zero rates.
        """
        if seconds <= 0:
            return
        for name, state in self._ports.items():
            qos = active.get(name)
            if qos is None:
                state.rates = PortRates()
                continue
            self._flow(state, qos, seconds)

    def _flow(self, state: _PortState, qos: PortQos, seconds: float) -> None:
        tx_load = min(1.0, state.utilization * (1 + self._rng.uniform(-JITTER, JITTER)))
        rx_load = min(1.0, state.utilization * (1 + self._rng.uniform(-JITTER, JITTER)))
        tx_bytes = state.line_rate_bytes * tx_load * seconds
        rx_bytes = state.line_rate_bytes * rx_load * seconds
        tx_packets = tx_bytes / MEAN_PACKET_BYTES
        rx_packets = rx_bytes / MEAN_PACKET_BYTES
        control_frames = LLDP_FRAMES_PER_SECOND * seconds
        tx_congestion = _congestion(tx_load, self.congestion_threshold)
        rx_congestion = _congestion(rx_load, self.congestion_threshold)

        counters = state.counters
        counters.out_octets += tx_bytes
        counters.in_octets += rx_bytes
        counters.out_ucast_pkts += tx_packets
        counters.in_ucast_pkts += rx_packets
        counters.out_non_ucast_pkts += control_frames
        counters.in_non_ucast_pkts += control_frames
        counters.in_errors += rx_packets * state.error_rate

        for queue, share in QUEUE_SHARE.items():
            packets = tx_packets * share
            queue_counters = state.queues[queue]
            queue_counters.packets += packets
            queue_counters.bytes += tx_bytes * share
            marking = qos.ecn_marking.get(queue, 0.0)
            if marking:
                marked = packets * tx_congestion * marking
                queue_counters.ecn_marked_packets += marked
                queue_counters.ecn_marked_bytes += marked * MEAN_PACKET_BYTES
            # Queue q carries priority q (the default tc_to_queue map is the identity).
            if queue in qos.pfc_priorities:
                pauses = PFC_FRAMES_PER_SECOND * seconds
                counters.pfc_tx_pkts[queue] += pauses * rx_congestion  # we pause the peer
                counters.pfc_rx_pkts[queue] += pauses * tx_congestion  # the peer pauses us
            else:
                dropped = packets * tx_congestion * LOSSY_DROP_FRACTION
                queue_counters.dropped_packets += dropped
                queue_counters.dropped_bytes += dropped * MEAN_PACKET_BYTES
                counters.out_discards += dropped

        state.rates = PortRates(
            rx_bps=rx_bytes / seconds,
            rx_pps=(rx_packets + control_frames) / seconds,
            tx_bps=tx_bytes / seconds,
            tx_pps=(tx_packets + control_frames) / seconds,
        )

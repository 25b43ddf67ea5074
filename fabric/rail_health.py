"""Rail health for a set of nodes (a job's nodes), paper Observation 7.

Each rail NIC of a node is cabled to a port of the leaf serving that rail in the node's pod.
The throughput of those leaf ports (full duplex: in + out) is the node's traffic on that rail,
as the paper's NIC-side counters measured it. A rail is flagged when its mean per-port
throughput is under `ratio` x the median of the other rails for `samples` consecutive history
samples (paper: six rails near 18.9 GB/s, two near 8.0 GB/s); the finding names the leafs
serving those rails for these nodes.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from django.conf import settings

from fabric.hooks import FabricFinding, notify_fabric_finding
from fabric.models import PortCounterHistory, PortCounterLatest
from inventory.hostlist import compress_hostlist
from inventory.models import NIC, Node
from inventory.selectors import nic_link, with_cable_ends


@dataclass(frozen=True)
class RailPort:
    node: str
    rail: int
    device: str
    port_id: int
    switch: str
    port: str


def rail_ports_for_nodes(nodes: Iterable[Node]) -> list[RailPort]:
    """The leaf port each rail NIC of `nodes` is cabled to; three queries."""
    node_ids = [node.pk for node in nodes]
    nics = with_cable_ends(
        NIC.objects.filter(node_id__in=node_ids, role=NIC.Role.RAIL).select_related("node")
    )
    ports = []
    for nic in nics:
        link = nic_link(nic)
        if link is None or link.port is None:
            continue
        ports.append(RailPort(nic.node.hostname, nic.rail, nic.device, link.port.pk,
                              link.port.switch.hostname, link.port.name))
    ports.sort(key=lambda p: (p.rail, p.node))
    return ports


@dataclass
class RailThroughput:
    rail: int
    leafs: list[str]
    ports: int
    in_bytes_per_second: float = 0.0
    out_bytes_per_second: float = 0.0
    pfc_pause_per_second: float = 0.0
    ecn_marked_per_second: float = 0.0
    # Ports with rates whose leaf does not collect ECN marks: left out of the ECN sum.
    ecn_ports_not_collected: int = 0

    @property
    def per_port_bytes_per_second(self) -> float:
        total = self.in_bytes_per_second + self.out_bytes_per_second
        return total / self.ports if self.ports else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "per_port_bytes_per_second": self.per_port_bytes_per_second}


def rail_throughput_for_nodes(nodes: Iterable[Node]) -> list[RailThroughput]:
    """Current (latest-sample) throughput per rail of `nodes`, from their leaf ports."""
    rail_ports = rail_ports_for_nodes(nodes)
    latest = {
        row.port_id: row
        for row in PortCounterLatest.objects.filter(port_id__in=[p.port_id for p in rail_ports])
    }
    rails: dict[int, RailThroughput] = {}
    for port in rail_ports:
        entry = rails.setdefault(port.rail, RailThroughput(port.rail, [], 0))
        entry.ports += 1
        if port.switch not in entry.leafs:
            entry.leafs.append(port.switch)
        row = latest.get(port.port_id)
        if row is None or row.in_bytes_per_second is None:
            continue
        entry.in_bytes_per_second += row.in_bytes_per_second
        entry.out_bytes_per_second += row.out_bytes_per_second or 0.0
        entry.pfc_pause_per_second += sum(  # None: a priority the switch does not count
            value or 0.0 for value in (*row.pfc_rx_rates, *row.pfc_tx_rates))
        if row.ecn_marked_per_second is None:
            entry.ecn_ports_not_collected += 1
        else:
            entry.ecn_marked_per_second += row.ecn_marked_per_second
    return [rails[rail] for rail in sorted(rails)]


@dataclass
class RailImbalance:
    """The verdict on a set of nodes; `imbalanced` is empty when the rails are even."""

    nodes: str  # compressed hostlist
    samples_required: int
    samples_used: int
    ratio: float
    imbalanced_rails: list[int] = field(default_factory=list)
    leafs: list[str] = field(default_factory=list)
    # Per sample (oldest first): bucket start and per-rail mean per-port throughput.
    series: list[dict] = field(default_factory=list)

    @property
    def imbalanced(self) -> bool:
        return bool(self.imbalanced_rails)

    @property
    def summary(self) -> str:
        if not self.imbalanced:
            return f"Rails of {self.nodes} are balanced"
        rails = ", ".join(str(rail) for rail in self.imbalanced_rails)
        return (
            f"Rail imbalance on {self.nodes}: rail(s) {rails} under {self.ratio:.0%} of the "
            f"median of the other rails for {self.samples_used} samples; "
            f"leaf(s) {', '.join(self.leafs)}"
        )

    def as_dict(self) -> dict:
        return {**asdict(self), "imbalanced": self.imbalanced, "summary": self.summary}


def low_rails(values: dict[int, float], ratio: float) -> set[int]:
    """Rails whose value is under `ratio` x the median of the other rails."""
    low = set()
    for rail, value in values.items():
        others = [other for key, other in values.items() if key != rail]
        if len(others) >= 2 and value < ratio * statistics.median(others):
            low.add(rail)
    return low


def detect_rail_imbalance(
    nodes: Iterable[Node], *, samples: int | None = None, ratio: float | None = None
) -> RailImbalance:
    """Look at the latest `samples` history buckets of the nodes' rail ports and flag rails low
    in every one of them (FABRIC_RAIL_IMBALANCE_SAMPLES / _RATIO by default)."""
    nodes = list(nodes)
    samples = samples or settings.FABRIC_RAIL_IMBALANCE_SAMPLES
    ratio = ratio if ratio is not None else settings.FABRIC_RAIL_IMBALANCE_RATIO
    rail_ports = rail_ports_for_nodes(nodes)
    verdict = RailImbalance(compress_hostlist([node.hostname for node in nodes]), samples, 0,
                            ratio)
    port_rail = {port.port_id: port for port in rail_ports}
    buckets = list(
        PortCounterHistory.objects.filter(port_id__in=list(port_rail))
        .values_list("bucket_start", flat=True).distinct().order_by("-bucket_start")[:samples]
    )
    if len(buckets) < samples:
        verdict.samples_used = len(buckets)
        return verdict
    rows = PortCounterHistory.objects.filter(
        port_id__in=list(port_rail), bucket_start__in=buckets
    ).values_list("bucket_start", "port_id", "in_bytes_per_second", "out_bytes_per_second")
    totals: dict = defaultdict(lambda: defaultdict(list))
    for bucket_start, port_id, in_rate, out_rate in rows:
        totals[bucket_start][port_rail[port_id].rail].append(in_rate + out_rate)
    low_everywhere: set[int] | None = None
    for bucket_start in sorted(buckets):
        means = {rail: sum(values) / len(values) for rail, values in totals[bucket_start].items()}
        verdict.series.append({"bucket_start": bucket_start.isoformat(),
                               "rails": {str(r): round(v) for r, v in sorted(means.items())}})
        low = low_rails(means, ratio)
        low_everywhere = low if low_everywhere is None else low_everywhere & low
    verdict.samples_used = len(buckets)
    verdict.imbalanced_rails = sorted(low_everywhere or ())
    verdict.leafs = sorted({
        port.switch for port in rail_ports if port.rail in verdict.imbalanced_rails
    })
    return verdict


def report_rail_imbalance(nodes: Iterable[Node], *, label: str = "") -> RailImbalance:
    """Detect, and on imbalance tell the finding listeners (kind "rail_imbalance"); `label`
    names what the nodes are (e.g. "job 1234") and makes the finding's key."""
    nodes = list(nodes)
    verdict = detect_rail_imbalance(nodes)
    if verdict.imbalanced:
        rails = ",".join(str(rail) for rail in verdict.imbalanced_rails)
        notify_fabric_finding(FabricFinding(
            kind="rail_imbalance",
            key=f"rail_imbalance:{label or verdict.nodes}:{rails}",
            summary=f"{label + ': ' if label else ''}{verdict.summary}",
            switches=tuple(verdict.leafs),
            nodes=tuple(node.hostname for node in nodes),
            details=verdict.as_dict(),
        ))
    return verdict


def check_running_jobs(*, min_nodes: int = 2) -> list[str]:
    """Observation 7 for every running job of at least `min_nodes` nodes: flag rails that carry
    far less than the others (report_rail_imbalance opens the leaf's ticket through the hook).
    Returns the labels of the jobs found imbalanced."""
    from jobs.models import Job

    imbalanced = []
    running = Job.objects.filter(state="RUNNING", node_count__gte=min_nodes).prefetch_related(
        "nodes"
    )
    for job in running:
        label = f"job {job.job_id}"
        verdict = report_rail_imbalance(list(job.nodes.all()), label=label)
        if verdict.imbalanced:
            imbalanced.append(label)
    return imbalanced

"""LLDP reconciliation: what the switches see on their ports against what the cables say.

Conventions (the emulator and a compute node's lldpd agree on them): a switch neighbor
advertises its hostname as system name and its port alias as port id (SONiC's lldpmgrd) with
the port name as description; a compute node advertises its hostname and, as port id, the NIC's
MAC (or netdev) with the device (`mlx5_0`) as description. Either identifier matches.

Findings:
- missing: a connected cable's switch port (admin up) has no LLDP neighbor;
- unexpected: a port has a neighbor but no active cable in the inventory;
- swapped: two ports each see what the other should see (two cables crossed, e.g. rails 2
  and 3 of one node): one finding naming both;
- mismatched: a port sees some other known or unknown device than its cable's far end.
New swapped, mismatched and missing findings go to the fabric finding listeners (fabric.hooks).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabric.drivers.base import FabricError, LldpNeighbor, get_fabric_driver
from fabric.hooks import FabricFinding, notify_fabric_finding
from fabric.models import LldpFinding, LldpObservation
from fabric.targets import switch_target
from inventory.models import NIC, CableStatus, Switch, SwitchPort
from inventory.selectors import active_cables

logger = logging.getLogger(__name__)

NOTIFIED_KINDS = frozenset({
    LldpFinding.Kind.SWAPPED, LldpFinding.Kind.MISMATCHED, LldpFinding.Kind.MISSING,
})


# -- the two sides ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """Something a cable can end on: a NIC or a switch port, with the names LLDP may use."""

    key: str  # "nic:<id>" or "port:<id>"
    system: str  # node or switch hostname
    identifiers: frozenset[str]
    label: str  # "gpu001 mlx5_2 (rail 2)" or "spine-01 Ethernet8"
    node: str = ""
    rail: int | None = None


def _nic_endpoint(nic: NIC) -> Endpoint:
    identifiers = {value.lower() for value in (nic.mac, nic.netdev, nic.device) if value}
    rail = f" (rail {nic.rail})" if nic.rail is not None else ""
    return Endpoint(f"nic:{nic.pk}", nic.node.hostname, frozenset(identifiers),
                    f"{nic.node.hostname} {nic.device}{rail}", node=nic.node.hostname,
                    rail=nic.rail)


def _port_endpoint(port: SwitchPort) -> Endpoint:
    identifiers = {value.lower() for value in (port.name, port.alias) if value}
    return Endpoint(f"port:{port.pk}", port.switch.hostname, frozenset(identifiers),
                    f"{port.switch.hostname} {port.name}")


@dataclass(frozen=True)
class PortName:
    switch: str
    port: str

    def __str__(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass
class CablePlan:
    """The inventory's view: far end per switch port, and an index to resolve LLDP names."""

    expected: dict[PortName, Endpoint] = field(default_factory=dict)
    admin_down: set[PortName] = field(default_factory=set)
    by_system: dict[str, list[Endpoint]] = field(default_factory=dict)

    def resolve(self, neighbor: LldpNeighbor) -> Endpoint | None:
        """The inventory endpoint an LLDP neighbor names, if any."""
        system = neighbor.remote_system_name.split(".", 1)[0].lower()
        names = {neighbor.remote_port_id.lower(), neighbor.remote_port_description.lower()}
        names.discard("")
        for endpoint in self.by_system.get(system, ()):
            if endpoint.identifiers & names:
                return endpoint
        return None


def cable_plan() -> CablePlan:
    """Every connected cable's switch-port ends with their far ends; three queries."""
    plan = CablePlan()
    cables = active_cables().filter(status=CableStatus.CONNECTED).select_related(
        "a_nic__node", "b_nic__node", "a_port__switch", "b_port__switch"
    )
    for cable in cables:
        ends = (
            (cable.a_port, cable.b_port, cable.b_nic),
            (cable.b_port, cable.a_port, cable.a_nic),
        )
        for local, far_port, far_nic in ends:
            far = _nic_endpoint(far_nic) if far_nic else _port_endpoint(far_port)
            plan.by_system.setdefault(far.system.lower(), []).append(far)
            if local is None:
                continue
            name = PortName(local.switch.hostname, local.name)
            plan.expected[name] = far
            if local.admin_status == SwitchPort.LinkStatus.DOWN:
                plan.admin_down.add(name)
    return plan


# -- comparing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    kind: str
    key: str
    summary: str
    switches: tuple[str, ...]
    ports: tuple[str, ...]
    nodes: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)

    def as_hook_finding(self) -> FabricFinding:
        return FabricFinding(self.kind, self.key, self.summary, self.switches, self.ports,
                             self.nodes, self.details)


def _describe(neighbor: LldpNeighbor) -> str:
    port = neighbor.remote_port_description or neighbor.remote_port_id
    return f"{neighbor.remote_system_name} {port}".strip()


def compare(
    plan: CablePlan, observed: dict[PortName, LldpNeighbor], switches: Iterable[str]
) -> list[Finding]:
    """Findings for the ports of `switches` (those whose LLDP table was read)."""
    checked = set(switches)
    findings: list[Finding] = []
    wrong: dict[PortName, tuple[Endpoint, Endpoint | None, LldpNeighbor]] = {}
    for name, expected in sorted(plan.expected.items(), key=lambda item: str(item[0])):
        if name.switch not in checked:
            continue
        neighbor = observed.get(name)
        if neighbor is None:
            if name in plan.admin_down:
                continue  # shut on purpose: no link, no LLDP
            findings.append(Finding(
                LldpFinding.Kind.MISSING, f"missing:{name}",
                f"{name.switch} {name.port}: no LLDP neighbor, cabled to {expected.label}",
                (name.switch,), (str(name),), (expected.node,) if expected.node else (),
                {"expected": expected.label},
            ))
            continue
        seen = plan.resolve(neighbor)
        if seen is None or seen.key != expected.key:
            wrong[name] = (expected, seen, neighbor)
    for name, neighbor in sorted(observed.items(), key=lambda item: str(item[0])):
        if name.switch in checked and name not in plan.expected:
            findings.append(Finding(
                LldpFinding.Kind.UNEXPECTED, f"unexpected:{name}",
                f"{name.switch} {name.port}: LLDP sees {_describe(neighbor)}, no cable in the "
                "inventory", (name.switch,), (str(name),), (),
                {"observed": _describe(neighbor)},
            ))
    findings.extend(_swaps_and_mismatches(wrong))
    return findings


def _swaps_and_mismatches(
    wrong: dict[PortName, tuple[Endpoint, Endpoint | None, LldpNeighbor]],
) -> list[Finding]:
    findings = []
    expected_at = {expected.key: name for name, (expected, _, _) in wrong.items()}
    paired: set[PortName] = set()
    for name, (expected, seen, neighbor) in sorted(wrong.items(), key=lambda item: str(item[0])):
        if name in paired:
            continue
        other = expected_at.get(seen.key) if seen else None
        if other is not None and other != name and other not in paired:
            other_expected, other_seen, _ = wrong[other]
            if other_seen is not None and other_seen.key == expected.key:
                paired.update({name, other})
                first, second = sorted([name, other], key=str)
                nodes = tuple(sorted({e.node for e in (expected, other_expected) if e.node}))
                findings.append(Finding(
                    LldpFinding.Kind.SWAPPED, f"swapped:{first}|{second}",
                    f"Cables crossed: {name.switch} {name.port} sees {seen.label} (cabled to "
                    f"{expected.label}); {other.switch} {other.port} sees {other_seen.label} "
                    f"(cabled to {other_expected.label})",
                    tuple(sorted({name.switch, other.switch})), (str(first), str(second)), nodes,
                    {
                        str(name): {"expected": expected.label, "observed": seen.label},
                        str(other): {"expected": other_expected.label,
                                     "observed": other_seen.label},
                    },
                ))
                continue
        observed_label = seen.label if seen else _describe(neighbor)
        nodes = tuple(sorted({e.node for e in (expected, seen) if e is not None and e.node}))
        findings.append(Finding(
            LldpFinding.Kind.MISMATCHED, f"mismatched:{name}",
            f"{name.switch} {name.port}: LLDP sees {observed_label}, cabled to {expected.label}",
            (name.switch,), (str(name),), nodes,
            {"expected": expected.label, "observed": observed_label},
        ))
    return findings


# -- collecting and recording ------------------------------------------------------------------


def _read_lldp(switch: Switch) -> tuple[str, list[LldpNeighbor] | None, str]:
    """One switch's neighbours. Its connection stays open for the counter poll that shares it
    (fabric.polling.read_switch); a failed read closes it."""
    driver = None
    failed = True
    try:
        driver = get_fabric_driver(switch_target(switch))
        neighbors = driver.lldp_neighbors()
        failed = False
        return switch.hostname, neighbors, ""
    except FabricError as error:
        return switch.hostname, None, str(error)
    except Exception as error:
        logger.exception("reading LLDP of %s failed", switch.hostname)
        return switch.hostname, None, f"{type(error).__name__}: {error}"
    finally:
        if driver is not None and failed:
            driver.close()


@dataclass
class LldpRun:
    checked: list[str]
    failed: dict[str, str]
    findings: list[Finding]
    opened: list[Finding]
    resolved: int


def collect_and_reconcile(*, switches: list[Switch] | None = None,
                          now: datetime | None = None) -> LldpRun:
    """Read LLDP from every switch (concurrently, bounded), store what each port sees, compare
    with the cables, and record the findings; new ones go to the listeners."""
    now = now or timezone.now()
    switches = list(switches if switches is not None else Switch.objects.order_by("hostname"))
    workers = max(1, min(settings.FABRIC_POLL_CONCURRENCY, len(switches) or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fabric-lldp") as pool:
        results = list(pool.map(_read_lldp, switches))
    read = {hostname: neighbors for hostname, neighbors, _ in results if neighbors is not None}
    failed = {hostname: error for hostname, neighbors, error in results if neighbors is None}
    with transaction.atomic():
        observed = _store_observations(read, now)
        findings = compare(cable_plan(), observed, read)
        opened, resolved = record_findings(findings, checked_switches=set(read), now=now)
    return LldpRun(sorted(read), failed, findings, opened, resolved)


def _store_observations(
    read: dict[str, list[LldpNeighbor]], now: datetime
) -> dict[PortName, LldpNeighbor]:
    ports = {
        (port.switch.hostname, port.name): port
        for port in SwitchPort.objects.filter(switch__hostname__in=list(read))
        .select_related("switch").only("id", "name", "switch__hostname")
    }
    LldpObservation.objects.filter(port__switch__hostname__in=list(read)).delete()
    rows, observed = [], {}
    for hostname, neighbors in read.items():
        for neighbor in neighbors:
            observed[PortName(hostname, neighbor.local_port)] = neighbor
            port = ports.get((hostname, neighbor.local_port))
            if port is None:
                continue
            rows.append(LldpObservation(
                port=port,
                remote_system_name=neighbor.remote_system_name[:255],
                remote_port_id=neighbor.remote_port_id[:255],
                remote_port_description=neighbor.remote_port_description[:255],
                remote_chassis_id=neighbor.remote_chassis_id[:64],
                seen_at=now,
            ))
    LldpObservation.objects.bulk_create(rows, batch_size=2000)
    return observed


def record_findings(
    findings: list[Finding], *, checked_switches: set[str], now: datetime
) -> tuple[list[Finding], int]:
    """Open new findings, refresh the ones still present, resolve the ones gone (only on the
    switches that were checked). Returns (new findings, number resolved)."""
    open_rows = {(row.kind, row.key): row for row in LldpFinding.objects.filter(resolved_at=None)}
    current = {(finding.kind, finding.key): finding for finding in findings}
    opened = [finding for identity, finding in current.items() if identity not in open_rows]
    LldpFinding.objects.bulk_create([
        LldpFinding(
            kind=finding.kind, key=finding.key, summary=finding.summary[:500],
            switches=list(finding.switches), ports=list(finding.ports),
            nodes=list(finding.nodes), details=finding.details,
            first_seen_at=now, last_seen_at=now,
        )
        for finding in opened
    ])
    still = [row.pk for identity, row in open_rows.items() if identity in current]
    LldpFinding.objects.filter(pk__in=still).update(last_seen_at=now)
    gone = [
        row.pk for identity, row in open_rows.items()
        if identity not in current and set(row.switches) <= checked_switches
    ]
    resolved = LldpFinding.objects.filter(pk__in=gone).update(resolved_at=now)
    for finding in opened:
        if finding.kind in NOTIFIED_KINDS:
            notify_fabric_finding(finding.as_hook_finding())
    return opened, resolved

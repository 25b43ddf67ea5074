"""Import a topology spec into the inventory: validated first, atomic, idempotent, in bulk.

The spec owns hardware facts (models, CPUs, GPUs, NIC layout, port layout, cabling). Operational
fields are set only when a row is created and are never overwritten by a re-import: a node's or
switch's lifecycle status, Slurm state, a port's admin/oper status, a cable's status and its
transceiver serials. Rows that the spec does not mention are left alone: import never deletes.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Model, QuerySet
from django.utils import timezone

from inventory.models import (
    GPU,
    NIC,
    Cable,
    CableStatus,
    Node,
    Pod,
    Rack,
    Switch,
    SwitchPort,
    TopologyImportRun,
)
from inventory.revision import note_inventory_changed
from inventory.topology.expand import expand_spec
from inventory.topology.plan import End, Plan
from inventory.topology.reading import SpecErrors
from inventory.topology.spec import read_spec
from portal.bulk_copy import copy_rows, written_fields
from portal.errors import InvalidInput
from portal.services.audit import record_change

BATCH_SIZE = 2000
ANALYZE_AFTER_ROWS = 10_000
# Serialises imports on PostgreSQL; any constant shared by all importers will do.
IMPORT_LOCK_KEY = 0x1A7E_0001
MODEL_LABELS = ("pods", "racks", "nodes", "gpus", "nics", "switches", "ports", "cables")

Progress = Callable[[str, int, int], None]


@dataclass
class ModelCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    @property
    def total(self) -> int:
        return self.created + self.updated + self.unchanged


@dataclass
class ImportReport:
    spec_name: str
    scale: int
    dry_run: bool
    counts: dict[str, ModelCounts] = field(
        default_factory=lambda: {label: ModelCounts() for label in MODEL_LABELS}
    )
    duration_s: float = 0.0
    run_id: int | None = None

    @property
    def changed(self) -> bool:
        return any(counts.created or counts.updated for counts in self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec_name,
            "scale": self.scale,
            "dry_run": self.dry_run,
            "duration_s": round(self.duration_s, 3),
            "run_id": self.run_id,
            "counts": {
                label: {
                    "created": counts.created,
                    "updated": counts.updated,
                    "unchanged": counts.unchanged,
                }
                for label, counts in self.counts.items()
            },
        }

    def summary(self) -> str:
        created = sum(counts.created for counts in self.counts.values())
        updated = sum(counts.updated for counts in self.counts.values())
        unchanged = sum(counts.unchanged for counts in self.counts.values())
        return f"{created} created, {updated} updated, {unchanged} unchanged"


def build_plan(spec: Any, *, scale: int = 1) -> Plan:
    """Read, check and expand a spec; raises InvalidInput listing every error with its location."""
    parsed, errors = read_spec(spec)
    errors.raise_if_any()
    plan = expand_spec(parsed, scale=scale, errors=errors)
    errors.raise_if_any()
    return plan


def import_topology(
    spec: dict,
    *,
    scale: int = 1,
    progress: Progress | None = None,
    dry_run: bool = False,
    actor=None,
    via: str = "cli",
) -> ImportReport:
    """Create or update the inventory described by `spec`, multiplied `scale` times.

    Checks the whole spec first and raises InvalidInput with every error and its location
    (`pods[1].nodes[0].range: ...`). Then writes everything in one transaction: a spec that
    clashes with the database (a NIC already cabled elsewhere) also raises InvalidInput and
    changes nothing. Re-importing the same spec creates and updates nothing. `progress(step,
    done, total)` is called as each model's rows are written. With `dry_run` the transaction is
    rolled back and the report says what would have changed. One audit entry records the run.
    """
    # Hundreds of thousands of small objects live through the import: the cyclic garbage
    # collector would rescan them over and over (seconds at scale 20) and finds nothing to free.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _import(spec, scale, progress, dry_run, actor, via)
    finally:
        if collecting:
            gc.enable()


def _import(spec, scale, progress, dry_run, actor, via) -> ImportReport:
    started = time.monotonic()
    plan = build_plan(spec, scale=scale)
    report = ImportReport(spec_name=plan.name, scale=scale, dry_run=dry_run)
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [IMPORT_LOCK_KEY])
            _Writer(plan, report, progress or _no_progress).run()
            note_inventory_changed()  # bulk writes send no signals
            report.duration_s = time.monotonic() - started  # as recorded on the run's row
            if dry_run:
                transaction.set_rollback(True)
            else:
                _record_run(plan, report, actor=actor, via=via)
    except IntegrityError as exc:
        # Rows outside the spec can still collide (a MAC or serial used by another node).
        raise InvalidInput(
            [f"database: {exc}"], errors=[{"location": "database", "message": str(exc)}]
        ) from exc
    if not dry_run and _created(report) >= ANALYZE_AFTER_ROWS and connection.vendor == "postgresql":
        # Planner statistics from before a bulk load would steer queries to sequential scans
        # until autovacuum catches up.
        with connection.cursor() as cursor:
            for model in (Pod, Rack, GPU, NIC, Node, Switch, SwitchPort, Cable):
                cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
    report.duration_s = time.monotonic() - started  # with the commit's deferred checks
    return report


def _created(report: ImportReport) -> int:
    return sum(counts.created for counts in report.counts.values())


def _no_progress(step: str, done: int, total: int) -> None:
    pass


def _record_run(plan: Plan, report: ImportReport, *, actor, via: str) -> None:
    run = TopologyImportRun.objects.create(
        spec_name=plan.name,
        scale=plan.scale,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        counts=report.as_dict()["counts"],
        duration_ms=int(report.duration_s * 1000),
    )
    report.run_id = run.pk
    record_change(
        actor=actor,
        operation="create",
        instance=run,
        after=report.as_dict(),
        note=f"Topology import of {plan.name} x{plan.scale}: {report.summary()}",
        via=via,
    )


def _chunks(items: list, size: int = BATCH_SIZE) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Writer:
    """Diffs the plan against the database model by model and writes the differences in bulk."""

    def __init__(self, plan: Plan, report: ImportReport, progress: Progress):
        self.plan = plan
        self.report = report
        self.progress = progress
        self.now = timezone.now()

    def run(self) -> None:
        plan = self.plan
        pod_ids = self.sync(
            Pod,
            "pods",
            {pod.name: {"description": pod.description} for pod in plan.pods},
            key_fields=["name"],
            scope=Pod.objects.filter(name__in=[pod.name for pod in plan.pods]),
        )
        rack_ids = self.sync(
            Rack,
            "racks",
            {rack.name: {"pod_id": pod_ids[rack.pod]} for rack in plan.racks},
            key_fields=["name"],
            scope=Rack.objects.filter(name__in=[rack.name for rack in plan.racks]),
        )
        hostnames = [node.hostname for node in plan.nodes]
        node_ids = self.sync(
            Node,
            "nodes",
            {
                node.hostname: {
                    "pod_id": pod_ids[node.pod],
                    "rack_id": rack_ids[node.rack] if node.rack else None,
                    "serial": node.serial,
                    "model": node.model,
                    "cpu_model": node.cpu_model,
                    "cpu_count": node.cpu_count,
                    "memory_gb": node.memory_gb,
                    "disks": node.disks,
                }
                for node in plan.nodes
            },
            key_fields=["hostname"],
            scope=Node.objects.filter(hostname__in=hostnames),
            # BMC facts, like the status, are the spec's only for a new node: afterwards the API
            # or NetBox (oob_ip) owns them, and a range without `bmc` must not blank them.
            on_create={
                node.hostname: {
                    "status": node.status,
                    "bmc_address": node.bmc_address,
                    "bmc_system_id": node.bmc_system_id,
                    "bmc_credentials_ref": node.bmc_credentials_ref,
                }
                for node in plan.nodes
            },
        )
        gpu_ids = self.sync(
            GPU,
            "gpus",
            {
                (node_ids[gpu.hostname], gpu.index): {
                    "uuid": gpu.uuid,
                    "serial": gpu.serial,
                    "model": gpu.model,
                    "pci_bus_id": gpu.pci_bus_id,
                }
                for gpu in plan.gpus
            },
            key_fields=["node_id", "index"],
            scope=GPU.objects.filter(node_id__in=node_ids.values()),
        )
        nic_ids = self.sync(
            NIC,
            "nics",
            {
                (node_ids[nic.hostname], nic.device): {
                    "netdev": nic.netdev,
                    "mac": nic.mac,
                    "role": nic.role,
                    "rail": nic.rail,
                    "affinity_gpu_id": (
                        gpu_ids[(node_ids[nic.hostname], nic.affinity_gpu_index)]
                        if nic.affinity_gpu_index is not None
                        else None
                    ),
                    "affinity_kind": nic.affinity_kind,
                    "speed_gbps": nic.speed_gbps,
                    "bond_members": nic.bond_members,
                }
                for nic in plan.nics
            },
            key_fields=["node_id", "device"],
            scope=NIC.objects.filter(node_id__in=node_ids.values()),
        )
        switch_ids = self.sync(
            Switch,
            "switches",
            {
                switch.hostname: {
                    "role": switch.role,
                    "pod_id": pod_ids[switch.pod] if switch.pod else None,
                    "rail": switch.rail,
                    "model": switch.model,
                    "asic": switch.asic,
                    "nos": switch.nos,
                    "nos_version": switch.nos_version,
                    "management_address": switch.management_address,
                    "credentials_ref": switch.credentials_ref,
                }
                for switch in plan.switches
            },
            key_fields=["hostname"],
            scope=Switch.objects.filter(hostname__in=[s.hostname for s in plan.switches]),
            on_create={switch.hostname: {"status": switch.status} for switch in plan.switches},
        )
        port_ids = self.sync_ports(switch_ids)
        self.sync_cables(nic_ids, port_ids, node_ids, switch_ids)

    def sync(
        self,
        model: type[Model],
        label: str,
        desired: dict[Any, dict[str, Any]],
        *,
        key_fields: list[str],
        scope: QuerySet,
        rows: list[tuple] | None = None,
        on_create: dict[Any, dict[str, Any]] | None = None,
        progress_offset: int = 0,
        progress_total: int | None = None,
    ) -> dict[Any, int]:
        """Create missing rows and update differing ones; returns key -> primary key for all.

        `scope` holds every row a key may match; `rows`, when given, are those rows already read
        as (pk, *key_fields, *desired fields).
        """
        fields = list(next(iter(desired.values()), {}))
        if rows is None:
            rows = scope.values_list("pk", *key_fields, *fields)
        width = len(key_fields)
        ids: dict[Any, int] = {}
        current: dict[Any, tuple] = {}
        for row in rows:
            key = row[1] if width == 1 else row[1 : 1 + width]
            ids[key] = row[0]
            current[key] = row[1 + width :]
        to_create: list[dict[str, Any]] = []
        to_update: dict[tuple[str, ...], list[Model]] = {}
        unchanged = 0
        has_updated_at = any(f.name == "updated_at" for f in model._meta.concrete_fields)
        for key, values in desired.items():
            if key not in ids:
                row = dict(zip(key_fields, (key,) if width == 1 else key, strict=True))
                row.update(values)
                if on_create:
                    row.update(on_create.get(key, {}))
                to_create.append(row)
                continue
            changed = tuple(
                name
                for name, value in zip(fields, current[key], strict=True)
                if values[name] != value
            )
            if not changed:
                unchanged += 1
                continue
            instance = model(pk=ids[key], **{name: values[name] for name in changed})
            if has_updated_at:
                instance.updated_at = self.now
                changed = (*changed, "updated_at")
            to_update.setdefault(changed, []).append(instance)
        counts = self.report.counts[label]
        counts.unchanged += unchanged
        total = progress_total if progress_total is not None else len(desired)
        done = progress_offset + unchanged
        self.progress(label, done, total)
        for batch in _chunks(to_create):
            self.insert(model, batch)
            counts.created += len(batch)
            done += len(batch)
            self.progress(label, done, total)
        for changed, instances in to_update.items():
            for batch in _chunks(instances):
                model.objects.bulk_update(batch, list(changed))
                counts.updated += len(batch)
                done += len(batch)
                self.progress(label, done, total)
        if to_create:
            for row in scope.values_list("pk", *key_fields):
                ids[row[1] if width == 1 else row[1:]] = row[0]
        return ids

    def insert(self, model: type[Model], rows: list[dict[str, Any]]) -> None:
        """Insert rows given as {attname: value}; fields left out get their model defaults.

        On PostgreSQL through COPY: the ORM's per-object work is most of an import's time at
        scale 20 (120,000 rows). Elsewhere (SQLite for the demo) through bulk_create.
        """
        if connection.vendor != "postgresql":
            model.objects.bulk_create([model(**row) for row in rows])
            return
        fields = written_fields(model)
        defaults = [
            self.now
            if getattr(each, "auto_now", False) or getattr(each, "auto_now_add", False)
            else each.get_default()
            for each in fields
        ]
        names = [each.attname for each in fields]
        with connection.cursor() as cursor:
            copy_rows(
                cursor,
                connection.ops.quote_name(model._meta.db_table),
                fields,
                (
                    [row.get(name, default) for name, default in zip(names, defaults, strict=True)]
                    for row in rows
                ),
            )

    def sync_ports(self, switch_ids: dict[str, int]) -> dict[tuple[int, str], int]:
        """Cages and whole ports first, then breakout halves, which point at their cage."""
        plan_ports = self.plan.ports

        def values(port, parent_id):
            return {
                "alias": port.alias,
                "index": port.index,
                "speed_gbps": port.speed_gbps,
                "lanes": port.lanes,
                "breakout_mode": port.breakout_mode,
                "breakout_parent_id": parent_id,
            }

        fields = list(values(plan_ports[0], None)) if plan_ports else []
        scope = SwitchPort.objects.filter(switch_id__in=switch_ids.values())
        rows = list(scope.values_list("pk", "switch_id", "name", *fields))
        parents = {
            (switch_ids[port.switch], port.name): values(port, None)
            for port in plan_ports
            if port.parent is None
        }
        ids = self.sync(
            SwitchPort,
            "ports",
            parents,
            key_fields=["switch_id", "name"],
            scope=scope,
            rows=rows,
            progress_total=len(plan_ports),
        )
        halves = {
            (switch_ids[port.switch], port.name): values(
                port, ids[(switch_ids[port.switch], port.parent)]
            )
            for port in plan_ports
            if port.parent is not None
        }
        ids.update(
            self.sync(
                SwitchPort,
                "ports",
                halves,
                key_fields=["switch_id", "name"],
                scope=scope,
                rows=rows,
                progress_offset=len(parents),
                progress_total=len(plan_ports),
            )
        )
        return ids

    def sync_cables(self, nic_ids, port_ids, node_ids, switch_ids) -> None:
        """A planned cable matches the active cable joining the same two ends, either way round."""

        def end_key(end: End) -> tuple[str, int]:
            kind, owner, name = end
            if kind == "nic":
                return ("nic", nic_ids[(node_ids[owner], name)])
            return ("port", port_ids[(switch_ids[owner], name)])

        active = Cable.objects.exclude(status=CableStatus.DECOMMISSIONED).values_list(
            "pk", "a_nic_id", "a_port_id", "b_nic_id", "b_port_id", "type", "length_m"
        )
        cable_at: dict[tuple[str, int], tuple] = {}
        for row in active:
            pk, a_nic, a_port, b_nic, b_port, _, _ = row
            a = ("nic", a_nic) if a_nic else ("port", a_port)
            b = ("nic", b_nic) if b_nic else ("port", b_port)
            cable_at[a] = cable_at[b] = (pk, a, b, row[5], row[6])
        errors = SpecErrors()
        to_create: list[dict[str, Any]] = []
        to_update: list[Cable] = []
        counts = self.report.counts["cables"]
        for planned in self.plan.cables:
            a, b = end_key(planned.a), end_key(planned.b)
            found_a, found_b = cable_at.get(a), cable_at.get(b)
            if found_a is None and found_b is None:
                to_create.append(
                    {
                        **_end_fields("a", a),
                        **_end_fields("b", b),
                        "type": planned.type,
                        "length_m": planned.length_m,
                        "status": planned.status,
                    }
                )
                continue
            if found_a is not None and found_a is found_b:
                pk, _, _, cable_type, length = found_a
                if cable_type == planned.type and length == planned.length_m:
                    counts.unchanged += 1
                else:
                    to_update.append(
                        Cable(
                            pk=pk, type=planned.type, length_m=planned.length_m, updated_at=self.now
                        )
                    )
                continue
            for end, found in ((planned.a, found_a), (planned.b, found_b)):
                if found is not None:
                    errors.add(
                        planned.rule,
                        f"{_describe(planned.a)} -> {_describe(planned.b)}: {_describe(end)} "
                        f"is already in cable #{found[0]}, which goes elsewhere",
                    )
        errors.raise_if_any()
        total = len(self.plan.cables)
        done = counts.unchanged
        self.progress("cables", done, total)
        for batch in _chunks(to_create):
            self.insert(Cable, batch)
            counts.created += len(batch)
            done += len(batch)
            self.progress("cables", done, total)
        for batch in _chunks(to_update):
            Cable.objects.bulk_update(batch, ["type", "length_m", "updated_at"])
            counts.updated += len(batch)
            done += len(batch)
            self.progress("cables", done, total)


def _end_fields(side: str, end: tuple[str, int]) -> dict[str, int]:
    kind, pk = end
    return {f"{side}_{kind}_id": pk}


def _describe(end: End) -> str:
    _, owner, name = end
    return f"{owner} {name}"

"""Import from NetBox: devices, interfaces and cables onto nodes, NICs, switches, ports, cables.

NetBox is read first (client.py). Then, in one transaction, `plan_import` translates what was
read (mapping.py) and compares it with the database, collecting every problem (each naming the
NetBox object) instead of stopping at the first; if there is any, nothing is written. Otherwise
the plan is written, one audit entry per row (`via="netbox"`); a database constraint that still
trips (a MAC already on another node) rolls everything back and is reported. A dry run writes
the plan too, to catch such clashes, and rolls back.

What the import owns: hardware facts NetBox holds (serials, models, pods, racks, roles, rails,
MACs, speeds, labels, cable media and lengths). A value NetBox leaves blank never erases ours.
Operational state is set only when a row is created: lifecycle status of nodes and switches,
cable status. Rows NetBox does not have are listed as delete candidates and left alone (devices
only when the whole NetBox was read, not one --site); NetBox cables being decommissioned are
skipped.
Rows are matched by hostname (then serial) for devices, by name within their device for NICs and
ports, and by their two ends for cables, so a second import of the same NetBox changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from inventory.models import (
    NIC,
    Cable,
    CableStatus,
    LifecycleStatus,
    Node,
    Pod,
    Rack,
    Switch,
    SwitchPort,
)
from inventory.netbox import mapping
from inventory.netbox.client import NetboxClient, NetboxSnapshot
from inventory.netbox.mapping import NODE, MappingError
from inventory.topology.importer import IMPORT_LOCK_KEY
from portal.services.audit import record_change, snapshot

VIA = "netbox"
CREATE, UPDATE, DELETE_CANDIDATE = "create", "update", "delete-candidate"
MODEL_LABELS = ("pod", "rack", "node", "switch", "nic", "port", "cable")

# End of a cable, independent of database ids: ("nic", hostname, device) or ("port", ...).
End = tuple[str, str, str]


class NetboxImportError(Exception):
    """The NetBox data cannot be imported; `problems` lists every reason, nothing was written."""

    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s); nothing changed")
        self.problems = problems


@dataclass
class Change:
    action: str
    model: str
    name: str
    source: str = ""
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def line(self) -> str:
        marker = {CREATE: "+", UPDATE: "~", DELETE_CANDIDATE: "-"}[self.action]
        text = f"{marker} {self.action} {self.model} {self.name}"
        if self.source:
            text += f" ({self.source})"
        if self.fields:
            text += ": " + ", ".join(
                f"{name} {before!r} -> {after!r}" for name, (before, after) in self.fields.items()
            )
        return text


@dataclass
class _Row:
    """A row as NetBox wants it: `values` always applied, `on_create` only for new rows."""

    model: str
    key: Any
    values: dict[str, Any]
    source: str
    existing: Any = None
    on_create: dict[str, Any] = field(default_factory=dict)
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)


@dataclass
class ImportPlan:
    pods: list[str] = field(default_factory=list)
    racks: dict[str, str] = field(default_factory=dict)  # name -> pod name ("" for none)
    nodes: list[_Row] = field(default_factory=list)
    switches: list[_Row] = field(default_factory=list)
    nics: list[_Row] = field(default_factory=list)
    ports: list[_Row] = field(default_factory=list)
    cables: list[_Row] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, dict[str, int]]:
        counts = {label: {CREATE: 0, UPDATE: 0, DELETE_CANDIDATE: 0} for label in MODEL_LABELS}
        for change in self.changes:
            counts[change.model][change.action] += 1
        return counts

    @property
    def changed(self) -> bool:
        return any(change.action in (CREATE, UPDATE) for change in self.changes)


@dataclass
class ImportResult:
    plan: ImportPlan
    dry_run: bool
    netbox_version: str = ""


def netbox_import(
    *,
    url: str,
    token: str,
    site: str | None = None,
    role_map: dict[str, str] | None = None,
    dry_run: bool = False,
    actor=None,
) -> ImportResult:
    """Read NetBox at `url` and bring the inventory in line with it (see the module docstring).

    Raises NetboxError when NetBox cannot be read, NetboxImportError listing every problem when
    the data cannot be imported; in both cases nothing is written.
    """
    role_map = role_map or dict(mapping.DEFAULT_ROLE_MAP)
    client = NetboxClient(url, token)
    version = client.check()
    netbox = client.snapshot(role_slugs=role_map.keys(), site=site)
    plan = import_snapshot(
        netbox, role_map=role_map, whole_inventory=site is None, dry_run=dry_run, actor=actor
    )
    return ImportResult(plan=plan, dry_run=dry_run, netbox_version=version)


def import_snapshot(
    netbox: NetboxSnapshot,
    *,
    role_map: dict[str, str],
    whole_inventory: bool = True,
    dry_run: bool = False,
    actor=None,
) -> ImportPlan:
    """Plan and write what was read from NetBox, in one transaction (rolled back for a dry run).

    Planning happens inside the transaction, under the lock every inventory import takes, so
    the rows compared are the rows written. Raises NetboxImportError listing every problem, or
    the database constraint that tripped while writing; then nothing is written.
    """
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [IMPORT_LOCK_KEY])
            plan = plan_import(netbox, role_map=role_map, whole_inventory=whole_inventory)
            if plan.problems:
                raise NetboxImportError(plan.problems)
            _Writer(plan, actor).run()
            if dry_run:
                # Written and rolled back: a clash only the database sees shows in a dry run too.
                transaction.set_rollback(True)
    except IntegrityError as exc:
        raise NetboxImportError([f"database: {exc}".strip()]) from exc
    return plan


def _device_source(device: dict) -> str:
    return f"NetBox device #{device.get('id')} {device.get('name') or '(no name)'!r}"


def _interface_source(interface: dict) -> str:
    device = (interface.get("device") or {}).get("name") or "?"
    return f"NetBox interface #{interface.get('id')} {device} {interface.get('name')!r}"


def _cable_source(cable: dict) -> str:
    label = f" {cable['label']!r}" if cable.get("label") else ""
    return f"NetBox cable #{cable.get('id')}{label}"


def _end_name(end: End) -> str:
    return f"{end[1]} {end[2]}"


def _diff(row: _Row, current: dict[str, Any]) -> None:
    """Fill `row.changed` with the fields whose NetBox value differs; blanks never erase."""
    for name, value in row.values.items():
        if value in (None, "", []) and name not in ("rail", "bond_members"):
            continue
        if current.get(name) != value:
            row.changed[name] = (current.get(name), value)


def plan_import(
    netbox: NetboxSnapshot, *, role_map: dict[str, str], whole_inventory: bool = True
) -> ImportPlan:
    """Translate and compare; every problem is collected into `plan.problems`."""
    return _Planner(netbox, role_map, whole_inventory).plan()


class _Planner:
    def __init__(self, netbox: NetboxSnapshot, role_map: dict[str, str], whole_inventory: bool):
        self.netbox = netbox
        self.role_map = role_map
        self.whole_inventory = whole_inventory
        self.result = ImportPlan()
        self.problems = self.result.problems
        # NetBox interface id -> our end, for the cables.
        self.interface_ends: dict[int, End] = {}
        # LAG member interface id -> the bond's end (NetBox cannot cable a LAG itself).
        self.bond_member_of: dict[int, End] = {}

    def plan(self) -> ImportPlan:
        devices = self._plan_devices()
        self._plan_components(devices)
        self._plan_cables()
        self._plan_pods_and_racks()
        return self.result

    # --- devices ---

    def _plan_devices(self) -> dict[int, _Row]:
        nodes = {node.hostname: node for node in Node.objects.select_related("pod", "rack")}
        nodes_by_serial = {node.serial: node for node in nodes.values() if node.serial}
        switches = {s.hostname: s for s in Switch.objects.select_related("pod", "rack")}
        switches_by_serial = {s.serial: s for s in switches.values() if s.serial}
        rows: dict[int, _Row] = {}
        seen: dict[str, str] = {}
        claimed: dict[str, dict[int, str]] = {}  # our row pk -> the NetBox device matching it
        for device in self.netbox.devices:
            source = _device_source(device)
            kind = mapping.device_kind(device, self.role_map)
            if kind is None:
                continue
            try:
                values = (
                    mapping.node_fields(device)
                    if kind == NODE
                    else mapping.switch_fields(device, kind)
                )
            except MappingError as exc:
                self.problems.append(f"{source}: {exc}")
                continue
            hostname = values.pop("hostname")
            if hostname in seen:
                self.problems.append(
                    f"{source}: hostname {hostname!r} also used by {seen[hostname]}"
                )
                continue
            seen[hostname] = source
            status = values.pop("status")
            model = "node" if kind == NODE else "switch"
            if kind == NODE:
                if hostname in switches:
                    self.problems.append(f"{source}: {hostname!r} is a switch here, not a node")
                    continue
                existing = nodes.get(hostname) or nodes_by_serial.get(values["serial"] or None)
            else:
                if hostname in nodes:
                    self.problems.append(f"{source}: {hostname!r} is a node here, not a switch")
                    continue
                existing = switches.get(hostname) or switches_by_serial.get(
                    values["serial"] or None
                )
            if existing is not None and existing.pk in claimed.get(model, {}):
                self.problems.append(
                    f"{source}: matches our {model} {existing.hostname!r} by serial, which "
                    f"{claimed[model][existing.pk]} matches too"
                )
                continue
            if existing is not None:
                claimed.setdefault(model, {})[existing.pk] = source
            row = _Row(model, hostname, {"hostname": hostname, **values}, source, existing)
            row.on_create = {"status": status}
            rows[device["id"]] = row
            (self.result.nodes if kind == NODE else self.result.switches).append(row)
            if existing is None:
                self._change(CREATE, row, hostname)
            else:
                _diff(row, self._device_current(existing))
                if row.changed:
                    self._change(UPDATE, row, hostname)
        if self.whole_inventory:
            matched = {id(row.existing) for row in rows.values() if row.existing is not None}
            for label, table in (("node", nodes), ("switch", switches)):
                for hostname, obj in sorted(table.items()):
                    if id(obj) not in matched and obj.status != LifecycleStatus.DECOMMISSIONED:
                        self.result.changes.append(
                            Change(DELETE_CANDIDATE, label, hostname, "not in NetBox")
                        )
        return rows

    @staticmethod
    def _device_current(obj: Node | Switch) -> dict[str, Any]:
        current = {
            "hostname": obj.hostname,
            "serial": obj.serial,
            "model": obj.model,
            "pod": obj.pod.name if obj.pod else "",
            "rack": obj.rack.name if obj.rack else "",
        }
        if isinstance(obj, Node):
            current["bmc_address"] = obj.bmc_address
        if isinstance(obj, Switch):
            current.update(
                role=obj.role,
                rail=obj.rail,
                nos=obj.nos,
                nos_version=obj.nos_version,
                management_address=obj.management_address,
            )
        return current

    def _change(self, action: str, row: _Row, name: str) -> None:
        self.result.changes.append(Change(action, row.model, name, row.source, dict(row.changed)))

    # --- interfaces ---

    def _plan_components(self, devices: dict[int, _Row]) -> None:
        by_device: dict[int, list[dict]] = defaultdict(list)
        for interface in self.netbox.interfaces:
            device_id = (interface.get("device") or {}).get("id")
            if device_id in devices:
                by_device[device_id].append(interface)
        node_ids = [r.existing.pk for r in devices.values() if r.model == "node" and r.existing]
        switch_ids = [r.existing.pk for r in devices.values() if r.model == "switch" and r.existing]
        nics = defaultdict(dict)
        for nic in NIC.objects.filter(node_id__in=node_ids):
            nics[nic.node_id][nic.device] = nic
        ports = defaultdict(dict)
        for port in SwitchPort.objects.filter(switch_id__in=switch_ids):
            ports[port.switch_id][port.name] = port
        self.existing_nic_ends: dict[int, End] = {}
        self.existing_port_ends: dict[int, End] = {}
        for device_id, row in devices.items():
            interfaces = sorted(by_device.get(device_id, []), key=lambda i: i.get("name") or "")
            if row.model == "node":
                current = nics[row.existing.pk] if row.existing else {}
                self._plan_nics(row, interfaces, current)
            else:
                current = ports[row.existing.pk] if row.existing else {}
                self._plan_ports(row, interfaces, current)

    def _plan_nics(self, node: _Row, interfaces: list[dict], current: dict[str, NIC]) -> None:
        hostname = node.key
        members: dict[int, list[dict]] = defaultdict(list)
        for interface in interfaces:
            if mapping.is_lag_member(interface):
                members[interface["lag"]["id"]].append(interface)
        rails: dict[int, str] = {}
        wanted: set[str] = set()
        for interface in interfaces:
            if mapping.is_lag_member(interface):
                continue
            source = _interface_source(interface)
            bond_members = [member["name"] for member in members.get(interface["id"], [])]
            try:
                values = mapping.nic_fields(interface, bond_members)
            except MappingError as exc:
                self.problems.append(f"{source}: {exc}")
                continue
            rail = values["rail"]
            if rail is not None:
                if rail in rails:
                    self.problems.append(f"{source}: rail {rail} is also {hostname} {rails[rail]}")
                    continue
                rails[rail] = values["device"]
            end: End = ("nic", hostname, values["device"])
            self.interface_ends[interface["id"]] = end
            for member in members.get(interface["id"], []):
                self.bond_member_of[member["id"]] = end
            wanted.add(values["device"])
            row = _Row("nic", end, values, source, current.get(values["device"]))
            self.result.nics.append(row)
            name = _end_name(end)
            if row.existing is None:
                self._change(CREATE, row, name)
            else:
                _diff(row, {key: getattr(row.existing, key) for key in values})
                if row.changed:
                    self._change(UPDATE, row, name)
        for device, nic in current.items():
            self.existing_nic_ends[nic.pk] = ("nic", hostname, device)
            if device not in wanted and interfaces:
                self.result.changes.append(
                    Change(DELETE_CANDIDATE, "nic", f"{hostname} {device}", "not in NetBox")
                )

    def _plan_ports(self, switch: _Row, interfaces: list[dict], current: dict) -> None:
        hostname = switch.key
        wanted: set[str] = set()
        for interface in interfaces:
            if not mapping.is_switch_port_interface(interface):
                continue
            source = _interface_source(interface)
            try:
                values = mapping.port_fields(interface)
            except MappingError as exc:
                self.problems.append(f"{source}: {exc}")
                continue
            end: End = ("port", hostname, values["name"])
            self.interface_ends[interface["id"]] = end
            wanted.add(values["name"])
            row = _Row("port", end, values, source, current.get(values["name"]))
            row.on_create = {"index": values.pop("index"), "lanes": values.pop("lanes")}
            self.result.ports.append(row)
            if row.existing is None:
                self._change(CREATE, row, _end_name(end))
            else:
                _diff(row, {key: getattr(row.existing, key) for key in values})
                if row.changed:
                    self._change(UPDATE, row, _end_name(end))
        for name, port in current.items():
            self.existing_port_ends[port.pk] = ("port", hostname, name)
            # A broken-out cage (Port1) is our bookkeeping; NetBox has only its halves.
            if name not in wanted and interfaces and not port.breakout_mode:
                self.result.changes.append(
                    Change(DELETE_CANDIDATE, "port", f"{hostname} {name}", "not in NetBox")
                )

    # --- cables ---

    def _existing_cables(self) -> dict[End, Cable]:
        nic_ids, port_ids = list(self.existing_nic_ends), list(self.existing_port_ends)
        cables = Cable.objects.exclude(status=CableStatus.DECOMMISSIONED).filter(
            Q(a_nic_id__in=nic_ids)
            | Q(b_nic_id__in=nic_ids)
            | Q(a_port_id__in=port_ids)
            | Q(b_port_id__in=port_ids)
        )
        by_end: dict[End, Cable] = {}
        for cable in cables.select_related(
            "a_nic__node", "b_nic__node", "a_port__switch", "b_port__switch"
        ):
            for end in self._cable_db_ends(cable):
                by_end[end] = cable
        return by_end

    def _cable_db_ends(self, cable: Cable) -> tuple[End, End]:
        ends = []
        for side in ("a", "b"):
            nic, port = getattr(cable, f"{side}_nic"), getattr(cable, f"{side}_port")
            if nic is not None:
                ends.append(
                    self.existing_nic_ends.get(nic.pk, ("nic", nic.node.hostname, nic.device))
                )
            else:
                ends.append(
                    self.existing_port_ends.get(port.pk, ("port", port.switch.hostname, port.name))
                )
        return ends[0], ends[1]

    def _resolve_end(self, cable: dict, ref: mapping.InterfaceRef, side: str) -> End | None:
        end = self.interface_ends.get(ref.interface_id) or self.bond_member_of.get(ref.interface_id)
        if end is None:
            self.problems.append(
                f"{_cable_source(cable)}: side {side} ends on interface #{ref.interface_id} "
                f"({ref}), which this import does not know: its device's role is not mapped, "
                "it is outside the site, it is management-only, or it could not be mapped"
            )
        return end

    def _plan_cables(self) -> None:
        existing = self._existing_cables()
        matched: set[int] = set()
        taken: dict[End, str] = {}
        for cable in self.netbox.cables:
            source = _cable_source(cable)
            if mapping.choice_value(cable.get("status")) == "decommissioning":
                continue
            try:
                ref_a, ref_b = mapping.cable_ends(cable)
            except MappingError as exc:
                self.problems.append(f"{source}: {exc}")
                continue
            end_a, end_b = (
                self._resolve_end(cable, ref_a, "A"),
                self._resolve_end(cable, ref_b, "B"),
            )
            if end_a is None or end_b is None:
                continue
            name = f"{_end_name(end_a)} <> {_end_name(end_b)}"
            if end_a[0] == "nic" and end_b[0] == "nic":
                self.problems.append(f"{source} ({name}): joins two NICs; one end must be a port")
                continue
            clash = [end for end in (end_a, end_b) if end in taken]
            if clash:
                self.problems.append(
                    f"{source} ({name}): {_end_name(clash[0])} is also cabled by {taken[clash[0]]}"
                    " (a bond holds one cable here)"
                )
                continue
            taken[end_a] = taken[end_b] = source
            try:
                values = mapping.cable_fields(cable, to_nic="nic" in (end_a[0], end_b[0]))
            except MappingError as exc:
                self.problems.append(f"{source} ({name}): {exc}")
                continue
            status = values.pop("status")
            found_a, found_b = existing.get(end_a), existing.get(end_b)
            if found_a is not None and found_a is found_b:
                row = _Row("cable", (end_a, end_b), values, source, found_a)
                matched.add(found_a.pk)
                _diff(row, {key: getattr(found_a, key) for key in values})
                if row.changed:
                    self._change(UPDATE, row, name)
            else:
                other = found_a or found_b
                if other is not None:
                    end = end_a if found_a is not None else end_b
                    self.problems.append(
                        f"{source} ({name}): {_end_name(end)} is already in our cable "
                        f"#{other.pk} ({other.status}) to somewhere else; decommission it first"
                    )
                    continue
                row = _Row("cable", (end_a, end_b), values, source)
                self._change(CREATE, row, name)
            row.on_create = {"status": status}
            self.result.cables.append(row)
        for cable in {c.pk: c for c in existing.values()}.values():
            if cable.pk not in matched:
                end_a, end_b = self._cable_db_ends(cable)
                self.result.changes.append(
                    Change(
                        DELETE_CANDIDATE,
                        "cable",
                        f"{_end_name(end_a)} <> {_end_name(end_b)}",
                        f"our cable #{cable.pk}, not in NetBox",
                    )
                )

    # --- pods and racks the devices refer to ---

    def _plan_pods_and_racks(self) -> None:
        rows = self.result.nodes + self.result.switches
        pods = {row.values["pod"] for row in rows if row.values.get("pod")}
        racks = {
            row.values["rack"]: row.values.get("pod", "") for row in rows if row.values["rack"]
        }
        known_pods = set(Pod.objects.filter(name__in=pods).values_list("name", flat=True))
        known_racks = set(Rack.objects.filter(name__in=racks).values_list("name", flat=True))
        for name in sorted(pods - known_pods):
            self.result.pods.append(name)
            self.result.changes.insert(0, Change(CREATE, "pod", name, "a NetBox location or pod"))
        for name in sorted(set(racks) - known_racks):
            self.result.racks[name] = racks[name]
            self.result.changes.insert(0, Change(CREATE, "rack", name, "a NetBox rack"))


class _Writer:
    def __init__(self, plan: ImportPlan, actor):
        self.plan = plan
        self.actor = actor
        self.pods: dict[str, Pod] = {}
        self.racks: dict[str, Rack] = {}

    def run(self) -> None:
        plan = self.plan
        for name in plan.pods:
            self._create(Pod(name=name))
        names = {row.values.get("pod") for row in plan.nodes + plan.switches} | set(
            plan.racks.values()
        )
        self.pods = {pod.name: pod for pod in Pod.objects.filter(name__in=names - {"", None})}
        for name, pod in plan.racks.items():
            self._create(Rack(name=name, pod=self.pods.get(pod)))
        racks = {row.values.get("rack") for row in plan.nodes + plan.switches}
        self.racks = {rack.name: rack for rack in Rack.objects.filter(name__in=racks - {""})}
        owners: dict[str, Node | Switch] = {}
        for row in plan.nodes + plan.switches:
            owners[row.key] = self._device(row)
        nic_by_end: dict[End, NIC] = {}
        for row in plan.nics:
            nic_by_end[row.key] = self._component(row, NIC(node=owners[row.key[1]], **row.values))
        port_by_end: dict[End, SwitchPort] = {}
        for row in plan.ports:
            port_by_end[row.key] = self._component(
                row, SwitchPort(switch=owners[row.key[1]], **row.values, **row.on_create)
            )
        for row in plan.cables:
            if row.existing is not None:
                self._update(row.existing, row)
                continue
            ends = {}
            for side, end in zip("ab", row.key, strict=True):
                ends[f"{side}_nic"] = nic_by_end[end] if end[0] == "nic" else None
                ends[f"{side}_port"] = port_by_end[end] if end[0] == "port" else None
            self._create(Cable(**ends, **row.values, **row.on_create))

    def _create(self, instance) -> None:
        instance.save()
        record_change(
            actor=self.actor,
            operation="create",
            instance=instance,
            after=snapshot(instance),
            note="NetBox import",
            via=VIA,
        )

    def _update(self, instance, row: _Row) -> None:
        if not row.changed:
            return
        before = snapshot(instance)
        for name, (_, value) in row.changed.items():
            setattr(instance, name, value)
        instance.save()
        record_change(
            actor=self.actor,
            operation="update",
            instance=instance,
            before=before,
            after=snapshot(instance),
            note=f"NetBox import: {row.source}",
            via=VIA,
        )

    def _device(self, row: _Row) -> Node | Switch:
        values = dict(row.values)
        values["pod"] = self.pods.get(values.get("pod", ""))
        values["rack"] = self.racks.get(values.get("rack", ""))
        if row.existing is None:
            model = Node if row.model == "node" else Switch
            instance = model(**values, **row.on_create)
            self._create(instance)
            return instance
        resolved = {name: values[name] for name in row.changed}
        row.changed = {name: (row.changed[name][0], resolved[name]) for name in row.changed}
        self._update(row.existing, row)
        return row.existing

    def _component(self, row: _Row, new_instance):
        if row.existing is None:
            if new_instance.speed_gbps is None:  # NetBox gave no speed (a LAG): the default
                new_instance.speed_gbps = type(new_instance)._meta.get_field("speed_gbps").default
            self._create(new_instance)
            return new_instance
        self._update(row.existing, row)
        return row.existing

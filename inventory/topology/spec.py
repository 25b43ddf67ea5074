"""Reading a topology spec (see SPEC.md): structure, types and references, every error located.

`read_spec(spec)` returns a `Spec` of small dataclasses and a list of `SpecError`s; it never stops
at the first error. `inventory.topology.expand` turns a valid `Spec` into a plan of rows.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml

from inventory.hostlist import expand_hostlist
from inventory.models import GPUS_PER_NODE, NIC, RAILS, Cable, CableStatus, LifecycleStatus, Switch
from inventory.topology.reading import Reader, SpecErrors
from portal.errors import InvalidInput

SPEC_VERSION = 1
MAX_PORTS_PER_SWITCH = 512  # before --scale multiplies them
PCI_BUS_ID = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
MAC_OUI = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){2}$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(slots=True)
class Identifiers:
    node_serial: str | None = None
    gpu_serial: str | None = None
    gpu_uuids: bool = False
    mac_oui: str | None = None


@dataclass(slots=True)
class NicTemplate:
    device: str
    netdev: str
    role: str
    rail: int | None
    speed_gbps: int
    affinity_gpu: int | None
    affinity_kind: str
    bond_members: list[str]


@dataclass(slots=True)
class NodeTemplate:
    model: str
    cpu_model: str
    cpu_count: int
    memory_gb: int
    disks: list[dict]
    gpu_model: str
    pci_bus_ids: list[str]
    nics: list[NicTemplate]


@dataclass(slots=True)
class SwitchTemplate:
    model: str
    asic: str
    nos: str
    nos_version: str
    port_count: int
    port_speed_gbps: int
    lanes: int
    breakout_fanout: int | None  # None: this model's ports cannot be broken out
    breakout_speed_gbps: int | None


@dataclass(slots=True)
class NodeBmc:
    """A range's BMCs: addresses counted up from `address_start`, one per node in order."""

    address_start: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    system_id: str  # format: {hostname}, {number}, {ordinal}
    credentials_ref: str


@dataclass(slots=True)
class NodeRange:
    location: str
    hostnames: list[str]
    template: str
    status: str
    bmc: NodeBmc | None = None


@dataclass(slots=True)
class PodSpec:
    location: str
    name: str
    description: str
    rack_name: str | None
    nodes_per_rack: int
    ranges: list[NodeRange]


@dataclass(slots=True)
class SwitchGroup:
    location: str
    name: str
    role: str
    template: str
    count: int
    per_pod: bool
    hostname: str
    rails: bool
    scale_ports: bool
    management_address: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    credentials_ref: str
    status: str


@dataclass(slots=True)
class CableSpec:
    type: str
    length_m: Decimal | None
    status: str


@dataclass(slots=True)
class PortRange:
    first: int
    last: int | None  # None: up to the switch's last cage


@dataclass(slots=True)
class NodeLinkRule:
    location: str
    nic_role: str | None
    nic_device: str | None
    switch: str
    ports: PortRange
    breakout: bool
    cable: CableSpec


@dataclass(slots=True)
class SwitchLinkRule:
    location: str
    lower_group: str
    lower_ports: PortRange
    upper_group: str
    upper_ports: PortRange
    links_per_pair: int
    cable: CableSpec


@dataclass
class Spec:
    name: str = ""
    identifiers: Identifiers = field(default_factory=Identifiers)
    node_templates: dict[str, NodeTemplate] = field(default_factory=dict)
    switch_templates: dict[str, SwitchTemplate] = field(default_factory=dict)
    pods: list[PodSpec] = field(default_factory=list)
    switch_groups: list[SwitchGroup] = field(default_factory=list)
    # Every group name the spec declares, readable or not, so wiring rules naming a broken
    # group do not repeat its error.
    switch_group_names: set[str] = field(default_factory=set)
    node_links: list[NodeLinkRule] = field(default_factory=list)
    switch_links: list[SwitchLinkRule] = field(default_factory=list)


def _cable(errors: SpecErrors, value: Any, location: str) -> CableSpec | None:
    reader = Reader(errors, value, location, required=["type"], optional=["length_m", "status"])
    if not reader.ok:
        return None
    cable_type = reader.choice("type", Cable.Type.values)
    length = reader.data.get("length_m")
    if length is not None:
        try:
            length = Decimal(str(length)).quantize(Decimal("0.01"))
            if length <= 0 or isinstance(reader.data["length_m"], bool):
                raise InvalidOperation
        except InvalidOperation:
            reader.fail("length_m", f"{reader.data['length_m']!r} is not a positive length")
    status = reader.choice("status", CableStatus.values, CableStatus.CONNECTED)
    return CableSpec(cable_type, length, status) if reader.ok else None


def _port_range(reader: Reader, key: str, optional=()) -> tuple[PortRange | None, dict]:
    ports = Reader(
        reader.errors, reader.data.get(key), reader.at(key), ["first"], ["last", *optional]
    )
    if not ports.ok:
        reader.ok = False
        return None, {}
    first = ports.integer("first", minimum=0)
    last = ports.integer("last", None, minimum=0)
    if first is not None and last is not None and last < first:
        ports.fail("last", f"{last} is before first ({first})")
    if not ports.ok:
        reader.ok = False
        return None, ports.data
    return PortRange(first, last), ports.data


def _read_identifiers(errors: SpecErrors, value: Any) -> Identifiers:
    if value is None:
        return Identifiers()
    reader = Reader(
        errors, value, "identifiers", optional=["node_serial", "gpu_serial", "gpu_uuids", "mac_oui"]
    )
    identifiers = Identifiers(gpu_uuids=reader.boolean("gpu_uuids"))
    if "node_serial" in reader.data:
        identifiers.node_serial = reader.format_string(
            "node_serial", {"hostname", "ordinal", "number", "pod"}
        )
    if "gpu_serial" in reader.data:
        identifiers.gpu_serial = reader.format_string(
            "gpu_serial", {"hostname", "ordinal", "number", "index"}
        )
    if "mac_oui" in reader.data:
        identifiers.mac_oui = reader.string("mac_oui").lower()
        if not MAC_OUI.match(identifiers.mac_oui):
            reader.fail("mac_oui", "must be three bytes like 94:6d:ae")
    return identifiers


def _read_nic(errors: SpecErrors, value: Any, location: str, gpu_count: int):
    reader = Reader(
        errors,
        value,
        location,
        required=["device", "role"],
        optional=["netdev", "rail", "speed_gbps", "affinity", "bond_members"],
    )
    if not reader.ok:
        return None
    role = reader.choice("role", NIC.Role.values)
    rail = reader.integer("rail", None, minimum=0, maximum=RAILS - 1)
    if role == NIC.Role.RAIL and "rail" not in reader.data:
        reader.fail("rail", "is required for a rail NIC")
    if role is not None and role != NIC.Role.RAIL and "rail" in reader.data:
        reader.fail("rail", f"only rail NICs have a rail (this one is {role})")
    affinity_gpu, affinity_kind = None, ""
    if "affinity" in reader.data:
        affinity = Reader(errors, reader.data["affinity"], reader.at("affinity"), ["gpu", "kind"])
        if affinity.ok:
            affinity_gpu = affinity.integer("gpu", minimum=0, maximum=max(gpu_count - 1, 0))
            if gpu_count == 0:
                affinity.fail("gpu", "the template has no GPUs")
            affinity_kind = affinity.choice("kind", NIC.Affinity.values) or ""
        reader.ok = reader.ok and affinity.ok
    members = reader.sequence("bond_members")
    if not all(isinstance(member, str) for member in members):
        reader.fail("bond_members", "must be a list of device names")
    nic = NicTemplate(
        device=reader.string("device", pattern=NAME),
        netdev=reader.string("netdev"),
        role=role,
        rail=rail,
        speed_gbps=reader.integer("speed_gbps", 400, minimum=1),
        affinity_gpu=affinity_gpu,
        affinity_kind=affinity_kind,
        bond_members=list(members),
    )
    return nic if reader.ok else None


def _read_node_template(errors: SpecErrors, value: Any, location: str) -> NodeTemplate | None:
    reader = Reader(
        errors,
        value,
        location,
        required=["model", "nics"],
        optional=["cpu_model", "cpu_count", "memory_gb", "disks", "gpus"],
    )
    if not reader.ok:
        return None
    disks = []
    for position, disk in enumerate(reader.sequence("disks")):
        disk_reader = Reader(
            errors,
            disk,
            f"{reader.at('disks')}[{position}]",
            ["role", "count", "size_gb"],
            ["interface", "raid"],
        )
        if disk_reader.ok:
            entry = {
                "role": disk_reader.string("role"),
                "count": disk_reader.integer("count", minimum=1),
                "size_gb": disk_reader.integer("size_gb", minimum=1),
                "interface": disk_reader.string("interface"),
            }
            if "raid" in disk_reader.data:
                entry["raid"] = disk_reader.string("raid")
            disks.append(entry)
        reader.ok = reader.ok and disk_reader.ok
    gpu_model, bus_ids = "", []
    if "gpus" in reader.data:
        gpus = Reader(errors, reader.data["gpus"], reader.at("gpus"), ["pci_bus_ids"], ["model"])
        if gpus.ok:
            gpu_model = gpus.string("model")
            bus_ids = gpus.sequence("pci_bus_ids")
            if len(bus_ids) > GPUS_PER_NODE:
                gpus.fail("pci_bus_ids", f"{len(bus_ids)} GPUs; a node holds at most 8")
            for position, bus_id in enumerate(bus_ids):
                if not isinstance(bus_id, str) or not PCI_BUS_ID.match(bus_id):
                    errors.add(
                        f"{gpus.at('pci_bus_ids')}[{position}]",
                        f"{bus_id!r} is not a PCI bus id like 0000:18:00.0",
                    )
                    gpus.ok = False
            if len(set(map(str, bus_ids))) != len(bus_ids):
                gpus.fail("pci_bus_ids", "lists a bus id twice")
        reader.ok = reader.ok and gpus.ok
    nics: list[NicTemplate] = []
    devices: dict[str, str] = {}
    rails: dict[int, str] = {}
    for position, nic_value in enumerate(reader.sequence("nics")):
        nic_location = f"{reader.at('nics')}[{position}]"
        nic = _read_nic(errors, nic_value, nic_location, len(bus_ids))
        if nic is None:
            reader.ok = False
            continue
        if nic.device in devices:
            errors.add(f"{nic_location}.device", f"{nic.device} is already {devices[nic.device]}")
            reader.ok = False
        devices[nic.device] = nic_location
        if nic.rail is not None:
            if nic.rail in rails:
                errors.add(f"{nic_location}.rail", f"rail {nic.rail} is already {rails[nic.rail]}")
                reader.ok = False
            rails[nic.rail] = nic_location
        nics.append(nic)
    template = NodeTemplate(
        model=reader.string("model"),
        cpu_model=reader.string("cpu_model"),
        cpu_count=reader.integer("cpu_count", 0, minimum=0, maximum=64),
        memory_gb=reader.integer("memory_gb", 0, minimum=0),
        disks=disks,
        gpu_model=gpu_model,
        pci_bus_ids=[str(bus_id).lower() for bus_id in bus_ids],
        nics=nics,
    )
    return template if reader.ok else None


def _read_switch_template(errors: SpecErrors, value: Any, location: str) -> SwitchTemplate | None:
    reader = Reader(
        errors,
        value,
        location,
        required=["model", "port_count", "port_speed_gbps"],
        optional=["asic", "nos", "nos_version", "lanes", "breakout"],
    )
    if not reader.ok:
        return None
    lanes = reader.integer("lanes", 8, minimum=1, maximum=16)
    fanout = breakout_speed = None
    if "breakout" in reader.data:
        breakout = Reader(
            errors, reader.data["breakout"], reader.at("breakout"), ["fanout", "speed_gbps"]
        )
        if breakout.ok:
            fanout = breakout.integer("fanout", minimum=2, maximum=8)
            breakout_speed = breakout.integer("speed_gbps", minimum=1)
            if fanout and lanes and lanes % fanout:
                breakout.fail("fanout", f"{lanes} lanes do not split into {fanout} equal halves")
        reader.ok = reader.ok and breakout.ok
    template = SwitchTemplate(
        model=reader.string("model"),
        asic=reader.string("asic"),
        nos=reader.string("nos"),
        nos_version=reader.string("nos_version"),
        port_count=reader.integer("port_count", minimum=1, maximum=MAX_PORTS_PER_SWITCH),
        port_speed_gbps=reader.integer("port_speed_gbps", minimum=1),
        lanes=lanes,
        breakout_fanout=fanout,
        breakout_speed_gbps=breakout_speed,
    )
    return template if reader.ok else None


def _read_pods(errors: SpecErrors, values: list, spec: Spec) -> None:
    names: dict[str, str] = {}
    hosts: dict[str, str] = {}
    for position, value in enumerate(values):
        location = f"pods[{position}]"
        reader = Reader(errors, value, location, ["name", "nodes"], ["description", "racks"])
        if not reader.ok:
            continue
        name = reader.string("name", pattern=NAME)
        if name in names:
            reader.fail("name", f"pod {name} is already {names[name]}")
        names[name] = location
        rack_name, per_rack = None, 1
        if "racks" in reader.data:
            racks = Reader(
                errors, reader.data["racks"], reader.at("racks"), ["name", "nodes_per_rack"]
            )
            if racks.ok:
                rack_name = racks.format_string("name", {"pod", "n"})
                per_rack = racks.integer("nodes_per_rack", minimum=1)
            reader.ok = reader.ok and racks.ok
        ranges = []
        for range_position, range_value in enumerate(reader.sequence("nodes")):
            range_location = f"{reader.at('nodes')}[{range_position}]"
            node_range = _read_node_range(errors, range_value, range_location, spec, hosts)
            if node_range is None:
                reader.ok = False
            else:
                ranges.append(node_range)
        if reader.ok:
            spec.pods.append(
                PodSpec(location, name, reader.string("description"), rack_name, per_rack, ranges)
            )


def _read_node_range(errors, value, location, spec: Spec, hosts: dict[str, str]):
    reader = Reader(errors, value, location, ["range", "template"], ["status", "bmc"])
    if not reader.ok:
        return None
    bmc = None
    if "bmc" in reader.data:
        bmc = _read_node_bmc(errors, reader.data["bmc"], reader.at("bmc"))
    template = reader.string("template")
    if template not in spec.node_templates:
        known = ", ".join(sorted(spec.node_templates)) or "none"
        reader.fail("template", f"unknown node template {template!r} (known: {known})")
    status = reader.choice("status", LifecycleStatus.values, LifecycleStatus.ACTIVE)
    hostnames: list[str] = []
    try:
        hostnames = expand_hostlist(reader.string("range"), field="range")
    except InvalidInput as exc:
        reader.fail("range", "; ".join(exc.detail["range"]))
    duplicates = [hostname for hostname in hostnames if hostname in hosts]
    if duplicates:
        reader.fail(
            "range",
            f"{len(duplicates)} host name(s) already in {hosts[duplicates[0]]}, "
            f"e.g. {duplicates[0]}",
        )
    for hostname in hostnames:
        hosts.setdefault(hostname, location)
    if not reader.ok or ("bmc" in reader.data and bmc is None):
        return None
    return NodeRange(location, hostnames, template, status, bmc)


def _read_node_bmc(errors: SpecErrors, value: Any, location: str) -> NodeBmc | None:
    reader = Reader(errors, value, location, [], ["address_start", "system_id", "credentials_ref"])
    if not reader.ok:
        return None
    address = None
    if "address_start" in reader.data:
        try:
            address = ipaddress.ip_address(reader.string("address_start"))
        except ValueError:
            reader.fail("address_start", "is not an IP address")
    system_id = reader.format_string("system_id", {"hostname", "number", "ordinal"}, default="")
    credentials_ref = reader.string("credentials_ref", pattern=re.compile(r"^[\w./:-]*$"))
    return NodeBmc(address, system_id, credentials_ref) if reader.ok else None


def _read_switch_groups(errors: SpecErrors, values: list, spec: Spec) -> None:
    names: dict[str, str] = {}
    for position, value in enumerate(values):
        location = f"switch_groups[{position}]"
        reader = Reader(
            errors,
            value,
            location,
            ["name", "role", "template", "count", "hostname"],
            ["per_pod", "rails", "scale_ports", "management_address", "credentials_ref", "status"],
        )
        if not reader.ok:
            continue
        name = reader.string("name", pattern=NAME)
        if name in names:
            reader.fail("name", f"group {name} is already {names[name]}")
        names[name] = location
        spec.switch_group_names.add(name)
        role = reader.choice("role", Switch.Role.values)
        template = reader.string("template")
        if template not in spec.switch_templates:
            known = ", ".join(sorted(spec.switch_templates)) or "none"
            reader.fail("template", f"unknown switch template {template!r} (known: {known})")
        per_pod = reader.boolean("per_pod")
        placeholders = {"index", "n", "pod"} if per_pod else {"index", "n"}
        hostname = reader.format_string("hostname", placeholders)
        count = reader.integer("count", minimum=1, maximum=1024)
        rails = reader.boolean("rails")
        if role == Switch.Role.LEAF and not per_pod:
            reader.fail("per_pod", "leafs belong to a pod: set per_pod: true")
        elif rails and (role != Switch.Role.LEAF or not per_pod):
            reader.fail("rails", "only per-pod leaf groups serve rails")
        if rails and count is not None and count > RAILS:
            reader.fail("count", f"a rail leaf group has at most {RAILS} leafs (one per rail)")
        address = None
        if "management_address" in reader.data:
            try:
                address = ipaddress.ip_address(reader.string("management_address"))
            except ValueError:
                reader.fail("management_address", "is not an IP address")
        credentials_ref = reader.string("credentials_ref", pattern=re.compile(r"^[\w./:-]*$"))
        if reader.ok:
            spec.switch_groups.append(
                SwitchGroup(
                    location=location,
                    name=name,
                    role=role,
                    template=template,
                    count=count,
                    per_pod=per_pod,
                    hostname=hostname,
                    rails=rails,
                    scale_ports=reader.boolean("scale_ports"),
                    management_address=address,
                    credentials_ref=credentials_ref,
                    status=reader.choice("status", LifecycleStatus.values, LifecycleStatus.ACTIVE),
                )
            )


def _read_wiring(errors: SpecErrors, value: Any, spec: Spec) -> None:
    if value is None:
        return
    wiring = Reader(errors, value, "wiring", optional=["node_links", "switch_links"])
    groups = spec.switch_group_names
    for position, rule_value in enumerate(wiring.sequence("node_links")):
        location = f"wiring.node_links[{position}]"
        reader = Reader(
            errors, rule_value, location, ["nics", "switch", "ports", "cable"], ["name"]
        )
        if not reader.ok:
            continue
        reader.string("name")
        selector = Reader(
            errors, reader.data["nics"], reader.at("nics"), optional=["role", "device"]
        )
        nic_role = nic_device = None
        if selector.ok:
            if not selector.data:
                selector.fail("role", "select NICs by role, device or both")
            if "role" in selector.data:
                nic_role = selector.choice("role", NIC.Role.values)
            if "device" in selector.data:
                nic_device = selector.string("device")
        switch = reader.format_string("switch", {"pod", "rail", "hostname", "device", "role"})
        ports, port_data = _port_range(reader, "ports", optional=["breakout"])
        breakout = port_data.get("breakout", False)
        if not isinstance(breakout, bool):
            errors.add(f"{location}.ports.breakout", "must be true or false")
            reader.ok = False
        cable = _cable(errors, reader.data["cable"], reader.at("cable"))
        if reader.ok and selector.ok and cable is not None:
            spec.node_links.append(
                NodeLinkRule(location, nic_role, nic_device, switch, ports, breakout, cable)
            )
    for position, rule_value in enumerate(wiring.sequence("switch_links")):
        location = f"wiring.switch_links[{position}]"
        reader = Reader(
            errors,
            rule_value,
            location,
            ["lower", "upper", "links_per_pair", "cable"],
            ["name"],
        )
        if not reader.ok:
            continue
        reader.string("name")
        sides = {}
        for side in ("lower", "upper"):
            side_reader = Reader(errors, reader.data[side], reader.at(side), ["group", "ports"])
            if not side_reader.ok:
                reader.ok = False
                continue
            group = side_reader.string("group")
            if group not in groups:
                side_reader.fail("group", f"unknown switch group {group!r}")
            port_range, _ = _port_range(side_reader, "ports")
            reader.ok = reader.ok and side_reader.ok
            sides[side] = (group, port_range)
        links = reader.integer("links_per_pair", minimum=1, maximum=64)
        cable = _cable(errors, reader.data["cable"], reader.at("cable"))
        if reader.ok and cable is not None:
            spec.switch_links.append(
                SwitchLinkRule(location, *sides["lower"], *sides["upper"], links, cable)
            )


# A topology spec of a 12,500-node fleet is a few hundred values once its templates are written
# out; aliases may repeat a template, but a document that expands past this is an alias bomb (a
# few hundred bytes of nested aliases expand to billions of values where the spec is
# re-serialised), refused before anything is built from it.
MAX_EXPANDED_VALUES = 200_000
# Deeper than any spec's structure; a deeper document is refused before it is built.
MAX_DEPTH = 64


def _yaml_error(location: str, problem: str) -> InvalidInput:
    return InvalidInput(
        [f"{location}: {problem}"], errors=[{"location": location, "message": problem}]
    )


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand past MAX_EXPANDED_VALUES, nest past MAX_DEPTH or
    name an enclosing collection (a cycle, which no JSON can hold).

    An alias is the very node object it names, so each node's expanded size is computed once
    (memoised by identity): the walk costs the document's size, not its expansion's.
    """
    expanded: dict[int, int] = {}
    open_nodes: set[int] = set()
    # (node, depth, children done?) - iterative, so a deep document cannot exhaust the stack.
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            size = 1 + sum(expanded[id(child)] for child in _children(node))
            if size > MAX_EXPANDED_VALUES:
                raise _too_large(node)
            expanded[key] = size
            continue
        if key in expanded:
            continue
        if key in open_nodes:
            raise _yaml_error(_where(node), "an alias names a collection that contains it")
        if depth > MAX_DEPTH:
            raise _yaml_error(_where(node), f"nested deeper than {MAX_DEPTH} levels")
        open_nodes.add(key)
        stack.append((node, depth, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise _yaml_error(_where(child), "an alias names a collection that contains it")
            if id(child) not in expanded:
                stack.append((child, depth + 1, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _where(node: yaml.Node) -> str:
    return f"yaml line {node.start_mark.line + 1}" if node.start_mark else "yaml"


def _too_large(node: yaml.Node) -> InvalidInput:
    return _yaml_error(
        _where(node),
        f"expands to more than {MAX_EXPANDED_VALUES:,} values (aliases repeat what they name); "
        "write the spec out or use its templates",
    )


def spec_from_yaml(source) -> Any:
    """Parse YAML text or a stream with the safe loader; a syntax error raises InvalidInput
    naming the line, and so does an alias bomb, before it is expanded (`_check_expansion`)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(source)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_expansion(root)
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        location = f"yaml line {mark.line + 1}" if mark else "yaml"
        problem = getattr(exc, "problem", None) or str(exc)
        raise _yaml_error(location, problem) from exc
    finally:
        loader.dispose()


def read_spec(value: Any) -> tuple[Spec, SpecErrors]:
    """Read and check a whole spec; returns what could be read and every error found."""
    errors = SpecErrors()
    spec = Spec()
    top = Reader(
        errors,
        value,
        "",
        required=["version", "name", "node_templates", "pods"],
        optional=[
            "description",
            "identifiers",
            "switch_templates",
            "switch_groups",
            "wiring",
        ],
    )
    if not isinstance(value, dict):
        return spec, errors
    if "version" in top.data and top.data["version"] != SPEC_VERSION:
        top.fail("version", f"this importer reads version {SPEC_VERSION}")
    spec.name = top.string("name", pattern=NAME)
    spec.identifiers = _read_identifiers(errors, top.data.get("identifiers"))
    for section, reader_function, target in (
        ("node_templates", _read_node_template, spec.node_templates),
        ("switch_templates", _read_switch_template, spec.switch_templates),
    ):
        templates = top.data.get(section, {})
        if not isinstance(templates, dict):
            top.fail(section, "must be a mapping of template name to template")
            continue
        for name, template_value in templates.items():
            template = reader_function(errors, template_value, f"{section}.{name}")
            # A broken template is still known, so ranges naming it report nothing extra.
            target[name] = template
    _read_pods(errors, top.sequence("pods"), spec)
    _read_switch_groups(errors, top.sequence("switch_groups"), spec)
    _read_wiring(errors, top.data.get("wiring"), spec)
    return spec, errors

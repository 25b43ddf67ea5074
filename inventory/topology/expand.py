"""Expanding a checked spec into a plan: pods x scale, nodes, GPUs, NICs, switches, ports, cables.

Port allocation, capacity and collisions are checked here, with the wiring rule's location.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from inventory.topology.plan import (
    CablePlan,
    GpuPlan,
    NicPlan,
    NodePlan,
    Plan,
    PodPlan,
    PortPlan,
    RackPlan,
    SwitchPlan,
)
from inventory.topology.reading import SpecErrors
from inventory.topology.spec import (
    NodeLinkRule,
    NodeTemplate,
    Spec,
    SwitchLinkRule,
    SwitchTemplate,
)

MAX_SCALE = 50
# GPU UUIDs are synthesised as uuid5(namespace, "hostname/index") when the spec asks for them.
GPU_UUID_NAMESPACE = uuid.UUID("5b1f4c2e-8d0a-4e7b-9a63-2f1d7c9e0b41")
TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def offset_trailing_number(name: str, offset: int) -> str | None:
    """`gpu001` + 100 -> `gpu101` (width kept, growing if needed); None without a number."""
    if offset == 0:
        return name
    match = TRAILING_NUMBER.match(name)
    if not match:
        return None
    prefix, digits = match.groups()
    return f"{prefix}{int(digits) + offset:0{len(digits)}d}"


def _trailing_number(name: str) -> int:
    match = TRAILING_NUMBER.match(name)
    return int(match.group(2)) if match else 0


@dataclass
class _SwitchPorts:
    """Cages of one switch as the wiring uses them."""

    plan: SwitchPlan
    template: SwitchTemplate
    used_by: dict[int, str] = field(default_factory=dict)  # cage -> rule location
    broken_out: set[int] = field(default_factory=set)

    def cage_name(self, cage: int) -> str:
        return f"Ethernet{cage * self.template.lanes}"

    def half_name(self, cage: int, half: int) -> str:
        step = self.template.lanes // self.template.breakout_fanout
        return f"Ethernet{cage * self.template.lanes + half * step}"


class _Expander:
    def __init__(self, spec: Spec, scale: int, errors: SpecErrors):
        self.spec = spec
        self.scale = scale
        self.errors = errors
        self.plan = Plan(name=spec.name, scale=scale)
        self.bmc_addresses: dict[str, str] = {}
        self.node_templates: dict[str, NodeTemplate] = {}  # hostname -> template
        self.cabled_nics: dict[tuple[str, str], str] = {}  # (hostname, device) -> rule
        self.switches: dict[str, _SwitchPorts] = {}

    def run(self) -> Plan:
        self.expand_nodes()
        self.expand_switches()
        if self.errors:
            return self.plan  # wiring half-built fleets would only repeat the same problems
        for rule in self.spec.node_links:
            self.wire_nodes(rule)
        for rule in self.spec.switch_links:
            self.wire_switches(rule)
        self.expand_ports()
        return self.plan

    # -- nodes -----------------------------------------------------------------------------

    def expand_nodes(self) -> None:
        spec, plan = self.spec, self.plan
        highest = max(
            (_trailing_number(h) for pod in spec.pods for r in pod.ranges for h in r.hostnames),
            default=0,
        )
        if self.scale > 1:
            for pod in spec.pods:
                if not TRAILING_NUMBER.match(pod.name):
                    self.errors.add(f"{pod.location}.name", "must end in a number to --scale")
                for node_range in pod.ranges:
                    if any(not TRAILING_NUMBER.match(h) for h in node_range.hostnames):
                        self.errors.add(
                            f"{node_range.location}.range",
                            "host names must end in a number to --scale",
                        )
            if self.errors:
                return
        racks: dict[str, str] = {}
        ordinal = 0
        for copy in range(self.scale):
            for pod in spec.pods:
                pod_name = offset_trailing_number(pod.name, copy * len(spec.pods))
                plan.pods.append(PodPlan(pod_name, pod.description))
                position = 0
                for node_range in pod.ranges:
                    template = spec.node_templates[node_range.template]
                    for in_range, base_hostname in enumerate(node_range.hostnames):
                        hostname = offset_trailing_number(base_hostname, copy * highest)
                        ordinal += 1
                        rack = None
                        if pod.rack_name is not None:
                            rack = pod.rack_name.format(
                                pod=pod_name, n=position // pod.nodes_per_rack + 1
                            )
                            if racks.setdefault(rack, pod_name) != pod_name:
                                self.errors.add(
                                    f"{pod.location}.racks.name",
                                    f"rack {rack} would be in pods {racks[rack]} and {pod_name}; "
                                    "put {pod} in the rack name",
                                )
                                return
                        position += 1
                        self.add_node(
                            hostname, pod_name, rack, ordinal, node_range.status, template
                        )
                        if node_range.bmc is not None and not self.add_bmc(
                            node_range, copy * len(node_range.hostnames) + in_range, ordinal
                        ):
                            return
        plan.racks = [RackPlan(name, pod) for name, pod in racks.items()]

    def add_bmc(self, node_range, offset: int, ordinal: int) -> bool:
        """Fill the BMC of the node just added; False (an error recorded) when its address runs
        past the address space or repeats another node's."""
        node, bmc = self.plan.nodes[-1], node_range.bmc
        node.bmc_credentials_ref = bmc.credentials_ref
        node.bmc_system_id = bmc.system_id.format(
            hostname=node.hostname, number=_trailing_number(node.hostname), ordinal=ordinal
        )
        if bmc.address_start is None:
            return True
        location = f"{node_range.location}.bmc.address_start"
        try:
            address = str(bmc.address_start + offset)
        except ValueError:
            self.errors.add(location, "runs past the address space")
            return False
        owner = self.bmc_addresses.setdefault(address, node.hostname)
        if owner != node.hostname:
            self.errors.add(location, f"{address} of {node.hostname} is already {owner}'s BMC")
            return False
        node.bmc_address = address
        return True

    def add_node(self, hostname, pod, rack, ordinal, status, template: NodeTemplate) -> None:
        identifiers = self.spec.identifiers
        number = _trailing_number(hostname)
        serial = ""
        if identifiers.node_serial:
            serial = identifiers.node_serial.format(
                hostname=hostname, ordinal=ordinal, number=number, pod=pod
            )
        self.plan.nodes.append(
            NodePlan(
                hostname=hostname,
                pod=pod,
                rack=rack,
                status=status,
                serial=serial,
                model=template.model,
                cpu_model=template.cpu_model,
                cpu_count=template.cpu_count,
                memory_gb=template.memory_gb,
                disks=[dict(disk) for disk in template.disks],
            )
        )
        self.node_templates[hostname] = template
        for index, bus_id in enumerate(template.pci_bus_ids):
            gpu_uuid = ""
            if identifiers.gpu_uuids:
                gpu_uuid = f"GPU-{uuid.uuid5(GPU_UUID_NAMESPACE, f'{hostname}/{index}')}"
            gpu_serial = ""
            if identifiers.gpu_serial:
                gpu_serial = identifiers.gpu_serial.format(
                    hostname=hostname, ordinal=ordinal, number=number, index=index
                )
            self.plan.gpus.append(
                GpuPlan(hostname, index, gpu_uuid, gpu_serial, template.gpu_model, bus_id)
            )
        for position, nic in enumerate(template.nics):
            mac = ""
            if identifiers.mac_oui:
                # Unique per spec: 16 addresses per node, numbered by the node's ordinal.
                value = ordinal * 16 + position
                mac = f"{identifiers.mac_oui}:{value >> 16 & 255:02x}:{value >> 8 & 255:02x}:" + (
                    f"{value & 255:02x}"
                )
            self.plan.nics.append(
                NicPlan(
                    hostname=hostname,
                    device=nic.device,
                    netdev=nic.netdev,
                    mac=mac,
                    role=nic.role,
                    rail=nic.rail,
                    affinity_gpu_index=nic.affinity_gpu,
                    affinity_kind=nic.affinity_kind,
                    speed_gbps=nic.speed_gbps,
                    bond_members=list(nic.bond_members),
                )
            )

    # -- switches --------------------------------------------------------------------------

    def expand_switches(self) -> None:
        pods = [pod.name for pod in self.plan.pods]
        addresses: dict[str, str] = {}
        for group in self.spec.switch_groups:
            template = self.spec.switch_templates[group.template]
            port_count = template.port_count * (self.scale if group.scale_ports else 1)
            members = (
                [(pod, index) for pod in pods for index in range(group.count)]
                if group.per_pod
                else [(None, index) for index in range(group.count)]
            )
            for position, (pod, index) in enumerate(members):
                values = {"index": index, "n": index + 1}
                if group.per_pod:
                    values["pod"] = pod
                hostname = group.hostname.format(**values)
                address = None
                if group.management_address is not None:
                    try:
                        address = str(group.management_address + position)
                    except ValueError:
                        self.errors.add(
                            f"{group.location}.management_address", "runs past the address space"
                        )
                        return
                    if address in addresses:
                        self.errors.add(
                            f"{group.location}.management_address",
                            f"{address} of {hostname} is already {addresses[address]}'s",
                        )
                        return
                    addresses[address] = hostname
                if hostname in self.switches:
                    self.errors.add(
                        f"{group.location}.hostname", f"switch {hostname} is defined twice"
                    )
                    return
                switch = SwitchPlan(
                    hostname=hostname,
                    role=group.role,
                    pod=pod,
                    rail=index if group.rails else None,
                    status=group.status,
                    model=template.model,
                    asic=template.asic,
                    nos=template.nos,
                    nos_version=template.nos_version,
                    management_address=address,
                    credentials_ref=group.credentials_ref,
                    port_count=port_count,
                    template=group.template,
                    group=group.name,
                )
                self.plan.switches.append(switch)
                self.switches[hostname] = _SwitchPorts(switch, template)

    # -- wiring ----------------------------------------------------------------------------

    def claim(self, switch: _SwitchPorts, cage: int, rule: str, conflicts: dict) -> None:
        owner = switch.used_by.setdefault(cage, rule)
        if owner != rule:
            conflicts.setdefault((owner, rule), (switch.plan.hostname, cage))

    def report_conflicts(self, conflicts: dict) -> None:
        for (owner, rule), (hostname, cage) in conflicts.items():
            self.errors.add(
                rule, f"cage {cage} of {hostname} (and maybe others) is already used by {owner}"
            )

    def report_per_switch(self, location: str, problems: list[str]) -> None:
        """One error for a problem that repeats on many switches: the first, and a count."""
        if problems:
            more = f" (and {len(problems) - 1} other switches)" if len(problems) > 1 else ""
            self.errors.add(location, problems[0] + more)

    def wire_nodes(self, rule: NodeLinkRule) -> None:
        uses_rail = "{rail" in rule.switch
        allocated: dict[str, int] = defaultdict(int)
        overflow: dict[str, int] = defaultdict(int)
        missing: dict[str, str] = {}
        speed_mismatch: dict[tuple, str] = {}
        conflicts: dict = {}
        for node in self.plan.nodes:
            template = self.node_templates[node.hostname]
            for nic in template.nics:
                if rule.nic_role is not None and nic.role != rule.nic_role:
                    continue
                if rule.nic_device is not None and nic.device != rule.nic_device:
                    continue
                if uses_rail and nic.rail is None:
                    self.errors.add(
                        f"{rule.location}.switch",
                        f"uses {{rail}} but selects {nic.device}, no rail",
                    )
                    return
                target = rule.switch.format(
                    pod=node.pod,
                    rail=nic.rail,
                    hostname=node.hostname,
                    device=nic.device,
                    role=nic.role,
                )
                owner = self.cabled_nics.setdefault((node.hostname, nic.device), rule.location)
                if owner != rule.location:
                    self.errors.add(
                        f"{rule.location}.nics",
                        f"{node.hostname} {nic.device} (and maybe others) is already cabled by "
                        f"{owner}",
                    )
                    return
                switch = self.switches.get(target)
                if switch is None:
                    missing.setdefault(target, f"{node.hostname} {nic.device}")
                    continue
                if rule.breakout and not switch.template.breakout_fanout:
                    self.errors.add(
                        f"{rule.location}.ports.breakout",
                        f"{target}'s template cannot break ports out",
                    )
                    return
                fanout = switch.template.breakout_fanout if rule.breakout else 1
                last = switch.plan.port_count - 1
                if rule.ports.last is not None:
                    last = min(last, rule.ports.last)
                if rule.breakout and rule.ports.last is not None and not allocated[target]:
                    # The port plan breaks out the whole range, used or not.
                    for cage in range(rule.ports.first, last + 1):
                        self.claim(switch, cage, rule.location, conflicts)
                        switch.broken_out.add(cage)
                slot = allocated[target]
                allocated[target] += 1
                cage, half = rule.ports.first + slot // fanout, slot % fanout
                if cage > last:
                    overflow[target] += 1
                    continue
                self.claim(switch, cage, rule.location, conflicts)
                if rule.breakout:
                    switch.broken_out.add(cage)
                    port_name = switch.half_name(cage, half)
                    port_speed = switch.template.breakout_speed_gbps
                else:
                    port_name = switch.cage_name(cage)
                    port_speed = switch.template.port_speed_gbps
                if port_speed != nic.speed_gbps:
                    speed_mismatch.setdefault(
                        (nic.device, port_speed), f"{nic.speed_gbps}G {nic.device}"
                    )
                self.plan.cables.append(
                    CablePlan(
                        a=("nic", node.hostname, nic.device),
                        b=("port", target, port_name),
                        type=rule.cable.type,
                        length_m=rule.cable.length_m,
                        status=rule.cable.status,
                        rule=rule.location,
                    )
                )
        self.report_per_switch(
            f"{rule.location}.switch",
            [f"no switch {target} (wanted by {example})" for target, example in missing.items()],
        )
        self.report_per_switch(
            f"{rule.location}.ports",
            [
                f"{target} needs {allocated[target]} ports, {extra} more than the range holds"
                for target, extra in overflow.items()
            ],
        )
        if speed_mismatch:
            nics = ", ".join(speed_mismatch.values())
            speeds = " and ".join(sorted({f"{speed}G" for _, speed in speed_mismatch}))
            self.errors.add(rule.location, f"{nics} NICs would land on {speeds} ports")
        self.report_conflicts(conflicts)

    def wire_switches(self, rule: SwitchLinkRule) -> None:
        lowers = [s for s in self.switches.values() if s.plan.group == rule.lower_group]
        uppers = [s for s in self.switches.values() if s.plan.group == rule.upper_group]
        upper_used: dict[str, int] = defaultdict(int)
        overflow: dict[str, int] = {}
        conflicts: dict = {}
        per_pair = rule.links_per_pair

        def last_cage(switch: _SwitchPorts, ports) -> int:
            last = switch.plan.port_count - 1
            return last if ports.last is None else min(last, ports.last)

        for lower in lowers:
            for upper_position, upper in enumerate(uppers):
                if lower.template.port_speed_gbps != upper.template.port_speed_gbps:
                    self.errors.add(
                        rule.location,
                        f"{lower.plan.hostname} ({lower.template.port_speed_gbps}G) and "
                        f"{upper.plan.hostname} ({upper.template.port_speed_gbps}G) "
                        "differ in speed",
                    )
                    return
                for link in range(per_pair):
                    lower_cage = rule.lower_ports.first + upper_position * per_pair + link
                    upper_cage = rule.upper_ports.first + upper_used[upper.plan.hostname]
                    upper_used[upper.plan.hostname] += 1
                    if lower_cage > last_cage(lower, rule.lower_ports):
                        overflow.setdefault(
                            lower.plan.hostname, f"{len(uppers) * per_pair} uplinks"
                        )
                        continue
                    if upper_cage > last_cage(upper, rule.upper_ports):
                        overflow.setdefault(
                            upper.plan.hostname, f"{len(lowers) * per_pair} downlinks"
                        )
                        continue
                    self.claim(lower, lower_cage, rule.location, conflicts)
                    self.claim(upper, upper_cage, rule.location, conflicts)
                    self.plan.cables.append(
                        CablePlan(
                            a=("port", lower.plan.hostname, lower.cage_name(lower_cage)),
                            b=("port", upper.plan.hostname, upper.cage_name(upper_cage)),
                            type=rule.cable.type,
                            length_m=rule.cable.length_m,
                            status=rule.cable.status,
                            rule=rule.location,
                        )
                    )
        self.report_per_switch(
            rule.location,
            [
                f"{hostname} needs {needed}, more than its port range holds"
                for hostname, needed in overflow.items()
            ],
        )
        self.report_conflicts(conflicts)

    # -- ports -----------------------------------------------------------------------------

    def expand_ports(self) -> None:
        ports = self.plan.ports
        for switch in self.switches.values():
            template = switch.template
            hostname = switch.plan.hostname
            for cage in range(switch.plan.port_count):
                number = cage + 1
                if cage not in switch.broken_out:
                    ports.append(
                        PortPlan(
                            hostname,
                            switch.cage_name(cage),
                            f"Eth{number}(Port{number})",
                            cage * template.lanes,
                            template.port_speed_gbps,
                            template.lanes,
                        )
                    )
                    continue
                fanout = template.breakout_fanout
                cage_name = f"Port{number}"
                ports.append(
                    PortPlan(
                        hostname,
                        cage_name,
                        f"Eth{number}(Port{number})",
                        cage * template.lanes,
                        template.port_speed_gbps,
                        template.lanes,
                        breakout_mode=f"{fanout}x{template.breakout_speed_gbps}G",
                    )
                )
                for half in range(fanout):
                    name = switch.half_name(cage, half)
                    ports.append(
                        PortPlan(
                            hostname,
                            name,
                            f"Eth{number}/{half + 1}(Port{number})",
                            int(name.removeprefix("Ethernet")),
                            template.breakout_speed_gbps,
                            template.lanes // fanout,
                            parent=cage_name,
                        )
                    )


def expand_spec(spec: Spec, *, scale: int, errors: SpecErrors) -> Plan:
    """The plan for a spec already read without errors; new errors are added to `errors`."""
    if not isinstance(scale, int) or isinstance(scale, bool) or not 1 <= scale <= MAX_SCALE:
        errors.add("scale", f"must be an integer from 1 to {MAX_SCALE}")
        return Plan(name=spec.name, scale=1)
    return _Expander(spec, scale, errors).run()

"""Pure translations between NetBox 4.x REST objects (plain dicts) and our inventory's fields.

Nothing here touches the database or the network: the import and export services call these
with the JSON NetBox returned (or the rows they read) and decide what to write. Anything that
cannot be translated raises `MappingError` with a message; the caller adds which NetBox object
it came from.

Conventions (overridable through NetBox custom fields, which win when set):
- a device's role slug says what it is (`DEFAULT_ROLE_MAP`, configurable per run);
- node interfaces follow SAKURAONE's Table 2 (`mlx5_0-2,4-7,11` rails 0-7, `mlx5_3` reserved,
  `mlx5_8` storage, `mlx5_bond_0` the storage bond whose LAG members are `mlx5_9`/`mlx5_10`,
  a management-only interface the 1 GbE port); custom fields `nic_role`, `rail`, `netdev`;
- switch data-plane interfaces are SONiC's `EthernetN`; management-only ones are not ports;
- a leaf's pod comes from the custom field `pod`, else the device's location; its rail from the
  custom field `rail`, else a `-rN` hostname suffix (`leaf-p1-r3`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from inventory.models import NIC, Cable, CableStatus, LifecycleStatus, Switch

NODE = "node"
SWITCH_KINDS = {
    "leaf": Switch.Role.LEAF,
    "spine": Switch.Role.SPINE,
    "storage": Switch.Role.STORAGE,
    "management": Switch.Role.MANAGEMENT,
}
# NetBox device role slug -> what it becomes here: "node" or a switch role.
DEFAULT_ROLE_MAP: dict[str, str] = {
    "gpu-node": NODE,
    "leaf": Switch.Role.LEAF,
    "spine": Switch.Role.SPINE,
    "storage-switch": Switch.Role.STORAGE,
    "management-switch": Switch.Role.MANAGEMENT,
}

# Table 2 of the paper: the rails are not mlx5_0-7 (mlx5_3 is the reserved secondary path).
RAIL_BY_DEVICE = {
    "mlx5_0": 0,
    "mlx5_1": 1,
    "mlx5_2": 2,
    "mlx5_4": 3,
    "mlx5_5": 4,
    "mlx5_6": 5,
    "mlx5_7": 6,
    "mlx5_11": 7,
}
ROLE_BY_DEVICE = {"mlx5_3": NIC.Role.RESERVED, "mlx5_8": NIC.Role.STORAGE}
STORAGE_BOND_NAME = re.compile(r"^mlx5_bond_\d+$")
SWITCH_PORT_NAME = re.compile(r"^Ethernet(\d+)$")
LEAF_RAIL_SUFFIX = re.compile(r"-r(\d+)$")

# NetBox DeviceStatusChoices -> our lifecycle, and back.
DEVICE_STATUS_IN = {
    "active": LifecycleStatus.ACTIVE,
    "planned": LifecycleStatus.PLANNED,
    "staged": LifecycleStatus.PLANNED,
    "inventory": LifecycleStatus.PLANNED,
    "offline": LifecycleStatus.MAINTENANCE,
    "failed": LifecycleStatus.MAINTENANCE,
    "decommissioning": LifecycleStatus.DECOMMISSIONED,
}
DEVICE_STATUS_OUT = {
    LifecycleStatus.ACTIVE: "active",
    LifecycleStatus.PLANNED: "planned",
    LifecycleStatus.MAINTENANCE: "offline",
    LifecycleStatus.DECOMMISSIONED: "decommissioning",
}
# NetBox LinkStatusChoices (cables) -> ours, and back (NetBox has no "faulty").
CABLE_STATUS_IN = {
    "connected": CableStatus.CONNECTED,
    "planned": CableStatus.PLANNED,
    "decommissioning": CableStatus.DECOMMISSIONED,
}
CABLE_STATUS_OUT = {
    CableStatus.CONNECTED: "connected",
    CableStatus.PLANNED: "planned",
    CableStatus.FAULTY: "connected",
    CableStatus.DECOMMISSIONED: "decommissioning",
}
# NetBox's cable types say the medium, ours the optic; the custom field `cable_type` carries
# ours exactly. Without it the medium decides; single-mode to a NIC is the 2x400G breakout.
CABLE_TYPE_OUT = {
    Cable.Type.SR8_800G: "mmf-om4",
    Cable.Type.DR8_800G: "smf-os2",
    Cable.Type.BREAKOUT_2DR4_800G: "smf-os2",
    Cable.Type.DR4_400G: "smf-os2",
    Cable.Type.DAC_400G: "dac-passive",
    Cable.Type.BASE_T_1G: "cat6",
}
MULTI_MODE = {"mmf", "mmf-om1", "mmf-om2", "mmf-om3", "mmf-om4", "mmf-om5"}
SINGLE_MODE = {"smf", "smf-os1", "smf-os2"}
COPPER_DAC = {"dac-active", "dac-passive"}
TWISTED_PAIR = {"cat3", "cat5", "cat5e", "cat6", "cat6a", "cat7", "cat7a", "cat8"}
# NetBox length units -> metres.
LENGTH_UNIT_METRES = {
    "km": Decimal(1000),
    "m": Decimal(1),
    "cm": Decimal("0.01"),
    "mi": Decimal("1609.344"),
    "ft": Decimal("0.3048"),
    "in": Decimal("0.0254"),
}
INTERFACE_TYPE_BY_SPEED = {
    1: "1000base-t",
    10: "10gbase-x-sfpp",
    25: "25gbase-x-sfp28",
    100: "100gbase-x-qsfp28",
    200: "200gbase-x-qsfp56",
    400: "400gbase-x-qsfpdd",
    800: "800gbase-x-osfp",
}
INTERFACE_SPEED_IN_TYPE = re.compile(r"^(\d+)(g?)base")


class MappingError(ValueError):
    """A NetBox object we cannot translate; the message says why."""


@dataclass(frozen=True)
class InterfaceRef:
    """One end of a cable as NetBox names it: the interface id, its device and its name."""

    interface_id: int
    device_name: str
    name: str

    def __str__(self) -> str:
        return f"{self.device_name} {self.name}"


def natural_key(name: str) -> tuple[str, int]:
    """`mlx5_9` before `mlx5_10`."""
    match = re.match(r"^(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2))) if match else (name, -1)


def parse_role_map(entries: list[str]) -> dict[str, str]:
    """`["gpu-server=node", "tor=leaf"]` -> {"gpu-server": "node", "tor": "leaf"}."""
    role_map: dict[str, str] = {}
    allowed = {NODE, *SWITCH_KINDS}
    for entry in entries:
        slug, separator, kind = entry.partition("=")
        if not separator or not slug.strip() or kind.strip() not in allowed:
            raise MappingError(
                f"role mapping {entry!r} is not SLUG=KIND with KIND one of "
                f"{', '.join(sorted(allowed))}"
            )
        role_map[slug.strip()] = kind.strip()
    return role_map


def choice_value(value: Any) -> str:
    """NetBox choice fields are {"value": ..., "label": ...}; older shapes a bare value."""
    if isinstance(value, dict):
        value = value.get("value")
    return "" if value is None else str(value)


def _custom_field(obj: dict, name: str) -> Any:
    return (obj.get("custom_fields") or {}).get(name)


def nested_name(obj: dict, key: str) -> str:
    nested = obj.get(key)
    return str(nested.get("name") or "") if isinstance(nested, dict) else ""


def device_kind(device: dict, role_map: dict[str, str]) -> str | None:
    """`"node"`, a switch role, or None for a device whose role is not mapped."""
    role = device.get("role") or device.get("device_role") or {}
    return role_map.get(role.get("slug", "")) if isinstance(role, dict) else None


def device_hostname(device: dict) -> str:
    name = (device.get("name") or "").strip()
    if not name:
        raise MappingError("the device has no name; nodes and switches are matched by hostname")
    return name


def device_model(device: dict) -> str:
    """Our model string: manufacturer and model, as the topology spec writes it."""
    device_type = device.get("device_type") or {}
    model = str(device_type.get("model") or "").strip()
    manufacturer = nested_name(device_type, "manufacturer").strip()
    if manufacturer and model and not model.startswith(manufacturer):
        return f"{manufacturer} {model}"
    return model


def device_status(device: dict) -> str:
    status = choice_value(device.get("status")) or "active"
    if status not in DEVICE_STATUS_IN:
        raise MappingError(f"device status {status!r} is not one we know")
    return DEVICE_STATUS_IN[status]


def device_pod(device: dict) -> str:
    return str(_custom_field(device, "pod") or nested_name(device, "location")).strip()


def node_fields(device: dict) -> dict[str, Any]:
    """Fields of our Node from a NetBox device (pod and rack as names, resolved by the caller)."""
    return {
        "hostname": device_hostname(device),
        "serial": str(device.get("serial") or "").strip(),
        "model": device_model(device),
        "pod": device_pod(device),
        "rack": nested_name(device, "rack"),
        "status": device_status(device),
        # NetBox's out-of-band address of a server is its BMC's.
        "bmc_address": oob_address(device),
    }


def oob_address(device: dict) -> str | None:
    """The device's `oob_ip` without its prefix length (NetBox 3.6+), or None."""
    address = device.get("oob_ip")
    if isinstance(address, dict) and address.get("address"):
        return str(address["address"]).split("/")[0]
    return None


def switch_fields(device: dict, role: str) -> dict[str, Any]:
    """Fields of our Switch from a NetBox device whose role maps to switch role `role`."""
    hostname = device_hostname(device)
    rail: int | None = None
    pod = device_pod(device)
    if role == Switch.Role.LEAF:
        rail = _leaf_rail(device, hostname)
        if not pod:
            raise MappingError(
                "a leaf needs a pod: set the custom field 'pod' or the device's location"
            )
    platform = device.get("platform") or {}
    return {
        "hostname": hostname,
        "role": role,
        "pod": pod,
        "rail": rail,
        "rack": nested_name(device, "rack"),
        "serial": str(device.get("serial") or "").strip(),
        "model": device_model(device),
        "nos": str(platform.get("name") or "").strip() if isinstance(platform, dict) else "",
        "nos_version": str(_custom_field(device, "nos_version") or "").strip(),
        "management_address": management_address(device),
        "status": device_status(device),
    }


def _leaf_rail(device: dict, hostname: str) -> int:
    value = _custom_field(device, "rail")
    if value is None:
        match = LEAF_RAIL_SUFFIX.search(hostname)
        if not match:
            raise MappingError(
                "a leaf needs a rail: set the custom field 'rail' or name it '...-rN'"
            )
        value = match.group(1)
    return _rail_number(value)


def _rail_number(value: Any) -> int:
    try:
        rail = int(value)
    except (TypeError, ValueError):
        raise MappingError(f"rail {value!r} is not a number") from None
    if not 0 <= rail <= 7:
        raise MappingError(f"rail {rail} is out of range 0-7")
    return rail


def management_address(device: dict) -> str | None:
    """The out-of-band or primary IPv4 address, without its prefix length."""
    for key in ("oob_ip", "primary_ip4", "primary_ip"):
        address = device.get(key)
        if isinstance(address, dict) and address.get("address"):
            return str(address["address"]).split("/")[0]
    return None


def interface_speed_gbps(interface: dict) -> int | None:
    """From `speed` (NetBox stores Kbps), else from the type (`400gbase-x-qsfpdd` -> 400)."""
    speed_kbps = interface.get("speed")
    if speed_kbps:
        return max(1, int(speed_kbps) // 1_000_000)
    match = INTERFACE_SPEED_IN_TYPE.match(choice_value(interface.get("type")))
    if not match:
        return None
    number = int(match.group(1))
    return number if match.group(2) else max(1, number // 1000)


def interface_mac(interface: dict) -> str:
    """NetBox 4.2+ has MAC objects (`primary_mac_address`); older ones a `mac_address` string."""
    primary = interface.get("primary_mac_address")
    value = primary.get("mac_address") if isinstance(primary, dict) else None
    value = value or interface.get("mac_address") or ""
    return str(value).lower()


def is_lag_member(interface: dict) -> bool:
    return isinstance(interface.get("lag"), dict)


def nic_fields(interface: dict, bond_members: list[str]) -> dict[str, Any]:
    """Fields of our NIC from a node's NetBox interface. LAG members are not NICs of their own:
    the caller passes their names as the bond's `bond_members`."""
    name = str(interface.get("name") or "")
    role_value = _custom_field(interface, "nic_role")
    rail_value = _custom_field(interface, "rail")
    if role_value:
        if role_value not in NIC.Role.values:
            raise MappingError(
                f"custom field nic_role {role_value!r} is not one of {', '.join(NIC.Role.values)}"
            )
        role = role_value
        rail = _rail_number(rail_value) if role == NIC.Role.RAIL else None
        if role == NIC.Role.RAIL and rail_value is None:
            if name not in RAIL_BY_DEVICE:
                raise MappingError("a rail NIC needs the custom field 'rail'")
            rail = RAIL_BY_DEVICE[name]
    elif name in RAIL_BY_DEVICE:
        role = NIC.Role.RAIL
        rail = _rail_number(rail_value) if rail_value is not None else RAIL_BY_DEVICE[name]
    elif name in ROLE_BY_DEVICE:
        role, rail = ROLE_BY_DEVICE[name], None
    elif STORAGE_BOND_NAME.match(name) or choice_value(interface.get("type")) == "lag":
        role, rail = NIC.Role.STORAGE_BOND, None
    elif interface.get("mgmt_only"):
        role, rail = NIC.Role.MANAGEMENT, None
    else:
        raise MappingError(
            f"interface name {name!r} is not a NIC we know (mlx5_0-11, mlx5_bond_N, a "
            "management-only port) and it has no custom field 'nic_role'"
        )
    return {
        "device": name,
        "netdev": str(_custom_field(interface, "netdev") or "").strip(),
        "mac": interface_mac(interface),
        "role": role,
        "rail": rail,
        "speed_gbps": interface_speed_gbps(interface),
        "bond_members": (
            sorted(bond_members, key=natural_key) if role == NIC.Role.STORAGE_BOND else []
        ),
    }


def is_switch_port_interface(interface: dict) -> bool:
    """Management-only interfaces of a switch (eth0) are not fabric ports; they are skipped."""
    return not interface.get("mgmt_only")


def port_fields(interface: dict) -> dict[str, Any]:
    """Fields of our SwitchPort from a switch's NetBox interface named `EthernetN`."""
    name = str(interface.get("name") or "")
    match = SWITCH_PORT_NAME.match(name)
    if not match:
        raise MappingError(f"interface name {name!r} is not a SONiC port name (EthernetN)")
    speed = interface_speed_gbps(interface)
    return {
        "name": name,
        "index": int(match.group(1)),
        "alias": str(interface.get("label") or "").strip(),
        "description": str(interface.get("description") or "").strip(),
        "speed_gbps": speed,
        # Tomahawk 5 SerDes run 100G per lane: an 800G port has 8 lanes, a 400G half 4.
        "lanes": min(16, max(1, (speed or 800) // 100)),
    }


def cable_ends(cable: dict) -> tuple[InterfaceRef, InterfaceRef]:
    """The interface at each end; a cable end here is exactly one interface."""
    ends = []
    for side in ("a", "b"):
        terminations = cable.get(f"{side}_terminations") or []
        if len(terminations) != 1:
            raise MappingError(
                f"side {side.upper()} has {len(terminations)} terminations; "
                "a cable here joins exactly one interface to one interface"
            )
        termination = terminations[0]
        if termination.get("object_type") != "dcim.interface":
            raise MappingError(
                f"side {side.upper()} ends on a {termination.get('object_type')}, not an interface"
            )
        obj = termination.get("object") or {}
        ends.append(
            InterfaceRef(
                interface_id=int(termination.get("object_id") or obj.get("id")),
                device_name=nested_name(obj, "device"),
                name=str(obj.get("name") or ""),
            )
        )
    return ends[0], ends[1]


def cable_length_m(cable: dict) -> Decimal | None:
    length = cable.get("length")
    if length in (None, ""):
        return None
    unit = choice_value(cable.get("length_unit")) or "m"
    if unit not in LENGTH_UNIT_METRES:
        raise MappingError(f"length unit {unit!r} is not one we know")
    return (Decimal(str(length)) * LENGTH_UNIT_METRES[unit]).quantize(Decimal("0.01"))


def cable_type(cable: dict, *, to_nic: bool) -> str:
    """Our cable type: the custom field `cable_type` when set, else from NetBox's medium."""
    exact = _custom_field(cable, "cable_type")
    if exact:
        if exact not in Cable.Type.values:
            raise MappingError(f"custom field cable_type {exact!r} is not a type we know")
        return exact
    medium = choice_value(cable.get("type"))
    if medium in MULTI_MODE:
        return Cable.Type.SR8_800G
    if medium in SINGLE_MODE:
        return Cable.Type.BREAKOUT_2DR4_800G if to_nic else Cable.Type.DR8_800G
    if medium in COPPER_DAC:
        return Cable.Type.DAC_400G
    if medium in TWISTED_PAIR:
        return Cable.Type.BASE_T_1G
    if medium == "":
        return Cable.Type.BREAKOUT_2DR4_800G if to_nic else Cable.Type.SR8_800G
    raise MappingError(f"cable type {medium!r} is not a data cable we can hold")


def cable_fields(cable: dict, *, to_nic: bool) -> dict[str, Any]:
    status = choice_value(cable.get("status")) or "connected"
    if status not in CABLE_STATUS_IN:
        raise MappingError(f"cable status {status!r} is not one we know")
    return {
        "type": cable_type(cable, to_nic=to_nic),
        "length_m": cable_length_m(cable),
        "label": str(cable.get("label") or "").strip(),
        "status": CABLE_STATUS_IN[status],
    }


# --- export: our rows -> NetBox request bodies (ids of NetBox objects given by the caller) ---


def interface_type_for_speed(speed_gbps: int, *, lag: bool = False) -> str:
    if lag:
        return "lag"
    return INTERFACE_TYPE_BY_SPEED.get(speed_gbps, "other")


def nic_interface_body(nic_row: dict[str, Any]) -> dict[str, Any]:
    """Interface fields for one of our NICs (`device`, `role`, `speed_gbps`)."""
    is_bond = nic_row["role"] == NIC.Role.STORAGE_BOND
    return {
        "name": nic_row["device"],
        "type": interface_type_for_speed(nic_row["speed_gbps"], lag=is_bond),
        "speed": None if is_bond else nic_row["speed_gbps"] * 1_000_000,
        "mgmt_only": nic_row["role"] == NIC.Role.MANAGEMENT,
    }


def port_interface_body(port_row: dict[str, Any]) -> dict[str, Any]:
    """Interface fields for one of our switch ports (`name`, `speed_gbps`, alias, description)."""
    return {
        "name": port_row["name"],
        "type": interface_type_for_speed(port_row["speed_gbps"]),
        "speed": port_row["speed_gbps"] * 1_000_000,
        "label": port_row["alias"],
        "description": port_row["description"],
    }


def cable_body(cable: Cable) -> dict[str, Any]:
    """Cable fields NetBox holds: medium, status, label and length in metres."""
    return {
        "type": CABLE_TYPE_OUT[cable.type],
        "status": CABLE_STATUS_OUT[cable.status],
        "label": cable.label,
        "length": float(cable.length_m) if cable.length_m is not None else None,
        "length_unit": "m" if cable.length_m is not None else None,
    }


def interface_values(interface: dict) -> dict[str, Any]:
    """A NetBox interface's current values in the shape the bodies above use."""
    return {
        "name": interface.get("name"),
        "type": choice_value(interface.get("type")),
        "speed": interface.get("speed"),
        "mgmt_only": bool(interface.get("mgmt_only")),
        "label": interface.get("label") or "",
        "description": interface.get("description") or "",
    }


def cable_values(cable: dict) -> dict[str, Any]:
    length = cable.get("length")
    return {
        "type": choice_value(cable.get("type")),
        "status": choice_value(cable.get("status")),
        "label": cable.get("label") or "",
        "length": float(length) if length not in (None, "") else None,
        "length_unit": choice_value(cable.get("length_unit")) or None,
    }


def gpu_inventory_item_body(gpu_row: dict[str, Any]) -> dict[str, Any]:
    """A GPU as the NetBox inventory item of its node's device: the slot as its name (`GPU3`,
    as nvidia-smi numbers them), the serial in the slot now, the model as part id and the UUID
    as description (an inventory item has no UUID field)."""
    return {
        "name": f"GPU{gpu_row['index']}",
        "serial": gpu_row.get("serial") or "",
        "part_id": gpu_row.get("model") or "",
        "description": gpu_row.get("uuid") or "",
    }


def inventory_item_values(item: dict) -> dict[str, Any]:
    return {key: item.get(key) or "" for key in ("serial", "part_id", "description")}

"""Export to NetBox: our nodes, switches, NICs, ports and active cables as devices, interfaces
and cables, looked up before anything is created so a second export writes nothing.

The whole export is planned from reads first. NetBox has no transaction spanning requests, so
every problem we can foresee (no site to put a new device in, a role or device type missing in
NetBox, an interface already cabled elsewhere) stops the export before its first write. What
the export owns in NetBox: device name, serial, status, role and type, location (our pod) and
rack where NetBox has them; interface type, speed, management-only flag, label and description,
LAG membership of a bond's members; cable terminations, medium, status, label and length; and
each node's GPUs as inventory items of its device named `GPU<index>` (serial, model as part id,
UUID as description), so a swapped GPU's new serial reaches NetBox as a swapped node's does (its
device serial). MAC addresses (separate objects since NetBox 4.2), management IP addresses,
platforms, custom fields and the serials of NICs and transceivers are not written, and nothing
in NetBox is ever deleted (a GPU item stays under its name; its serial is the slot's now).

A bond (`mlx5_bond_0`) becomes a LAG interface with its members (`mlx5_9`, `mlx5_10`) as
physical interfaces; NetBox cannot cable a LAG, so the bond's cable lands on its first member.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from inventory.models import GPU, NIC, Cable, CableStatus, Node, Switch, SwitchPort
from inventory.netbox import mapping
from inventory.netbox.client import NetboxClient, NetboxError
from inventory.netbox.importer import CREATE, UPDATE, Change
from inventory.netbox.mapping import NODE

DEVICES, INTERFACES, CABLES = "dcim.devices", "dcim.interfaces", "dcim.cables"
INVENTORY_ITEMS = "dcim.inventory_items"


class NetboxExportError(Exception):
    """The export cannot go ahead; `problems` lists every reason. Nothing was sent."""

    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s); nothing sent to NetBox")
        self.problems = problems


@dataclass
class _Write:
    """One request to send: a create (object_id None) or a PATCH of the differing fields."""

    endpoint: str
    body: dict[str, Any]
    change: Change
    object_id: int | None = None
    # References resolved when the write is sent, for objects created earlier in the run:
    # body field -> ("device", hostname) or ("interface", (hostname, name)).
    refs: dict[str, tuple[str, Any]] = field(default_factory=dict)
    # Key under which the created object's id is remembered.
    creates: tuple[str, Any] | None = None


@dataclass
class ExportResult:
    writes: list[_Write]
    dry_run: bool
    netbox_version: str = ""

    @property
    def changes(self) -> list[Change]:
        return [write.change for write in self.writes]


def netbox_export(
    *,
    url: str,
    token: str,
    site: str | None = None,
    role_map: dict[str, str] | None = None,
    dry_run: bool = False,
) -> ExportResult:
    """Create or update in NetBox what differs from our inventory (see the module docstring).

    Raises NetboxError when NetBox cannot be read or refuses a write, NetboxExportError listing
    every problem found while planning (then nothing was sent).
    """
    role_map = role_map or dict(mapping.DEFAULT_ROLE_MAP)
    client = NetboxClient(url, token)
    version = client.check()
    writes = _Planner(client, site, role_map).plan()
    if not dry_run:
        _send(client, writes)
    return ExportResult(writes=writes, dry_run=dry_run, netbox_version=version)


def _send(client: NetboxClient, writes: list[_Write]) -> None:
    """Send the writes in order (devices, interfaces, cables). NetBox has no transaction across
    requests: when it rejects one, the ones before it stay, and the error says how far it got;
    a re-run plans again from what is there and sends only the rest."""
    created: dict[tuple[str, Any], int] = {}
    for done, write in enumerate(writes):
        try:
            _send_one(client, write, created)
        except NetboxError as exc:
            raise NetboxError(
                f"{exc} (while sending {write.change.line()!r}; {done} of {len(writes)} writes "
                "were sent before it, re-run the export to send the rest)"
            ) from exc


def _send_one(client: NetboxClient, write: _Write, created: dict[tuple[str, Any], int]) -> None:
    body = dict(write.body)
    for name, ref in write.refs.items():
        if name.endswith("_terminations"):
            body[name] = [{"object_type": "dcim.interface", "object_id": created[ref]}]
        else:
            body[name] = created[ref]
    if write.object_id is None:
        response = client.create(write.endpoint, body)
        if write.creates is not None:
            created[write.creates] = response["id"]
    else:
        client.update(write.endpoint, write.object_id, body)


class _Planner:
    def __init__(self, client: NetboxClient, site: str | None, role_map: dict[str, str]):
        self.client = client
        self.site_slug = site
        self.role_slug: dict[str, str] = {}
        for slug, kind in role_map.items():
            self.role_slug.setdefault(kind, slug)
        self.writes: list[_Write] = []
        self.problems: list[str] = []
        # (hostname, interface name) -> NetBox interface id, for existing interfaces.
        self.interface_ids: dict[tuple[str, str], int] = {}

    def plan(self) -> list[_Write]:
        nodes = list(
            Node.objects.select_related("pod", "rack").order_by("hostname_sort_key", "hostname")
        )
        switches = list(
            Switch.objects.select_related("pod", "rack").order_by("hostname_sort_key", "hostname")
        )
        devices = self._plan_devices(nodes, switches)
        self._plan_interfaces(nodes, switches, devices)
        self._plan_gpus(nodes, devices)
        self._plan_cables(devices)
        if self.problems:
            raise NetboxExportError(self.problems)
        return self.writes

    # --- devices ---

    def _plan_devices(self, nodes: list[Node], switches: list[Switch]) -> dict[str, dict]:
        ours: list[tuple[Node | Switch, str]] = [(node, NODE) for node in nodes]
        ours += [(switch, switch.role) for switch in switches]
        names = [obj.hostname for obj, _ in ours]
        existing = {device["name"]: device for device in self.client.devices_named(names)}
        roles = {
            role["slug"]: role
            for role in self.client.all("dcim.device_roles", slug=sorted(self.role_slug.values()))
        }
        device_types = self.client.all("dcim.device_types")
        site = None
        if any(obj.hostname not in existing for obj, _ in ours):
            if not self.site_slug:
                self.problems.append(
                    "devices must be created in NetBox and no --site was given to put them in"
                )
            else:
                site = self.client.one("dcim.sites", slug=self.site_slug)
                if site is None:
                    self.problems.append(f"NetBox has no site with slug {self.site_slug!r}")
        places = self._places(ours)
        for obj, kind in ours:
            slug = self.role_slug.get(kind)
            role = roles.get(slug) if slug else None
            device_type = self._device_type(obj.model, device_types)
            body: dict[str, Any] = {
                "serial": obj.serial,
                "status": mapping.DEVICE_STATUS_OUT[obj.status],
            }
            found = existing.get(obj.hostname)
            if found is None:
                missing = []
                if role is None:
                    missing.append(f"device role for {kind!r} (slug {slug!r})")
                if device_type is None:
                    missing.append(f"device type for model {obj.model!r}")
                if missing:
                    self.problems.append(
                        f"{obj.hostname}: NetBox has no {' and no '.join(missing)}"
                    )
                    continue
                site_id = site["id"] if site else None
                body = {
                    "name": obj.hostname,
                    "role": role["id"],
                    "device_type": device_type["id"],
                    "site": site_id,
                    **body,
                    **self._placement(obj, site_id, places),
                }
                self.writes.append(
                    _Write(
                        DEVICES,
                        body,
                        Change(CREATE, "device", obj.hostname, f"our {kind}"),
                        creates=("device", obj.hostname),
                    )
                )
                continue
            if not body["serial"]:
                body.pop("serial")  # a serial we do not know never erases NetBox's
            current = {
                "serial": found.get("serial") or "",
                "status": mapping.choice_value(found.get("status")),
            }
            placement = self._placement(obj, (found.get("site") or {}).get("id"), places)
            for key, place_id in placement.items():
                current[key] = (found.get(key) or {}).get("id")
                body[key] = place_id
            if role is not None and (found.get("role") or {}).get("id") != role["id"]:
                current["role"] = (found.get("role") or {}).get("slug")
                body["role"] = role["id"]
            if (
                device_type is not None
                and (found.get("device_type") or {}).get("id") != (device_type["id"])
            ):
                current["device_type"] = (found.get("device_type") or {}).get("model")
                body["device_type"] = device_type["id"]
            self._patch(DEVICES, found["id"], "device", obj.hostname, current, body)
        return existing

    def _places(self, ours: list[tuple[Node | Switch, str]]) -> dict[tuple[str, str, int], int]:
        """NetBox locations named like our pods and racks named like ours:
        (kind, name, site id) -> id."""
        pods = sorted({obj.pod.name for obj, _ in ours if obj.pod})
        racks = sorted({obj.rack.name for obj, _ in ours if obj.rack})
        places: dict[tuple[str, str, int], int] = {}
        for kind, endpoint, names in (
            ("location", "dcim.locations", pods),
            ("rack", "dcim.racks", racks),
        ):
            if names:
                for place in self.client.all(endpoint, name=names):
                    places[(kind, place["name"], (place.get("site") or {}).get("id"))] = place["id"]
        return places

    @staticmethod
    def _placement(
        obj: Node | Switch, site_id: int | None, places: dict[tuple[str, str, int], int]
    ) -> dict[str, int]:
        """Our pod as the NetBox location and our rack as the rack, where NetBox has them in the
        device's site (a location or rack NetBox lacks is not created)."""
        placement = {}
        if obj.pod and ("location", obj.pod.name, site_id) in places:
            placement["location"] = places[("location", obj.pod.name, site_id)]
        if obj.rack and ("rack", obj.rack.name, site_id) in places:
            placement["rack"] = places[("rack", obj.rack.name, site_id)]
        return placement

    @staticmethod
    def _device_type(model: str, device_types: list[dict]) -> dict | None:
        for device_type in device_types:
            manufacturer = mapping.nested_name(device_type, "manufacturer")
            if model in (device_type.get("model"), f"{manufacturer} {device_type.get('model')}"):
                return device_type
        return None

    def _patch(
        self,
        endpoint: str,
        object_id: int,
        model: str,
        name: str,
        current: dict[str, Any],
        body: dict[str, Any],
    ) -> None:
        diff = {key: value for key, value in body.items() if current.get(key) != value}
        if diff:
            fields = {key: (current.get(key), value) for key, value in diff.items()}
            self.writes.append(
                _Write(endpoint, diff, Change(UPDATE, model, name, "", fields), object_id)
            )

    # --- interfaces ---

    def _plan_interfaces(
        self, nodes: list[Node], switches: list[Switch], devices: dict[str, dict]
    ) -> None:
        existing: dict[tuple[str, str], dict] = {}
        for interface in self.client.interfaces_of(device["id"] for device in devices.values()):
            key = ((interface.get("device") or {}).get("name"), interface.get("name"))
            existing[key] = interface
            self.interface_ids[key] = interface["id"]
        wanted: list[tuple[str, dict[str, Any], str | None]] = []  # hostname, body, lag name
        for nic in (
            NIC.objects.filter(node__in=nodes)
            .select_related("node")
            .order_by("node__hostname_sort_key", "device")
        ):
            row = {"device": nic.device, "role": nic.role, "speed_gbps": nic.speed_gbps}
            wanted.append((nic.node.hostname, mapping.nic_interface_body(row), None))
            for member in nic.bond_members:
                body = mapping.nic_interface_body(
                    {"device": member, "role": NIC.Role.STORAGE, "speed_gbps": nic.speed_gbps}
                )
                wanted.append((nic.node.hostname, body, nic.device))
        ports = SwitchPort.objects.filter(switch__in=switches, breakout_mode="")
        for port in ports.select_related("switch").order_by(
            "switch__hostname_sort_key", "index", "name_sort_key"
        ):
            row = {
                "name": port.name,
                "speed_gbps": port.speed_gbps,
                "alias": port.alias,
                "description": port.description,
            }
            wanted.append((port.switch.hostname, mapping.port_interface_body(row), None))
        for hostname, body, lag in wanted:
            key = (hostname, body["name"])
            name = f"{hostname} {body['name']}"
            found = existing.get(key)
            refs: dict[str, tuple[str, Any]] = {}
            if lag is not None:
                lag_id = self.interface_ids.get((hostname, lag))
                if lag_id is None:
                    refs["lag"] = ("interface", (hostname, lag))
                else:
                    body["lag"] = lag_id
            if found is None:
                device = devices.get(hostname)
                if device is None:
                    refs["device"] = ("device", hostname)
                else:
                    body["device"] = device["id"]
                self.writes.append(
                    _Write(
                        INTERFACES,
                        body,
                        Change(CREATE, "interface", name),
                        refs=refs,
                        creates=("interface", key),
                    )
                )
                continue
            current = mapping.interface_values(found)
            current["lag"] = (found.get("lag") or {}).get("id")
            body.pop("name")
            diff = {key: value for key, value in body.items() if current.get(key) != value}
            if refs:  # the member exists but its LAG is created in this run
                diff["lag"] = None
            if diff:
                fields = {key: (current.get(key), value) for key, value in diff.items()}
                if refs:
                    fields["lag"] = (current.get("lag"), lag)
                    diff.pop("lag")
                self.writes.append(
                    _Write(
                        INTERFACES,
                        diff,
                        Change(UPDATE, "interface", name, "", fields),
                        found["id"],
                        refs=refs,
                    )
                )

    # --- GPUs (inventory items) ---

    def _plan_gpus(self, nodes: list[Node], devices: dict[str, dict]) -> None:
        """One inventory item per GPU under its node's device, found by (device, `GPU<index>`):
        the slot is what stays, so after a swap the same item gets the new serial and UUID."""
        existing: dict[tuple[str, str], dict] = {}
        for item in self.client.inventory_items_of(device["id"] for device in devices.values()):
            existing[((item.get("device") or {}).get("name"), item.get("name"))] = item
        gpus = GPU.objects.filter(node__in=nodes).select_related("node")
        for gpu in gpus.order_by("node__hostname_sort_key", "node__hostname", "index"):
            hostname = gpu.node.hostname
            body = mapping.gpu_inventory_item_body(
                {"index": gpu.index, "serial": gpu.serial, "model": gpu.model, "uuid": gpu.uuid}
            )
            name = f"{hostname} {body['name']}"
            found = existing.get((hostname, body["name"]))
            if found is None:
                refs: dict[str, tuple[str, Any]] = {}
                device = devices.get(hostname)
                if device is None:
                    refs["device"] = ("device", hostname)
                else:
                    body["device"] = device["id"]
                self.writes.append(
                    _Write(INVENTORY_ITEMS, body, Change(CREATE, "inventory item", name,
                                                         f"our GPU {gpu.serial or '?'}"),
                           refs=refs)
                )
                continue
            body.pop("name")
            for key in ("serial", "part_id", "description"):
                if not body[key]:
                    body.pop(key)  # what we do not know never erases what NetBox has
            current = mapping.inventory_item_values(found)
            self._patch(INVENTORY_ITEMS, found["id"], "inventory item", name, current, body)

    # --- cables ---

    @staticmethod
    def _end_candidates(cable: Cable, side: str) -> list[tuple[str, str]]:
        """The NetBox interfaces one end of our cable may land on: the NIC or port itself, or
        for a bond its members in order (NetBox cannot cable a LAG)."""
        nic = getattr(cable, f"{side}_nic")
        if nic is None:
            port = getattr(cable, f"{side}_port")
            return [(port.switch.hostname, port.name)]
        if nic.role == NIC.Role.STORAGE_BOND and nic.bond_members:
            members = sorted(nic.bond_members, key=mapping.natural_key)
            return [(nic.node.hostname, member) for member in members]
        return [(nic.node.hostname, nic.device)]

    def _plan_cables(self, devices: dict[str, dict]) -> None:
        by_interface: dict[int, dict] = {}
        for cable in self.client.cables_of(device["id"] for device in devices.values()):
            for side in ("a", "b"):
                for termination in cable.get(f"{side}_terminations") or []:
                    if termination.get("object_type") == "dcim.interface":
                        by_interface[termination["object_id"]] = cable
        cables = Cable.objects.exclude(status=CableStatus.DECOMMISSIONED).select_related(
            "a_nic__node", "b_nic__node", "a_port__switch", "b_port__switch"
        )
        for cable in cables.order_by("id"):
            candidates = [self._end_candidates(cable, side) for side in ("a", "b")]
            found = self._netbox_cable_joining(*candidates, by_interface)
            if found is not None:
                end_a, end_b, netbox_cable = found
                name = f"{end_a[0]} {end_a[1]} <> {end_b[0]} {end_b[1]}"
                current = mapping.cable_values(netbox_cable)
                self._patch(
                    CABLES, netbox_cable["id"], "cable", name, current, mapping.cable_body(cable)
                )
                continue
            # A new cable lands on the first interface of each end that NetBox has free.
            ends, busy = [], []
            for options in candidates:
                free = [
                    end for end in options if by_interface.get(self.interface_ids.get(end)) is None
                ]
                ends.append(free[0] if free else options[0])
                if not free:
                    busy.append(by_interface[self.interface_ids[options[0]]])
            end_a, end_b = ends
            name = f"{end_a[0]} {end_a[1]} <> {end_b[0]} {end_b[1]}"
            if busy:
                self.problems.append(
                    f"our cable #{cable.pk} ({name}): NetBox cable #{busy[0]['id']} already "
                    "holds one of these interfaces and joins it to something else"
                )
                continue
            body = mapping.cable_body(cable)
            refs: dict[str, tuple[str, Any]] = {}
            for side, end in zip(("a", "b"), ends, strict=True):
                interface_id = self.interface_ids.get(end)
                if interface_id is None:
                    refs[f"{side}_terminations"] = ("interface", end)
                else:
                    body[f"{side}_terminations"] = [
                        {"object_type": "dcim.interface", "object_id": interface_id}
                    ]
            if body["length"] is None:
                body.pop("length")
                body.pop("length_unit")
            self.writes.append(
                _Write(
                    CABLES, body, Change(CREATE, "cable", name, f"our cable #{cable.pk}"), refs=refs
                )
            )

    def _netbox_cable_joining(
        self,
        candidates_a: list[tuple[str, str]],
        candidates_b: list[tuple[str, str]],
        by_interface: dict[int, dict],
    ) -> tuple[tuple[str, str], tuple[str, str], dict] | None:
        for end_a in candidates_a:
            netbox_cable = by_interface.get(self.interface_ids.get(end_a))
            if netbox_cable is None:
                continue
            for end_b in candidates_b:
                if by_interface.get(self.interface_ids.get(end_b)) is netbox_cable:
                    return end_a, end_b, netbox_cable
        return None


def summarize(changes: list[Change]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {CREATE: 0, UPDATE: 0})
    for change in changes:
        counts[change.model][change.action] += 1
    return dict(counts)

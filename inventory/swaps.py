"""Parts swapped in a slot: the serial that left, the one that arrived, in one transaction.

The slot's row is never replaced (DESIGN.md section 12): a GPU keeps its id, so its node, index
and the NICs affine to it stay; a NIC keeps its id, so its cables, rail and role stay; a
transceiver is the end of a cable that stays. Only the identity of the hardware in the slot
changes (serial, and a GPU's UUID or a NIC's MAC), and a `ComponentSwap` row records what left
and what arrived. Parts without a row of their own (a PSU, a disk, a GPU tray, an NVLink module)
are a named position in a node, whose current serial is the last one installed there.

Row locks, in one order (node, then the slot's row) so a swap and a PATCH of the same node or GPU
(portal/api/concurrency.py locks the row it writes) wait for each other instead of losing either.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from inventory.models import (
    GPU,
    NIC,
    Cable,
    CableStatus,
    ComponentKind,
    ComponentSwap,
    Node,
)
from portal.errors import InvalidInput
from portal.services.audit import record_change, snapshot

# A clock a little ahead of ours is not a reason to refuse a swap that "happened now".
FUTURE_TOLERANCE = timedelta(minutes=5)


@dataclass(frozen=True)
class Slot:
    """Where a part sits: a node and, by kind, its GPU, its NIC, a cable end or a position."""

    kind: str
    node: Node
    gpu: GPU | None = None
    nic: NIC | None = None
    cable: Cable | None = None
    cable_side: str = ""
    position: str = ""

    @property
    def label(self) -> str:
        if self.kind == ComponentKind.GPU and self.gpu is not None:
            return f"{self.node.hostname} GPU{self.gpu.index}"
        if self.kind == ComponentKind.NIC and self.nic is not None:
            return f"{self.node.hostname} {self.nic.device}"
        if self.kind == ComponentKind.TRANSCEIVER and self.nic is not None:
            return f"{self.node.hostname} {self.nic.device} transceiver"
        if self.kind == ComponentKind.NODE:
            return self.node.hostname
        label = ComponentKind(self.kind).label
        return f"{self.node.hostname} {label}" + (f" {self.position}" if self.position else "")


def slot_for(
    *, kind: str, node: Node | None, gpu_index: int | None = None, nic_device: str = "",
    position: str = "",
) -> Slot:
    """The slot a part of `kind` occupies, from how a person names it; InvalidInput naming the
    field (`kind`, `node`, `gpu_index`, `nic`, `position`) when it does not exist."""
    if kind not in ComponentKind.values:
        raise InvalidInput(
            {"kind": [f"Unknown part type {kind!r}; use one of {', '.join(ComponentKind.values)}."]}
        )
    if node is None:
        raise InvalidInput({"node": ["Name the node the part is in."]})
    if kind == ComponentKind.GPU:
        if gpu_index is None:
            raise InvalidInput({"gpu_index": ["A GPU is named by its index on the node (0-7)."]})
        gpu = GPU.objects.filter(node=node, index=gpu_index).first()
        if gpu is None:
            raise InvalidInput({"gpu_index": [f"{node.hostname} has no GPU {gpu_index}."]})
        return Slot(kind, node, gpu=gpu)
    if kind in (ComponentKind.NIC, ComponentKind.TRANSCEIVER):
        if not nic_device:
            raise InvalidInput({"nic": ["Name the NIC device, e.g. mlx5_0."]})
        nic = NIC.objects.filter(node=node, device=nic_device).first()
        if nic is None:
            raise InvalidInput({"nic": [f"{node.hostname} has no NIC {nic_device!r}."]})
        if kind == ComponentKind.NIC:
            return Slot(kind, node, nic=nic)
        cable = _active_cable(nic)
        if cable is None:
            raise InvalidInput({"nic": [f"{node.hostname} {nic_device} has no cable, so no "
                                        "transceiver to replace."]})
        return Slot(kind, node, nic=nic, cable=cable, cable_side="a" if cable.a_nic_id == nic.pk
                    else "b")
    if kind == ComponentKind.NODE:
        return Slot(kind, node)
    position = (position or "").strip()
    if len(position) > 32:
        raise InvalidInput({"position": ["Use at most 32 characters."]})
    return Slot(kind, node, position=position)


def _active_cable(nic: NIC) -> Cable | None:
    return (
        Cable.objects.exclude(status=CableStatus.DECOMMISSIONED)
        .filter(Q(a_nic=nic) | Q(b_nic=nic))
        .first()
    )


def current_identity(slot: Slot) -> dict[str, str]:
    """What is in the slot now: serial (and UUID for a GPU, MAC for a NIC)."""
    if slot.kind == ComponentKind.GPU:
        return {"serial": slot.gpu.serial, "uuid": slot.gpu.uuid}
    if slot.kind == ComponentKind.NIC:
        return {"serial": slot.nic.serial, "mac": slot.nic.mac}
    if slot.kind == ComponentKind.TRANSCEIVER:
        return {"serial": getattr(slot.cable, f"{slot.cable_side}_transceiver_serial")}
    if slot.kind == ComponentKind.NODE:
        return {"serial": slot.node.serial}
    last = (
        ComponentSwap.objects.filter(node=slot.node, kind=slot.kind, position=slot.position)
        .order_by("-swapped_at", "-pk")
        .values_list("serial_in", flat=True)
        .first()
    )
    return {"serial": last or ""}


def installed_elsewhere(kind: str, serial: str, *, slot: Slot | None = None) -> str | None:
    """Where a part of `kind` with `serial` is installed now, other than `slot`; None if nowhere."""
    if kind == ComponentKind.GPU:
        found = GPU.objects.filter(serial=serial).select_related("node")
        if slot is not None and slot.gpu is not None:
            found = found.exclude(pk=slot.gpu.pk)
        gpu = found.first()
        return f"{gpu.node.hostname} GPU{gpu.index}" if gpu else None
    if kind == ComponentKind.NIC:
        found = NIC.objects.filter(serial=serial).select_related("node")
        if slot is not None and slot.nic is not None:
            found = found.exclude(pk=slot.nic.pk)
        nic = found.first()
        return f"{nic.node.hostname} {nic.device}" if nic else None
    if kind == ComponentKind.NODE:
        found = Node.objects.filter(serial=serial)
        if slot is not None:
            found = found.exclude(pk=slot.node.pk)
        node = found.first()
        return node.hostname if node else None
    if kind == ComponentKind.TRANSCEIVER:
        for side in ("a", "b"):
            cables = Cable.objects.exclude(status=CableStatus.DECOMMISSIONED).filter(
                **{f"{side}_transceiver_serial": serial}
            )
            if slot is not None and slot.cable is not None and slot.cable_side == side:
                cables = cables.exclude(pk=slot.cable.pk)
            cable = cables.first()
            if cable is not None:
                return f"cable #{cable.pk} side {side}"
        return None
    # A positional part is installed where it last arrived, unless a later swap there took it out.
    arrived = ComponentSwap.objects.filter(kind=kind, serial_in=serial).select_related("node")
    for swap in arrived.order_by("-swapped_at", "-pk")[:5]:
        same_slot = slot is not None and (swap.node_id, swap.position) == (
            slot.node.pk, slot.position)
        if same_slot:
            continue
        later = ComponentSwap.objects.filter(
            kind=kind, node_id=swap.node_id, position=swap.position, swapped_at__gte=swap.swapped_at
        ).exclude(pk=swap.pk)
        if not later.exists():
            return swap.slot
    return None


@transaction.atomic
def component_replace(
    *,
    slot: Slot,
    serial_in: str,
    uuid_in: str = "",
    mac_in: str = "",
    firmware_version_in: str = "",
    serial_out: str | None = None,
    swapped_at: datetime | None = None,
    reference: str = "",
    note: str = "",
    actor=None,
    via: str = "api",
) -> ComponentSwap:
    """Put the part `serial_in` into `slot`: the slot's row keeps its id (and so its node, index,
    cables, addresses and rail); its serial (a GPU's UUID, a NIC's MAC) changes in place, and a
    ComponentSwap row records what left and what arrived, audited, in one transaction.

    `serial_out` is read from the slot (under its row lock); give it only for a positional part
    whose serial the inventory never knew. InvalidInput names the field: `serial_in` (blank, the
    one already there, or installed elsewhere), `uuid_in`, `mac_in`, `swapped_at` (in the future).
    A serial that left an earlier slot (a refurbished part) is linked to that swap.
    """
    serial_in = (serial_in or "").strip()
    uuid_in, mac_in = (uuid_in or "").strip(), (mac_in or "").strip().lower().replace("-", ":")
    now = timezone.now()
    swapped_at = swapped_at or now
    errors: dict[str, list[str]] = {}
    if not serial_in:
        errors["serial_in"] = ["Give the serial of the part that arrived."]
    elif len(serial_in) > 64:
        errors["serial_in"] = ["Use at most 64 characters."]
    if swapped_at > now + FUTURE_TOLERANCE:
        errors["swapped_at"] = ["A swap cannot be in the future."]
    if uuid_in and slot.kind != ComponentKind.GPU:
        errors["uuid_in"] = ["Only a GPU has a UUID."]
    if mac_in and slot.kind != ComponentKind.NIC:
        errors["mac_in"] = ["Only a NIC has a MAC address."]
    if errors:
        raise InvalidInput(errors)

    # Locks: the node first, then the slot's own row (a PATCH locks only the row it writes).
    node = Node.objects.select_for_update().get(pk=slot.node.pk)
    slot = _locked(slot, node)
    before = current_identity(slot)
    if serial_in == before["serial"]:
        raise InvalidInput({"serial_in": [f"{serial_in} is already in {slot.label}."]})
    where = installed_elsewhere(slot.kind, serial_in, slot=slot)
    if where:
        raise InvalidInput({"serial_in": [f"{serial_in} is installed in {where}."]})
    if uuid_in and GPU.objects.filter(uuid=uuid_in).exclude(pk=slot.gpu.pk).exists():
        raise InvalidInput({"uuid_in": [f"Another GPU has UUID {uuid_in}."]})
    if mac_in and NIC.objects.filter(mac=mac_in).exclude(pk=slot.nic.pk).exists():
        raise InvalidInput({"mac_in": [f"Another NIC has MAC {mac_in}."]})
    if serial_out is None or before["serial"]:
        serial_out = before["serial"]

    row = _slot_row(slot)
    row_before = snapshot(row) if row is not None else None
    if slot.kind == ComponentKind.GPU:
        # A new GPU has a new UUID: keeping the old one would name a GPU that left.
        row.serial, row.uuid = serial_in, uuid_in
        row.save(update_fields=["serial", "uuid"])
    elif slot.kind == ComponentKind.NIC:
        row.serial = serial_in
        fields = ["serial"]
        if mac_in:
            row.mac = mac_in
            fields.append("mac")
        row.save(update_fields=fields)
    elif slot.kind == ComponentKind.TRANSCEIVER:
        setattr(row, f"{slot.cable_side}_transceiver_serial", serial_in)
        row.save(update_fields=[f"{slot.cable_side}_transceiver_serial", "updated_at"])
    elif slot.kind == ComponentKind.NODE:
        row.serial = serial_in
        row.save(update_fields=["serial", "updated_at"])

    swap = ComponentSwap.objects.create(
        kind=slot.kind,
        node=node,
        gpu=slot.gpu,
        nic=slot.nic,
        cable=slot.cable,
        cable_side=slot.cable_side,
        position=slot.position,
        slot=slot.label,
        serial_out=serial_out or "",
        serial_in=serial_in,
        uuid_out=before.get("uuid", ""),
        uuid_in=uuid_in,
        mac_out=before.get("mac", "") if mac_in else "",
        mac_in=mac_in,
        firmware_version_in=(firmware_version_in or "").strip()[:64],
        returned_from=(
            ComponentSwap.objects.filter(kind=slot.kind, serial_out=serial_in)
            .order_by("-swapped_at", "-pk")
            .first()
        ),
        reference=reference,
        note=note,
        swapped_at=swapped_at,
        swapped_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    if row is not None:
        record_change(actor=actor, operation="update", instance=row, before=row_before,
                      after=snapshot(row), note=f"part swapped: {swap}", via=via)
    record_change(actor=actor, operation="create", instance=swap, after=snapshot(swap),
                  note=reference, via=via)
    return swap


def _locked(slot: Slot, node: Node) -> Slot:
    """The slot with its row re-read under a lock (as committed, after any writer before us)."""
    gpu = GPU.objects.select_for_update().get(pk=slot.gpu.pk) if slot.gpu else None
    nic = NIC.objects.select_for_update().get(pk=slot.nic.pk) if slot.nic else None
    cable = Cable.objects.select_for_update().get(pk=slot.cable.pk) if slot.cable else None
    return Slot(slot.kind, node, gpu=gpu, nic=nic, cable=cable, cable_side=slot.cable_side,
                position=slot.position)


def _slot_row(slot: Slot):
    return {
        ComponentKind.GPU: slot.gpu,
        ComponentKind.NIC: slot.nic,
        ComponentKind.TRANSCEIVER: slot.cable,
        ComponentKind.NODE: slot.node,
    }.get(slot.kind)

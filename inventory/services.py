"""Writes to the inventory that need more than a row: cabling, with every end checked, and the
rail rules a NIC or a cable must keep (checked here, before a write, so every caller refuses
alike and names what is in the way).

The database keeps a NIC or port in at most one active cable per end column; these services also
close the gap between columns (side A of one cable, side B of another) by locking both ends'
rows before looking, so two concurrent requests cannot cable the same port twice.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction
from django.db.models import Q

from inventory.models import NIC, RAILS, Cable, CableStatus, Node, SwitchPort
from portal.errors import InvalidInput
from portal.services.audit import record_change, snapshot

End = NIC | SwitchPort


def _describe(end: End) -> str:
    if isinstance(end, NIC):
        return f"{end.node.hostname} {end.device}"
    return f"{end.switch.hostname} {end.name}"


def _lock(end: End) -> End:
    """Re-read an end under a row lock (NIC with its node, port with its switch)."""
    if isinstance(end, NIC):
        return NIC.objects.select_related("node").select_for_update(of=("self",)).get(pk=end.pk)
    if isinstance(end, SwitchPort):
        return (
            SwitchPort.objects.select_related("switch")
            .select_for_update(of=("self",))
            .get(pk=end.pk)
        )
    raise InvalidInput({"ends": ["a cable end is a NIC or a switch port"]})


def _active_cables_at(end: End, *, exclude: int | None = None):
    kind = "nic" if isinstance(end, NIC) else "port"
    cables = Cable.objects.exclude(status=CableStatus.DECOMMISSIONED).filter(
        Q(**{f"a_{kind}": end}) | Q(**{f"b_{kind}": end})
    )
    return cables.exclude(pk=exclude) if exclude else cables


def _check_ends(a: End, b: End, *, cable_id: int | None = None) -> None:
    errors: dict[str, list[str]] = {}
    if type(a) is type(b) and a.pk == b.pk:
        errors.setdefault("b", []).append("a cable joins two different ends")
    if isinstance(a, NIC) and isinstance(b, NIC):
        errors.setdefault("b", []).append(
            "a cable runs from a NIC to a switch port, not NIC to NIC"
        )
    for side, end in (("a", a), ("b", b)):
        if isinstance(end, SwitchPort) and end.breakout_mode:
            errors.setdefault(side, []).append(
                f"{_describe(end)} is a cage broken out {end.breakout_mode}; cable a half"
            )
        taken = _active_cables_at(end, exclude=cable_id).first()
        if taken is not None:
            errors.setdefault(side, []).append(
                f"{_describe(end)} is already in cable #{taken.pk} ({taken.status})"
            )
    if errors:
        raise InvalidInput(errors)


@transaction.atomic
def cable_create(
    *,
    a: End,
    b: End,
    type: str,
    length_m: Decimal | float | None = None,
    status: str = CableStatus.PLANNED,
    a_transceiver_serial: str = "",
    b_transceiver_serial: str = "",
    label: str = "",
    actor=None,
    via: str = "api",
) -> Cable:
    """Cable two ends. InvalidInput (naming side `a` or `b`) when an end is already in an active
    cable on either side, the ends are the same or both NICs, or an end is a broken-out cage."""
    if type not in Cable.Type.values:
        raise InvalidInput({"type": [f"{type!r} is not one of: {', '.join(Cable.Type.values)}"]})
    if status not in CableStatus.values:
        raise InvalidInput({"status": [f"{status!r} is not a cable status"]})
    a, b = _lock(a), _lock(b)
    if status != CableStatus.DECOMMISSIONED:
        _check_ends(a, b)
    cable = Cable.objects.create(
        a_nic=a if isinstance(a, NIC) else None,
        a_port=a if isinstance(a, SwitchPort) else None,
        b_nic=b if isinstance(b, NIC) else None,
        b_port=b if isinstance(b, SwitchPort) else None,
        type=type,
        length_m=length_m,
        status=status,
        a_transceiver_serial=a_transceiver_serial,
        b_transceiver_serial=b_transceiver_serial,
        label=label,
    )
    record_change(actor=actor, operation="create", instance=cable, after=snapshot(cable), via=via)
    return cable


@transaction.atomic
def cable_set_status(*, cable: Cable, status: str, actor=None, via: str = "api") -> Cable:
    """Move a cable between planned, connected, faulty and decommissioned. Bringing a
    decommissioned cable back checks its ends as `cable_create` does."""
    if status not in CableStatus.values:
        raise InvalidInput({"status": [f"{status!r} is not a cable status"]})
    cable = Cable.objects.select_for_update().get(pk=cable.pk)
    if cable.status == status:
        return cable
    if cable.status == CableStatus.DECOMMISSIONED:
        ends = [_lock(end) for end in (cable.a_nic or cable.a_port, cable.b_nic or cable.b_port)]
        _check_ends(*ends, cable_id=cable.pk)
    before = snapshot(cable)
    cable.status = status
    cable.save(update_fields=["status", "updated_at"])
    record_change(
        actor=actor,
        operation="update",
        instance=cable,
        before=before,
        after=snapshot(cable),
        via=via,
    )
    return cable


# -- a node's rails: one rail NIC per rail -------------------------------------------------------


def nic_rail_errors(
    *, node: Node | None, role: str | None, rail: int | None, nic: NIC | None = None
) -> dict[str, list[str]]:
    """Errors, under `rail`, when a NIC of `role` on `rail` would break a node's rails: a rail NIC
    has its rail index, no other NIC has one, and each rail has one NIC per node (Table 2).
    `nic` is the NIC being changed, if any, which does not hold a rail against itself. The
    database's constraints say the same, but too late to name the NIC that holds the rail."""
    if role == NIC.Role.RAIL and rail is None:
        return {"rail": [f"a rail NIC needs its rail index (0-{RAILS - 1})"]}
    if role != NIC.Role.RAIL and rail is not None:
        return {"rail": [f"only rail NICs have a rail index; this one is {role}"]}
    if role == NIC.Role.RAIL and node is not None:
        taken = NIC.objects.filter(node=node, rail=rail)
        if nic is not None:
            taken = taken.exclude(pk=nic.pk)
        device = taken.values_list("device", flat=True).first()
        if device is not None:
            return {"rail": [f"{node.hostname} {device} already serves rail {rail}"]}
    return {}


# -- the API's cabling: the rail rule checked before a cable exists ------------------------------


def cable_rail_errors(a: End, b: End) -> dict[str, list[str]]:
    """Errors, by side `a` / `b`, when a cable would break the rail rule: rail NIC r of a node
    in pod p lands only on leaf r of pod p (DESIGN.md section 1). Empty when the cable is fine
    or is not a rail NIC-to-leaf cable."""
    errors: dict[str, list[str]] = {}
    for side, nic, port in (("a", a, b), ("b", b, a)):
        if not isinstance(nic, NIC) or not isinstance(port, SwitchPort):
            continue
        switch = port.switch
        if nic.role == NIC.Role.RAIL and switch.role == "leaf":
            if switch.rail is not None and switch.rail != nic.rail:
                errors.setdefault(side, []).append(
                    f"{_describe(nic)} is on rail {nic.rail}; {switch.hostname} serves rail "
                    f"{switch.rail}"
                )
            if switch.pod_id != nic.node.pod_id:
                errors.setdefault(side, []).append(
                    f"{_describe(nic)} is in pod {nic.node.pod}; {switch.hostname} is a leaf "
                    f"of pod {switch.pod}"
                )
        elif nic.role != NIC.Role.RAIL and switch.role == "leaf" and switch.rail is not None:
            errors.setdefault(side, []).append(
                f"{_describe(nic)} is a {nic.role} NIC; {switch.hostname} is a rail {switch.rail} "
                f"leaf for rail NICs only"
            )
    return errors


def cable_create_on_rail(*, a: End, b: End, **fields) -> Cable:
    """`cable_create`, refusing first (InvalidInput naming the side) a cable that would put a
    NIC on the wrong rail's or the wrong pod's leaf."""
    errors = cable_rail_errors(a, b)
    if errors:
        raise InvalidInput(errors)
    return cable_create(a=a, b=b, **fields)


CABLE_EDITABLE_FIELDS = frozenset(
    {"type", "length_m", "a_transceiver_serial", "b_transceiver_serial", "label"}
)


@transaction.atomic
def cable_update(*, cable: Cable, changes: dict, actor=None, via: str = "api") -> Cable:
    """Change a cable's status (through `cable_set_status`, which re-checks the ends when a
    decommissioned cable comes back) and its descriptive fields; its ends never change."""
    unknown = sorted(set(changes) - CABLE_EDITABLE_FIELDS - {"status"})
    if unknown:
        raise InvalidInput({name: ["cannot be changed on an existing cable"] for name in unknown})
    if "type" in changes and changes["type"] not in Cable.Type.values:
        raise InvalidInput({"type": [f"{changes['type']!r} is not a cable type"]})
    if "status" in changes:
        cable = cable_set_status(cable=cable, status=changes["status"], actor=actor, via=via)
    fields = {name: value for name, value in changes.items() if name != "status"}
    changed = [name for name, value in fields.items() if getattr(cable, name) != value]
    if not changed:
        return cable
    cable = Cable.objects.select_for_update().get(pk=cable.pk)
    before = snapshot(cable)
    for name in changed:
        setattr(cable, name, fields[name])
    cable.save(update_fields=[*changed, "updated_at"])
    record_change(
        actor=actor,
        operation="update",
        instance=cable,
        before=before,
        after=snapshot(cable),
        via=via,
    )
    return cable

"""Writes to the inventory that need more than a row: cabling, with every end checked.

The database keeps a NIC or port in at most one active cable per end column; these services also
close the gap between columns (side A of one cable, side B of another) by locking both ends'
rows before looking, so two concurrent requests cannot cable the same port twice.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction
from django.db.models import Q

from inventory.models import NIC, Cable, CableStatus, SwitchPort
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

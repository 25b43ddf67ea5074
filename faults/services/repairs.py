"""Repair cases: a vendor case opened from a ticket, moved along faults/repair_workflow.py, and
its parts installed through the inventory's swap (inventory.swaps.component_replace), which keeps
the slot's row and records the serials that left and arrived.

Every write checks all of its input before it writes anything (a bad part among three opens no
case), stamps the step's date, puts a line on the ticket's timeline, is audited, and publishes
`fault.updated` for the ticket after commit, so the ticket page's repair panel follows live.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.db import transaction
from django.utils import timezone

from faults.models import FaultTicket, RepairCase, RepairPart, TimelineKind
from faults.repair_workflow import (
    FIRST_STAMP_COUNTS,
    INSTALLABLE_STATUSES,
    OPEN_REPAIR_STATUSES,
    REPAIR_STAMPS,
    RepairStatus,
    repair_targets,
)
from faults.services.timeline import MAX_NOTE_LENGTH, add_timeline_entry, publish_ticket_event
from inventory.models import ComponentKind, Node, SpareReservation
from inventory.spares import consume_spare, release_spares, reserve_spare
from inventory.swaps import FUTURE_TOLERANCE, Slot, component_replace, slot_for
from portal.errors import Conflict, InvalidInput
from portal.services.audit import record_change, snapshot


@dataclass(frozen=True)
class PartRequest:
    """A part as a request names it; its slot is checked against the inventory."""

    kind: str
    node: str = ""  # hostname; blank: the ticket's node
    gpu_index: int | None = None
    nic: str = ""  # device
    position: str = ""
    description: str = ""


def _actor(actor):
    return actor if getattr(actor, "is_authenticated", False) else None


def _who(actor) -> str:
    return actor.get_username() if getattr(actor, "is_authenticated", False) else "system"


def _check_when(name: str, value: datetime | None, *, not_before: datetime | None,
                before_what: str) -> datetime:
    now = timezone.now()
    value = value or now
    if value > now + FUTURE_TOLERANCE:
        raise InvalidInput({name: ["This date is in the future."]})
    if not_before is not None and value < not_before:
        raise InvalidInput(
            {name: [f"{value:%Y-%m-%d %H:%M} is before {before_what} "
                    f"({not_before:%Y-%m-%d %H:%M})."]}
        )
    return value


def _slot(ticket: FaultTicket, request: PartRequest) -> Slot:
    node = ticket.node
    if request.node:
        node = Node.objects.filter(hostname=request.node).first()
        if node is None:
            raise InvalidInput({"node": [f"Unknown node {request.node!r}."]})
    return slot_for(kind=request.kind, node=node, gpu_index=request.gpu_index,
                    nic_device=request.nic, position=request.position)


def _part_slots(ticket: FaultTicket, parts: list[PartRequest]) -> list[Slot]:
    """Every part's slot, or one InvalidInput naming each bad part's fields under `parts`."""
    slots, errors, bad = [], [], False
    for request in parts:
        try:
            slots.append(_slot(ticket, request))
            errors.append({})
        except InvalidInput as refused:
            bad = True
            errors.append(refused.detail)
    if bad:
        raise InvalidInput({"parts": errors})
    return slots


def _create_part(case: RepairCase, request: PartRequest, slot: Slot, actor, via) -> RepairPart:
    part = RepairPart.objects.create(
        case=case, kind=slot.kind, node=slot.node, gpu=slot.gpu, nic=slot.nic,
        position=slot.position, description=(request.description or "").strip()[:200],
    )
    record_change(actor=actor, operation="create", instance=part, after=snapshot(part), via=via)
    return part


def open_repair_case(
    *,
    ticket: FaultTicket,
    vendor: str,
    component: str,
    actor,
    vendor_case_number: str = "",
    opened_at: datetime | None = None,
    expected_at: date | None = None,
    note: str = "",
    parts: list[PartRequest] | None = None,
    via: str = "api",
) -> RepairCase:
    """Open a vendor case on `ticket` with its parts. InvalidInput names the field: `vendor`
    (blank), `component` (an unknown part type), `opened_at` (before the ticket was detected, or
    in the future), `note`, or `parts` (each bad part's fields); nothing is written then."""
    vendor, vendor_case_number = (vendor or "").strip(), (vendor_case_number or "").strip()
    note = (note or "").strip()
    errors: dict[str, list[str]] = {}
    if not vendor:
        errors["vendor"] = ["Name the vendor."]
    if component not in ComponentKind.values:
        errors["component"] = [f"Unknown part type {component!r}; use one of "
                               f"{', '.join(ComponentKind.values)}."]
    if len(note) > MAX_NOTE_LENGTH:
        errors["note"] = [f"Use at most {MAX_NOTE_LENGTH} characters."]
    if errors:
        raise InvalidInput(errors)
    opened_at = _check_when("opened_at", opened_at, not_before=ticket.detected_at,
                            before_what=f"{ticket.reference} was detected")
    parts = list(parts or [])
    slots = _part_slots(ticket, parts)
    with transaction.atomic():
        ticket = FaultTicket.objects.select_for_update().get(pk=ticket.pk)
        if ticket.acknowledged_at is None and _actor(actor) is not None:
            # Opening a vendor case is acting on the ticket, which acknowledges it as a
            # transition or a recovery step does (else MTTA runs on past the first response).
            ticket.acknowledged_at = opened_at
            ticket.responder = ticket.responder or actor
            ticket.save(update_fields=["acknowledged_at", "responder", "updated_at"])
        case = RepairCase.objects.create(
            ticket=ticket, vendor=vendor, vendor_case_number=vendor_case_number,
            component=component, expected_at=expected_at, note=note, opened_at=opened_at,
            opened_by=_actor(actor),
        )
        for request, slot in zip(parts, slots, strict=True):
            _create_part(case, request, slot, actor, via)
        record_change(actor=actor, operation="create", instance=case, after=snapshot(case),
                      note=f"{ticket.reference}: repair case", via=via)
        add_timeline_entry(
            ticket, TimelineKind.REPAIR,
            f"{case.reference} opened with {vendor}"
            + (f" (case {vendor_case_number})" if vendor_case_number else "")
            + f" for the {case.get_component_display()} by {_who(actor)}.",
            author=actor, at=opened_at,
        )
        publish_ticket_event(ticket, "fault.updated")
    return case


def add_repair_part(*, case: RepairCase, request: PartRequest, actor,
                    via: str = "api") -> RepairPart:
    """Another part for an open case (the vendor sends a NIC with the tray)."""
    slot = _slot(case.ticket, request)
    with transaction.atomic():
        case = RepairCase.objects.select_for_update().get(pk=case.pk)
        if case.status in (RepairStatus.INSTALLED, RepairStatus.CLOSED):
            raise Conflict({"detail": f"{case.reference} is {case.get_status_display()}: "
                                      "open a new case for another part."})
        part = _create_part(case, request, slot, actor, via)
        add_timeline_entry(case.ticket, TimelineKind.REPAIR,
                           f"{case.reference}: part added, {slot.label}.", author=actor)
        publish_ticket_event(case.ticket, "fault.updated")
    return part


def transition_repair_case(
    *, case: RepairCase, to_status: str, actor, at: datetime | None = None, note: str = "",
    expected_at: date | None = None, via: str = "api",
) -> RepairCase:
    """Move a case along faults/repair_workflow.py, stamping the step's date `at` (default now;
    400 naming `at` when before the case opened or in the future). 409 names the allowed targets;
    `installed` needs every part swapped (400 naming `parts`)."""
    if to_status not in RepairStatus.values:
        raise InvalidInput({"to_status": [f"Unknown status {to_status!r}."]})
    note = (note or "").strip()
    if len(note) > MAX_NOTE_LENGTH:
        raise InvalidInput({"note": [f"Use at most {MAX_NOTE_LENGTH} characters."]})
    with transaction.atomic():
        case = RepairCase.objects.select_for_update().select_related("ticket").get(pk=case.pk)
        at = _check_when("at", at, not_before=case.opened_at,
                         before_what=f"{case.reference} was opened")
        _move(case, to_status, at=at, actor=actor, note=note, expected_at=expected_at, via=via)
    return case


def _move(case: RepairCase, to_status: str, *, at: datetime, actor, note: str = "",
          expected_at: date | None = None, via: str) -> None:
    """The transition itself, inside the caller's transaction with the case locked."""
    allowed = repair_targets(case.status)
    if to_status not in allowed:
        names = ", ".join(RepairStatus(value).label for value in allowed) or "none (closed)"
        raise Conflict(
            {"to_status": [f"{case.reference} is {case.get_status_display()}: cannot go to "
                           f"{RepairStatus(to_status).label}. Allowed: {names}."]},
            allowed=list(allowed),
        )
    if to_status == RepairStatus.INSTALLED:
        waiting = [part for part in case.parts.all() if not part.installed]
        if waiting or not case.parts.exists():
            raise InvalidInput({"parts": [
                "Install every part first: " + ", ".join(f"#{part.pk}" for part in waiting)
                if waiting else "The case has no part to install."
            ]})
    before = snapshot(case)
    from_status = case.status
    case.status = to_status
    fields = ["status", "updated_at"]
    stamp = REPAIR_STAMPS.get(to_status)
    if stamp and (getattr(case, stamp) is None or to_status not in FIRST_STAMP_COUNTS):
        setattr(case, stamp, at)
        fields.append(stamp)
    if expected_at is not None:
        case.expected_at = expected_at
        fields.append("expected_at")
    case.save(update_fields=fields)
    record_change(actor=actor, operation="update", instance=case, before=before,
                  after=snapshot(case), note=f"{from_status} -> {to_status}", via=via)
    if to_status == RepairStatus.CLOSED:
        # A spare the case still holds was never installed: it is free for the next case.
        for reservation in release_spares(reference=case.reference, actor=actor, at=at, via=via):
            add_timeline_entry(
                case.ticket, TimelineKind.REPAIR,
                f"{case.reference}: spare {reservation.stock.get_kind_display()} at "
                f"{reservation.stock.site} released.", author=actor, at=at,
            )
    add_timeline_entry(
        case.ticket, TimelineKind.REPAIR,
        f"{case.reference}: {RepairStatus(from_status).label} → {RepairStatus(to_status).label}"
        f" by {_who(actor)}" + (f": {note}" if note else "."),
        author=actor, at=at,
    )
    publish_ticket_event(case.ticket, "fault.updated")


def install_repair_part(
    *,
    case: RepairCase,
    part: RepairPart,
    serial_in: str,
    actor,
    uuid_in: str = "",
    mac_in: str = "",
    firmware_version_in: str = "",
    serial_out: str | None = None,
    installed_at: datetime | None = None,
    via: str = "api",
) -> RepairPart:
    """The part went in: the inventory's slot gets the new serial in place and a swap row (one
    transaction with the case's own update); when it was the case's last part, the case moves to
    installed. 409 unless the part is on site (part received) and not yet installed; 400 naming
    `installed_at` (before the case opened, or in the future) or the swap's fields."""
    with transaction.atomic():
        case = RepairCase.objects.select_for_update().select_related("ticket").get(pk=case.pk)
        part = RepairPart.objects.select_related("node", "gpu", "nic").get(pk=part.pk, case=case)
        if case.status not in INSTALLABLE_STATUSES:
            raise Conflict({"detail": f"{case.reference} is {case.get_status_display()}: a part "
                                      "is installed once it was received."})
        if part.installed:
            raise Conflict({"detail": f"Part #{part.pk} of {case.reference} is installed."})
        installed_at = _check_when("installed_at", installed_at, not_before=case.opened_at,
                                   before_what=f"{case.reference} was opened")
        if part.node is None:
            raise Conflict({"detail": f"Part #{part.pk}'s node is gone from the inventory."})
        slot = slot_for(kind=part.kind, node=part.node,
                        gpu_index=part.gpu.index if part.gpu else None,
                        nic_device=part.nic.device if part.nic else "", position=part.position)
        swap = component_replace(
            slot=slot, serial_in=serial_in, uuid_in=uuid_in, mac_in=mac_in,
            firmware_version_in=firmware_version_in, serial_out=serial_out,
            swapped_at=installed_at, reference=case.reference, actor=actor, via=via,
        )
        part.swap = swap
        part.save(update_fields=["swap"])
        spare = consume_spare(reference=case.reference, swap=swap, actor=actor, via=via)
        returning = ""
        if swap.returned_from_id:
            came_from = swap.returned_from
            returning = (f" (a returning part: it left {came_from.slot} on "
                         f"{came_from.swapped_at:%Y-%m-%d}"
                         + (f", {came_from.reference}" if came_from.reference else "") + ")")
        add_timeline_entry(
            case.ticket, TimelineKind.REPAIR,
            f"{case.reference}: {swap.slot} {swap.serial_out or '?'} → {swap.serial_in}"
            f"{returning}" + (f" from the spares at {spare.stock.site}" if spare else "")
            + f" by {_who(actor)}.",
            author=actor, at=installed_at,
        )
        if not case.parts.filter(swap__isnull=True).exists():
            _move(case, RepairStatus.INSTALLED, at=installed_at, actor=actor,
                  note="every part is in", via=via)
        else:
            publish_ticket_event(case.ticket, "fault.updated")
    return part


def reserve_case_spare(*, case: RepairCase, site: str, actor, kind: str = "",
                       via: str = "api") -> SpareReservation:
    """Hold a spare from `site`'s shelf for `case` (its failed component's type unless `kind`
    says otherwise), so the part need not wait for the vendor. 409 when the case is installed or
    closed; 400 naming `kind` (unknown, or none free at the site) or `site`."""
    with transaction.atomic():
        case = RepairCase.objects.select_for_update().select_related("ticket").get(pk=case.pk)
        if case.status not in OPEN_REPAIR_STATUSES:
            raise Conflict({"detail": f"{case.reference} is {case.get_status_display()}: "
                                      "it needs no spare."})
        reservation = reserve_spare(kind=kind or case.component, site=site,
                                    reference=case.reference, actor=actor, via=via)
        add_timeline_entry(
            case.ticket, TimelineKind.REPAIR,
            f"{case.reference}: spare {reservation.stock.get_kind_display()} reserved at "
            f"{reservation.stock.site} by {_who(actor)}.", author=actor,
        )
        publish_ticket_event(case.ticket, "fault.updated")
    return reservation

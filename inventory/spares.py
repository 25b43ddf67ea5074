"""Spare parts: stock per part type and site, reserved by a repair case, consumed by the swap
that puts the part in, released when the case closes without it.

The stock row is the lock: a reservation re-reads it `select_for_update` and counts the live
reservations under that lock, so two cases reaching for the last spare queue on the row and the
second finds none free (400 naming `kind`) instead of both believing they hold it.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from inventory.models import (
    ComponentKind,
    ComponentSwap,
    ReservationStatus,
    SpareReservation,
    SpareStock,
)
from portal.errors import InvalidInput
from portal.services.audit import record_change, snapshot

MAX_SITE_LENGTH = 64


def _actor(actor):
    return actor if getattr(actor, "is_authenticated", False) else None


def _check_kind(kind: str) -> None:
    if kind not in ComponentKind.values:
        raise InvalidInput(
            {"kind": [f"Unknown part type {kind!r}; use one of {', '.join(ComponentKind.values)}."]}
        )


def _check_site(site: str) -> str:
    site = (site or "").strip()
    if not site:
        raise InvalidInput({"site": ["Name the site whose shelf holds the spares."]})
    if len(site) > MAX_SITE_LENGTH:
        raise InvalidInput({"site": [f"Use at most {MAX_SITE_LENGTH} characters."]})
    return site


def _reserved_count(stock: SpareStock) -> int:
    return stock.reservations.filter(status=ReservationStatus.RESERVED).count()


def spare_stock_set(
    *, kind: str, site: str, on_hand: int | None = None, minimum: int | None = None, actor=None,
    via: str = "api",
) -> SpareStock:
    """Create or update the stock of `kind` at `site` (a count after a delivery or a stock-take,
    the minimum). 400 naming `kind`, `site`, `on_hand` (negative, or fewer than the parts cases
    hold) or `minimum`; nothing is written then."""
    _check_kind(kind)
    site = _check_site(site)
    for name, value in (("on_hand", on_hand), ("minimum", minimum)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0 or value > 1_000_000):
            raise InvalidInput({name: ["Give a whole number from 0 to 1000000."]})
    with transaction.atomic():
        stock, created = SpareStock.objects.select_for_update().get_or_create(kind=kind, site=site)
        before = None if created else snapshot(stock)
        if on_hand is not None:
            held = _reserved_count(stock)
            if on_hand < held:
                raise InvalidInput({"on_hand": [
                    f"{held} of these are reserved by repair cases; release them first."]})
            stock.on_hand = on_hand
        if minimum is not None:
            stock.minimum = minimum
        stock.save()
        record_change(actor=actor, operation="create" if created else "update", instance=stock,
                      before=before, after=snapshot(stock), note="spare stock", via=via)
    return stock


def reserve_spare(
    *, kind: str, site: str, reference: str, actor=None, at: datetime | None = None,
    via: str = "api",
) -> SpareReservation:
    """Hold one spare of `kind` at `site` for `reference` (a repair case). 400 naming `kind` (an
    unknown part type, or none free there: none on hand, or all held by other cases) or `site`."""
    _check_kind(kind)
    site = _check_site(site)
    with transaction.atomic():
        stock = SpareStock.objects.select_for_update().filter(kind=kind, site=site).first()
        label = ComponentKind(kind).label
        if stock is None or stock.on_hand == 0:
            raise InvalidInput({"kind": [f"No {label} spare is on hand at {site}."]})
        held = _reserved_count(stock)
        if held >= stock.on_hand:
            raise InvalidInput({"kind": [
                f"Every {label} spare at {site} ({stock.on_hand}) is reserved by another case."]})
        reservation = SpareReservation.objects.create(
            stock=stock, reference=reference, reserved_at=at or timezone.now(),
            reserved_by=_actor(actor),
        )
        record_change(actor=actor, operation="create", instance=reservation,
                      after=snapshot(reservation), note=reference, via=via)
    return reservation


def consume_spare(
    *, reference: str, swap: ComponentSwap, actor=None, via: str = "api"
) -> SpareReservation | None:
    """The part `swap` put in came off the shelf: `reference`'s reservation of that kind is
    consumed and the stock drops by one. None when the case held no spare of that kind (the
    vendor shipped the part directly). Runs inside the swap's transaction."""
    with transaction.atomic():
        reservation = (
            SpareReservation.objects.select_for_update()
            .filter(reference=reference, stock__kind=swap.kind, status=ReservationStatus.RESERVED)
            .order_by("reserved_at", "pk")
            .first()
        )
        if reservation is None:
            return None
        stock = SpareStock.objects.select_for_update().get(pk=reservation.stock_id)
        stock_before, before = snapshot(stock), snapshot(reservation)
        stock.on_hand = max(stock.on_hand - 1, 0)
        stock.save(update_fields=["on_hand", "updated_at"])
        reservation.status = ReservationStatus.CONSUMED
        reservation.consumed_at = swap.swapped_at
        reservation.swap = swap
        reservation.save(update_fields=["status", "consumed_at", "swap"])
        record_change(actor=actor, operation="update", instance=stock, before=stock_before,
                      after=snapshot(stock), note=f"{reference}: spare installed", via=via)
        record_change(actor=actor, operation="update", instance=reservation, before=before,
                      after=snapshot(reservation), note=f"{reference}: consumed", via=via)
    return reservation


def release_spares(
    *, reference: str, actor=None, at: datetime | None = None, via: str = "api"
) -> list[SpareReservation]:
    """The case `reference` closed: the spares it still holds go back to the free count."""
    released = []
    with transaction.atomic():
        for reservation in SpareReservation.objects.select_for_update().filter(
            reference=reference, status=ReservationStatus.RESERVED
        ):
            before = snapshot(reservation)
            reservation.status = ReservationStatus.RELEASED
            reservation.released_at = at or timezone.now()
            reservation.save(update_fields=["status", "released_at"])
            record_change(actor=actor, operation="update", instance=reservation, before=before,
                          after=snapshot(reservation), note=f"{reference}: released", via=via)
            released.append(reservation)
    return released

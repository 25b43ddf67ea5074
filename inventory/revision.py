"""Whole-fleet reads computed once per inventory change, not once per page view.

Validation reads every NIC, port, switch and cable (1 s of server time at scale 20) and the
topology picture every leaf, spine and link; both change only when the inventory's design
changes, which is rare next to how often the pages are opened. So every change bumps
`InventoryRevision.number`, and those reads are cached under the revision they were computed at.

What bumps it: a save or delete of a design model (signals, connected in InventoryConfig.ready,
so no write path through the ORM is forgotten) and the bulk writers that bypass signals (the
topology importer) calling `note_inventory_changed()` themselves. Node and port *state* (Slurm
state, counters, oper status) is written in bulk by the syncs and does not bump it: the cached
reads don't depend on it.

The bump is part of the writing transaction, so the new number becomes visible together with the
change it stands for, and a rolled-back change takes its bump with it (one UPDATE of one row per
saved row; the importer's thousands of rows are one bump). A reader takes the number
before it reads, so what it caches is never older than its key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache
from django.db.models import F
from django.utils import timezone

from inventory.models import InventoryRevision
from inventory.models.revision import new_epoch

T = TypeVar("T")
CACHE_SECONDS = 24 * 3600


def current_revision() -> str | None:
    """'<epoch>.<number>', or None before the inventory was ever changed."""
    row = InventoryRevision.objects.values_list("epoch", "number").first()
    return f"{row[0]}.{row[1]}" if row else None


def note_inventory_changed() -> None:
    """Count a change to the inventory's design (part of the current transaction).

    Every change counts, not one per transaction: a read between two writes of one transaction
    caches what it saw under the number of the first, and the second must not find it.
    """
    # A new epoch with every change: the number of a change that was rolled back is reached
    # again by the next one, its epoch never is, so nothing cached for it is ever served.
    epoch = new_epoch()
    updated = InventoryRevision.objects.filter(pk=1).update(
        number=F("number") + 1, epoch=epoch, changed_at=timezone.now()
    )
    if not updated:
        InventoryRevision.objects.get_or_create(
            pk=1, defaults={"number": 1, "epoch": epoch, "changed_at": timezone.now()}
        )


def cached_by_revision(name: str, compute: Callable[[], T]) -> T:
    """`compute()`'s answer for the inventory as it is now, computed once per revision."""
    revision = current_revision()
    if revision is None:
        return compute()  # an inventory nothing was ever written to: nothing worth keeping
    key = f"inventory:{name}:{revision}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, CACHE_SECONDS)
    return value


# Models whose rows are the fleet's design; allocations and import logs are not.
DESIGN_MODELS = ("Node", "GPU", "NIC", "Switch", "SwitchPort", "Cable", "Pod", "Rack")


def connect_signals(app_config) -> None:
    from django.db.models.signals import post_delete, post_save

    def changed(sender, **kwargs):
        note_inventory_changed()

    for name in DESIGN_MODELS:
        model = app_config.get_model(name)
        # weak=False: `changed` is a closure no one else holds.
        for signal, what in ((post_save, "save"), (post_delete, "delete")):
            signal.connect(
                changed, sender=model, weak=False, dispatch_uid=f"inventory-rev-{what}-{name}"
            )

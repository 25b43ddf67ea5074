import secrets

from django.db import models


def new_epoch() -> str:
    return secrets.token_hex(8)


class InventoryRevision(models.Model):
    """A number that grows with every change to the inventory's design (nodes, NICs, switches,
    ports, cables, pods, racks): the key under which whole-fleet reads such as validation and
    the topology picture are cached (inventory/revision.py). One row."""

    number = models.BigIntegerField(default=0)
    # Random, new with every change: a rolled-back change (or a rebuilt database) that reached
    # the same number never meets the cache entries made for it.
    epoch = models.CharField(max_length=32, default=new_epoch)
    changed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"inventory revision {self.epoch}.{self.number}"

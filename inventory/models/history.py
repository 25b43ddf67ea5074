"""What happened to a slot's hardware: one row per part swapped (the one that left, the one that
arrived), so a GPU replaced under a repair case keeps its inventory row (the node, the index, the
NICs affine to it) while its serials stay findable.

NetBox deletes a module's interfaces when the module is removed and loses cables and addresses on
replacement; here the slot's row is never replaced: `inventory.services.component_replace` changes
its serial in place and adds one of these rows. `reference` names what asked for the swap (a
repair case, "RC-12") as text, because the faults app that owns repair cases sits above inventory.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ComponentKind(models.TextChoices):
    """The parts a vendor replaces on a GPU server (the paper's three: a GPU tray, an NVLink
    module, a NIC transceiver), and the rest that fail in a fleet."""

    GPU = "gpu", "GPU"
    GPU_TRAY = "gpu_tray", "GPU tray / baseboard"
    NVLINK_MODULE = "nvlink_module", "NVLink / NVSwitch module"
    NIC = "nic", "NIC"
    TRANSCEIVER = "transceiver", "Transceiver"
    PSU = "psu", "PSU"
    DISK = "disk", "Disk"
    NODE = "node", "Whole node"


# Kinds whose slot is a row of the inventory (its serial is changed in place); the others are a
# named position in a node ("PSU1", "NVMe2", "tray") known only through their swap history.
ROW_KINDS = frozenset(
    {ComponentKind.GPU, ComponentKind.NIC, ComponentKind.TRANSCEIVER, ComponentKind.NODE}
)


class ComponentSwap(models.Model):
    kind = models.CharField(max_length=16, choices=ComponentKind.choices, db_index=True)
    node = models.ForeignKey(
        "inventory.Node", null=True, blank=True, on_delete=models.SET_NULL, related_name="swaps"
    )
    gpu = models.ForeignKey(
        "inventory.GPU", null=True, blank=True, on_delete=models.SET_NULL, related_name="swaps"
    )
    nic = models.ForeignKey(
        "inventory.NIC", null=True, blank=True, on_delete=models.SET_NULL, related_name="swaps"
    )
    cable = models.ForeignKey(
        "inventory.Cable", null=True, blank=True, on_delete=models.SET_NULL, related_name="swaps",
        help_text="a transceiver's cable",
    )
    cable_side = models.CharField(max_length=1, blank=True, help_text="a or b: the cable's end")
    position = models.CharField(
        max_length=32, blank=True, help_text="where in the node a part without a row sits: PSU1"
    )
    slot = models.CharField(
        max_length=200, help_text="the slot as named when the part was swapped: gpu001 GPU3"
    )
    serial_out = models.CharField(max_length=64, blank=True, db_index=True)
    serial_in = models.CharField(max_length=64, db_index=True)
    uuid_out = models.CharField("UUID out", max_length=64, blank=True)
    uuid_in = models.CharField("UUID in", max_length=64, blank=True)
    mac_out = models.CharField("MAC out", max_length=17, blank=True)
    mac_in = models.CharField("MAC in", max_length=17, blank=True)
    firmware_version_in = models.CharField(
        max_length=64,
        blank=True,
        help_text="the arrived part's firmware as its BMC reports it; optional, and filled by "
        "hand until a BMC driver can read it",
    )
    returned_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="returned_as",
        help_text="the earlier swap that took this serial out: a refurbished part coming back",
    )
    reference = models.CharField(
        max_length=64, blank=True, db_index=True, help_text="what asked for it: RC-12"
    )
    note = models.TextField(blank=True)
    swapped_at = models.DateTimeField(db_index=True)
    swapped_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-swapped_at", "-pk"]
        indexes = [models.Index(fields=["node", "kind", "position"])]

    def __str__(self) -> str:
        return f"{self.slot}: {self.serial_out or '?'} -> {self.serial_in}"

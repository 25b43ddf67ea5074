"""Switches, their ports, and the cables between NICs and ports (paper Table 3)."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q

from inventory.models.compute import NIC, RAILS
from inventory.models.natural_sort import natural_sort_key
from inventory.models.topology import LifecycleStatus, Pod, Rack


class Switch(models.Model):
    class Role(models.TextChoices):
        LEAF = "leaf"
        SPINE = "spine"
        STORAGE = "storage"
        MANAGEMENT = "management"

    hostname = models.CharField(max_length=64, unique=True)
    hostname_sort_key = natural_sort_key("hostname")  # leaf2 < leaf10
    role = models.CharField(max_length=16, choices=Role.choices, db_index=True)
    pod = models.ForeignKey(
        Pod, null=True, blank=True, on_delete=models.PROTECT, related_name="switches"
    )
    rail = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The rail a leaf serves (0-7); leafs only"
    )
    rack = models.ForeignKey(
        Rack, null=True, blank=True, on_delete=models.PROTECT, related_name="switches"
    )
    status = models.CharField(
        max_length=16, choices=LifecycleStatus.choices, default=LifecycleStatus.PLANNED
    )
    serial = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=100, blank=True)
    asic = models.CharField("ASIC", max_length=100, blank=True)
    nos = models.CharField("NOS", max_length=50, blank=True, help_text="e.g. SONiC")
    nos_version = models.CharField("NOS version", max_length=50, blank=True)
    management_address = models.GenericIPAddressField(null=True, blank=True, unique=True)
    # A name the fabric drivers look up in the secrets store; never a password or key.
    credentials_ref = models.CharField(
        max_length=200,
        blank=True,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9_./:-]*$",
                "A reference name into the secrets store (letters, digits, _ . / : -).",
            )
        ],
        help_text="Name of the credentials in the secrets store, e.g. sonic/leaf",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["hostname_sort_key", "hostname"]
        verbose_name_plural = "switches"
        constraints = [
            models.CheckConstraint(
                condition=~Q(role="leaf") | Q(pod__isnull=False), name="switch_leaf_has_pod"
            ),
            models.CheckConstraint(
                condition=Q(rail__isnull=True)
                | Q(role="leaf", rail__isnull=False, rail__gte=0, rail__lt=RAILS),
                name="switch_rail_0_7_leafs_only",
            ),
            models.UniqueConstraint(
                fields=["pod", "rail"],
                condition=Q(rail__isnull=False),
                name="switch_one_leaf_per_rail_per_pod",
            ),
        ]

    def __str__(self) -> str:
        return self.hostname


class SwitchPort(models.Model):
    """A switch interface, or the front-panel cage of a broken-out port.

    SONiC names interfaces by their first lane: an unbroken 800G cage i is `Ethernet{8i}`; broken
    out 2x400G it becomes `Ethernet{8i}` and `Ethernet{8i+4}`. Because the first half keeps the
    cage's interface name, a broken-out cage is kept as its own row named `Port{i+1}` (with
    `breakout_mode` set) and its halves point to it through `breakout_parent`. Cables land on
    interfaces, never on a broken-out cage.
    """

    class LinkStatus(models.TextChoices):
        UP = "up"
        DOWN = "down"

    switch = models.ForeignKey(Switch, on_delete=models.CASCADE, related_name="ports")
    name = models.CharField(max_length=64, help_text="SONiC name, e.g. Ethernet0")
    name_sort_key = natural_sort_key("name")  # Ethernet2 < Ethernet10
    alias = models.CharField(max_length=64, blank=True, help_text="e.g. Eth1/1(Port1)")
    index = models.PositiveIntegerField(
        default=0, help_text="First lane number, for ordering (Ethernet264 -> 264)"
    )
    speed_gbps = models.PositiveIntegerField(default=800)
    lanes = models.PositiveSmallIntegerField(default=8)
    breakout_mode = models.CharField(
        max_length=16, blank=True, help_text="Set on a broken-out cage, e.g. 2x400G"
    )
    breakout_parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="breakout_children"
    )
    # As last seen on the switch by the fabric app; blank until polled.
    admin_status = models.CharField(max_length=4, choices=LinkStatus.choices, blank=True)
    oper_status = models.CharField(max_length=4, choices=LinkStatus.choices, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    description = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["switch__hostname_sort_key", "index", "name_sort_key"]
        constraints = [
            models.UniqueConstraint(fields=["switch", "name"], name="switchport_name_unique"),
            models.CheckConstraint(condition=Q(speed_gbps__gt=0), name="switchport_speed_positive"),
            models.CheckConstraint(
                condition=Q(lanes__gte=1, lanes__lte=16), name="switchport_lanes_1_16"
            ),
            models.CheckConstraint(
                condition=Q(breakout_parent__isnull=True) | ~Q(breakout_parent=F("pk")),
                name="switchport_not_own_parent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.switch.hostname}:{self.name}"


class CableStatus(models.TextChoices):
    PLANNED = "planned"
    CONNECTED = "connected"
    FAULTY = "faulty"
    DECOMMISSIONED = "decommissioned"


class Cable(models.Model):
    """A cable with two ends, A and B; each end is exactly one NIC or one switch port.

    The database enforces, per end column, that a NIC or port is in at most one cable that is not
    decommissioned (partial unique constraints). A NIC or port appearing on side A of one cable
    and side B of another cannot be expressed as a column constraint portably; the validator's
    `double_cabled` rule reports it.
    """

    class Type(models.TextChoices):
        SR8_800G = "800GBASE-SR8", "800GBASE-SR8 (switch to switch)"
        DR8_800G = "800GBASE-DR8", "800GBASE-DR8"
        BREAKOUT_2DR4_800G = "800GBASE-2DR4", "800GBASE-2DR4 (2x400G breakout)"
        DR4_400G = "400GBASE-DR4", "400GBASE-DR4"
        DAC_400G = "400G-DAC", "400G direct attach copper"
        BASE_T_1G = "1000BASE-T", "1000BASE-T"

    a_nic = models.ForeignKey(
        NIC, null=True, blank=True, on_delete=models.PROTECT, related_name="cables_as_a"
    )
    a_port = models.ForeignKey(
        SwitchPort, null=True, blank=True, on_delete=models.PROTECT, related_name="cables_as_a"
    )
    b_nic = models.ForeignKey(
        NIC, null=True, blank=True, on_delete=models.PROTECT, related_name="cables_as_b"
    )
    b_port = models.ForeignKey(
        SwitchPort, null=True, blank=True, on_delete=models.PROTECT, related_name="cables_as_b"
    )
    type = models.CharField(max_length=32, choices=Type.choices)
    length_m = models.DecimalField(max_digits=6, decimal_places=2, null=True, blank=True)
    a_transceiver_serial = models.CharField(max_length=64, blank=True)
    b_transceiver_serial = models.CharField(max_length=64, blank=True)
    status = models.CharField(
        max_length=16, choices=CableStatus.choices, default=CableStatus.PLANNED, db_index=True
    )
    label = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(a_nic__isnull=False, a_port__isnull=True)
                | Q(a_nic__isnull=True, a_port__isnull=False),
                name="cable_a_is_one_nic_or_port",
            ),
            models.CheckConstraint(
                condition=Q(b_nic__isnull=False, b_port__isnull=True)
                | Q(b_nic__isnull=True, b_port__isnull=False),
                name="cable_b_is_one_nic_or_port",
            ),
            models.CheckConstraint(
                condition=(Q(a_nic__isnull=True) | Q(b_nic__isnull=True) | ~Q(a_nic=F("b_nic")))
                & (Q(a_port__isnull=True) | Q(b_port__isnull=True) | ~Q(a_port=F("b_port"))),
                name="cable_ends_differ",
            ),
            models.CheckConstraint(
                condition=Q(length_m__isnull=True) | Q(length_m__gt=0),
                name="cable_length_positive",
            ),
            *[
                models.UniqueConstraint(
                    fields=[end],
                    condition=~Q(status=CableStatus.DECOMMISSIONED),
                    name=f"cable_{end}_in_one_active_cable",
                )
                for end in ("a_nic", "a_port", "b_nic", "b_port")
            ],
        ]

    def __str__(self) -> str:
        return f"Cable #{self.pk}"

    @property
    def is_active(self) -> bool:
        return self.status != CableStatus.DECOMMISSIONED

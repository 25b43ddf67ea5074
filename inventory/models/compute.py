"""Compute nodes and what is inside them: GPUs and NIC functions (paper Tables 1 and 2)."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from inventory.models.natural_sort import natural_sort_key
from inventory.models.topology import LifecycleStatus, Pod, Rack

GPUS_PER_NODE = 8
RAILS = 8  # rail-optimised fabric: one rail per GPU, rails 0-7


class Node(models.Model):
    """A GPU server. Hardware facts come from the topology spec; Slurm facts from the jobs app."""

    hostname = models.CharField(max_length=64, unique=True)
    hostname_sort_key = natural_sort_key("hostname")  # gpu2 < gpu10 < gpu100
    serial = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=100, blank=True)
    cpu_model = models.CharField(max_length=100, blank=True)
    cpu_count = models.PositiveSmallIntegerField(default=0, help_text="CPU sockets")
    memory_gb = models.PositiveIntegerField(default=0)
    disks = models.JSONField(
        default=list,
        blank=True,
        help_text='Disk groups, e.g. [{"role": "scratch", "count": 4, "size_gb": 7680, '
        '"interface": "NVMe"}]',
    )
    pod = models.ForeignKey(
        Pod, null=True, blank=True, on_delete=models.PROTECT, related_name="nodes"
    )
    rack = models.ForeignKey(
        Rack, null=True, blank=True, on_delete=models.PROTECT, related_name="nodes"
    )
    status = models.CharField(
        max_length=16,
        choices=LifecycleStatus.choices,
        default=LifecycleStatus.PLANNED,
        db_index=True,
    )
    # Filled by the jobs app's node-state sync; blank until Slurm has been read.
    slurm_state = models.CharField(max_length=32, blank=True, db_index=True)
    slurm_reason = models.TextField(blank=True)
    slurm_state_changed_at = models.DateTimeField(null=True, blank=True)
    # A reboot Slurm holds for the node (`scontrol reboot`): "requested" (REBOOT_REQUESTED,
    # sinfo's `@`: waiting for its jobs), "issued" (REBOOT_ISSUED, `^`: booting), or blank.
    slurm_reboot = models.CharField(
        max_length=16, blank=True, choices=[("requested", "requested"), ("issued", "issued")]
    )
    # The node's BMC (Redfish). The address is NetBox's `oob_ip`; the credentials are a name in
    # the BMC credentials store (BMC_CREDENTIALS_FILE), never a password.
    bmc_address = models.GenericIPAddressField(
        "BMC address", null=True, blank=True, help_text="The BMC's out-of-band IP (Redfish)"
    )
    bmc_system_id = models.CharField(
        "BMC system id",
        max_length=128,
        blank=True,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9_.:-]*$", "A Redfish resource id (letters, digits, _ . : -)."
            )
        ],
        help_text="The ComputerSystem's Id under /redfish/v1/Systems/ (blank: the only one)",
    )
    bmc_credentials_ref = models.CharField(
        "BMC credentials",
        max_length=200,
        blank=True,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9_./:-]*$",
                "A reference name into the secrets store (letters, digits, _ . / : -).",
            )
        ],
        help_text="Name of the BMC login in the secrets store, e.g. redfish/supermicro",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["hostname_sort_key", "hostname"]
        constraints = [
            models.UniqueConstraint(
                fields=["serial"], condition=~Q(serial=""), name="node_serial_unique"
            ),
            # One BMC serves one system here; several systems behind one address (a chassis
            # manager, the test emulator) are reached through BMC_ENDPOINTS instead.
            models.UniqueConstraint(
                fields=["bmc_address"],
                condition=Q(bmc_address__isnull=False),
                name="node_bmc_address_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.hostname


class GPU(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField(help_text="0-7, as nvidia-smi numbers them")
    uuid = models.CharField("UUID", max_length=64, blank=True, help_text="GPU-xxxxxxxx-...")
    serial = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=100, blank=True)
    pci_bus_id = models.CharField("PCI bus id", max_length=32, blank=True)

    class Meta:
        ordering = ["node__hostname_sort_key", "index"]
        verbose_name = "GPU"
        constraints = [
            models.UniqueConstraint(fields=["node", "index"], name="gpu_index_unique_per_node"),
            models.CheckConstraint(
                condition=Q(index__gte=0, index__lt=GPUS_PER_NODE), name="gpu_index_0_7"
            ),
            models.UniqueConstraint(fields=["uuid"], condition=~Q(uuid=""), name="gpu_uuid_unique"),
            models.UniqueConstraint(
                fields=["node", "pci_bus_id"],
                condition=~Q(pci_bus_id=""),
                name="gpu_pci_bus_id_unique_per_node",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node.hostname} GPU{self.index}"


class NIC(models.Model):
    """One NIC function of a node (Table 2): a rail, storage, bond, management or reserved port."""

    class Role(models.TextChoices):
        RAIL = "rail"  # inter-node RoCEv2, one per GPU
        STORAGE = "storage"
        STORAGE_BOND = "storage_bond"
        MANAGEMENT = "management"
        RESERVED = "reserved"

    class Affinity(models.TextChoices):
        PIX = "PIX", "PIX (same PCIe switch)"
        NODE = "NODE", "NODE (same NUMA node)"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="nics")
    device = models.CharField(max_length=32, help_text="mlx5_0, mlx5_bond_0, eno1")
    netdev = models.CharField(max_length=32, blank=True, help_text="Linux interface name")
    mac = models.CharField("MAC", max_length=17, blank=True, help_text="lower case, colons")
    serial = models.CharField(
        max_length=64, blank=True, help_text="the adapter's serial; changes when it is replaced"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    rail = models.PositiveSmallIntegerField(null=True, blank=True, help_text="0-7, rail NICs only")
    affinity_gpu = models.ForeignKey(
        GPU, null=True, blank=True, on_delete=models.SET_NULL, related_name="affine_nics"
    )
    affinity_kind = models.CharField(max_length=4, choices=Affinity.choices, blank=True)
    speed_gbps = models.PositiveIntegerField(default=400)
    bond_members = models.JSONField(
        default=list, blank=True, help_text="Devices bonded into this one, e.g. mlx5_9, mlx5_10"
    )

    class Meta:
        ordering = ["node__hostname_sort_key", "device"]
        verbose_name = "NIC"
        indexes = [models.Index(fields=["role", "rail"])]
        constraints = [
            models.UniqueConstraint(fields=["node", "device"], name="nic_device_unique_per_node"),
            models.CheckConstraint(
                condition=Q(role="rail", rail__isnull=False, rail__gte=0, rail__lt=RAILS)
                | (~Q(role="rail") & Q(rail__isnull=True)),
                name="nic_rail_0_7_iff_rail_role",
            ),
            models.UniqueConstraint(
                fields=["node", "rail"],
                condition=Q(rail__isnull=False),
                name="nic_one_per_rail_per_node",
            ),
            models.UniqueConstraint(fields=["mac"], condition=~Q(mac=""), name="nic_mac_unique"),
            models.CheckConstraint(
                condition=Q(affinity_kind__in=["", "PIX", "NODE"]), name="nic_affinity_kind_valid"
            ),
            models.CheckConstraint(condition=Q(speed_gbps__gt=0), name="nic_speed_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.node.hostname}:{self.device}"

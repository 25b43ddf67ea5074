"""The paper's fault history (SAKURAONE, January-March 2025) as tickets and repair cases, so the
demo's statistics page and the tests read back Table 13 and Observation 6 from real rows.

What the paper gives: 21 faults by category (Table 13: 9/4/1/5/1/1), by month (13 in January,
5 in February, 3 in March: the burn-in), 10 fixed by a node-level restart, and 3 vendor-assisted
replacements (a GPU tray, an NVLink module, a NIC transceiver) with lead times from days to
weeks. What it does not give (its records are Slack logs with imprecise timestamps): the days,
the nodes and the exact lead times; those below are illustrative and only their month counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import transaction

from faults.models import Category, FaultTicket, RecoveryMethod, RepairCase
from faults.repair_workflow import RepairStatus
from faults.workflow import Status
from inventory.models import ComponentKind

# Seeded tickets are found again by this fingerprint prefix, which is what makes the seed
# idempotent; intake never produces it (its fingerprints are `<component>|<kind>`).
FINGERPRINT_PREFIX = "seed:sakuraone-2025:"


@dataclass(frozen=True)
class SeededFault:
    day: tuple[int, int]  # (month, day) in 2025
    category: str
    subtype: str
    recovery: str
    summary: str
    # For the three vendor replacements: (part replaced, days waiting for the part).
    replaced: tuple[str, int] | None = None


R = RecoveryMethod
PAPER_FAULT_HISTORY: tuple[SeededFault, ...] = (
    # January 2025: 13 (the first month of full-scale operation).
    SeededFault((1, 3), Category.GPU, "ecc", R.WARM_REBOOT, "GPU uncorrectable ECC error"),
    SeededFault((1, 5), Category.GPU, "ecc", R.WARM_REBOOT, "GPU uncorrectable ECC error"),
    SeededFault((1, 7), Category.GPU, "unresponsive", R.WARM_REBOOT, "GPU fell off the bus"),
    SeededFault((1, 8), Category.GPU, "hardware_error", R.GPU_RESET, "GPU XID 79"),
    SeededFault((1, 10), Category.GPU, "unresponsive", R.GPU_RESET, "GPU unresponsive"),
    SeededFault(
        (1, 12),
        Category.GPU,
        "hardware_error",
        R.PART_REPLACED,
        "GPU hardware error recurring after reset: tray replaced",
        replaced=(ComponentKind.GPU_TRAY, 16),
    ),
    SeededFault((1, 14), Category.NVLINK_NVSWITCH_PCIE, "nvlink", R.COLD_REBOOT, "NVLink down"),
    SeededFault(
        (1, 16), Category.NVLINK_NVSWITCH_PCIE, "pcie_switch", R.COLD_REBOOT, "PCIe switch error"
    ),
    SeededFault(
        (1, 18),
        Category.NVLINK_NVSWITCH_PCIE,
        "nvswitch",
        R.PART_REPLACED,
        "NVSwitch fatal error: NVLink module replaced",
        replaced=(ComponentKind.NVLINK_MODULE, 9),
    ),
    SeededFault((1, 21), Category.INTERCONNECT_SWITCH, "leaf", R.WARM_REBOOT, "Leaf switch reboot"),
    SeededFault(
        (1, 24), Category.INTERCONNECT_SWITCH, "leaf", R.WARM_REBOOT, "Leaf switch CPU failure"
    ),
    SeededFault(
        (1, 27),
        Category.INTERCONNECT_SWITCH,
        "leaf",
        R.CONFIGURATION_FIXED,
        "MAC-learning anomaly: cross-rail degradation",
    ),
    SeededFault(
        (1, 30),
        Category.MISCONFIGURATION,
        "network",
        R.CONFIGURATION_FIXED,
        "IP address misconfiguration on a maintenance node",
    ),
    # February 2025: 5.
    SeededFault((2, 4), Category.GPU, "ecc", R.GPU_RESET, "GPU uncorrectable ECC error"),
    SeededFault((2, 11), Category.GPU, "hardware_error", R.GPU_RESET, "GPU XID 48"),
    SeededFault((2, 15), Category.NVLINK_NVSWITCH_PCIE, "nvlink", R.GPU_RESET, "NVLink errors"),
    SeededFault(
        (2, 19), Category.INTERCONNECT_SWITCH, "spine", R.WARM_REBOOT, "Spine switch reboot"
    ),
    SeededFault(
        (2, 24),
        Category.NIC_TRANSCEIVER,
        "transceiver",
        R.PART_REPLACED,
        "NIC transceiver failure: transceiver replaced",
        replaced=(ComponentKind.TRANSCEIVER, 4),
    ),
    # March 2025: 3.
    SeededFault((3, 6), Category.GPU, "ecc", R.NONE_NEEDED, "GPU correctable ECC burst"),
    SeededFault((3, 13), Category.INTERCONNECT_SWITCH, "leaf", R.WARM_REBOOT, "Leaf switch reboot"),
    SeededFault((3, 20), Category.STORAGE_SWITCH, "reboot", R.WARM_REBOOT, "Storage switch reboot"),
)

SEEDED_VENDOR = "Server vendor"


@transaction.atomic
def seed_fault_history() -> tuple[int, int]:
    """Create the paper's tickets and repair cases that are not there yet; returns how many
    (tickets, cases) it created. Running it again creates nothing."""
    created_tickets = created_cases = 0
    for number, fault in enumerate(PAPER_FAULT_HISTORY, start=1):
        month, day = fault.day
        detected = datetime(2025, month, day, 9, 0, tzinfo=UTC)
        ticket, created = FaultTicket.objects.get_or_create(
            fingerprint=f"{FINGERPRINT_PREFIX}{number:02d}",
            defaults=_ticket_fields(fault, detected),
        )
        created_tickets += created
        if fault.replaced and not ticket.repair_cases.exists():
            kind, wait_days = fault.replaced
            requested = detected + timedelta(hours=6)
            received = requested + timedelta(days=wait_days)
            RepairCase.objects.create(
                ticket=ticket,
                vendor=SEEDED_VENDOR,
                vendor_case_number=f"SEED-2025-{number:02d}",
                component=kind,
                status=RepairStatus.CLOSED,
                opened_at=detected + timedelta(hours=2),
                waiting_for_part_at=requested,
                part_received_at=received,
                installed_at=received + timedelta(hours=3),
                closed_at=received + timedelta(hours=8),
                note="Seeded from the SAKURAONE paper (vendor-assisted replacement).",
            )
            created_cases += 1
    return created_tickets, created_cases


def _ticket_fields(fault: SeededFault, detected: datetime) -> dict:
    # A vendor replacement is resolved when the part is in; the rest within hours.
    if fault.replaced:
        resolved = detected + timedelta(days=fault.replaced[1], hours=9)
    else:
        resolved = detected + timedelta(hours=4)
    return {
        "category": fault.category,
        "subtype": fault.subtype,
        "status": Status.CLOSED,
        "summary": fault.summary,
        "sources": ["user_report"],
        "detected_at": detected,
        "acknowledged_at": detected + timedelta(minutes=20),
        "triaged_at": detected + timedelta(minutes=40),
        "resolved_at": resolved,
        "verified_at": resolved + timedelta(hours=1),
        "closed_at": resolved + timedelta(hours=2),
        "recovery_method": fault.recovery,
        "rma_part": ComponentKind(fault.replaced[0]).label if fault.replaced else "",
    }

"""Statistics on the paper's 21 faults (Observation 6, Table 13): counts and shares exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from faults.models import Category, FaultTicket, FaultTransition
from faults.statistics import fault_statistics
from faults.workflow import Status
from portal.models import Role

# (month, category, recovery): 13 in January, 5 in February, 3 in March 2025;
# categories 9/4/1/5/1/1.
# Node-level restarts fixed 10; vendor replacement (GPU tray, NVLink module, NIC transceiver) 3.
PAPER_FAULTS = (
    [(1, Category.GPU, "warm_reboot")] * 3 + [(1, Category.GPU, "gpu_reset")] * 2
    + [(1, Category.GPU, "part_replaced")]
    + [(1, Category.NVLINK_NVSWITCH_PCIE, "cold_reboot")] * 2
    + [(1, Category.NVLINK_NVSWITCH_PCIE, "part_replaced")]
    + [(1, Category.INTERCONNECT_SWITCH, "warm_reboot")] * 2
    + [(1, Category.INTERCONNECT_SWITCH, "configuration_fixed")]
    + [(1, Category.MISCONFIGURATION, "configuration_fixed")]
    + [(2, Category.GPU, "gpu_reset")] * 2 + [(2, Category.NVLINK_NVSWITCH_PCIE, "gpu_reset")]
    + [(2, Category.INTERCONNECT_SWITCH, "warm_reboot")]
    + [(2, Category.NIC_TRANSCEIVER, "part_replaced")]
    + [(3, Category.GPU, "none_needed"), (3, Category.INTERCONNECT_SWITCH, "warm_reboot"),
       (3, Category.STORAGE_SWITCH, "warm_reboot")]
)
TABLE_13 = [
    ("gpu", "GPU (ECC / HW error / unresponsive)", 9, "42.9"),
    ("nvlink_nvswitch_pcie", "NVLink / NVSwitch / PCIe switch", 4, "19.0"),
    ("nic_transceiver", "NIC / transceiver", 1, "4.8"),
    ("interconnect_switch", "Interconnect switch (leaf/spine)", 5, "23.8"),
    ("storage_switch", "Storage switch", 1, "4.8"),
    ("misconfiguration", "Misconfiguration", 1, "4.8"),
]
VENDOR_WAIT = timedelta(days=6)


@pytest.fixture
def paper_faults(fleet):
    """The 21 faults, all closed: acknowledged after 15 minutes, resolved after 2 hours (vendor
    cases after six days awaiting the vendor); plus one false positive that must not count."""
    tickets = []
    for number, (month, category, recovery) in enumerate(PAPER_FAULTS):
        detected = datetime(2025, month, 2 + number, 8, 0, tzinfo=UTC)
        vendor = recovery == "part_replaced"
        resolved = detected + (VENDOR_WAIT + timedelta(hours=2) if vendor else timedelta(hours=2))
        ticket = FaultTicket.objects.create(
            category=category, status=Status.CLOSED, summary=f"fault {number}",
            node=fleet.nodes[number % 2] if category in ("gpu", "nvlink_nvswitch_pcie") else None,
            gpu_serial=f"SERIAL{number % 3}" if category == "gpu" else "",
            detected_at=detected, acknowledged_at=detected + timedelta(minutes=15),
            resolved_at=resolved, recovery_method=recovery,
        )
        if vendor:
            entered = detected + timedelta(hours=1)
            FaultTransition.objects.create(ticket=ticket, from_status="mitigating",
                                           to_status="awaiting_vendor", at=entered)
            FaultTransition.objects.create(ticket=ticket, from_status="awaiting_vendor",
                                           to_status="resolved", at=entered + VENDOR_WAIT)
        tickets.append(ticket)
    FaultTicket.objects.create(
        category=Category.GPU, status=Status.FALSE_POSITIVE, summary="not a fault",
        detected_at=datetime(2025, 1, 20, tzinfo=UTC),
    )
    return tickets


def test_table_13_counts_and_shares_exactly(paper_faults):
    stats = fault_statistics()
    rows = [(r["category"], r["label"], r["count"], str(r["share"])) for r in stats["by_category"]]
    assert rows == TABLE_13
    assert stats["total"] == 21 and stats["total_share"] == Decimal("100.0")


def test_recovery_methods(paper_faults):
    by_method = {r["method"]: r["count"] for r in fault_statistics()["by_recovery_method"]}
    # The paper: node-level restarts fixed 10 of 21; three needed vendor replacement.
    assert by_method["warm_reboot"] + by_method["cold_reboot"] == 10
    assert by_method["part_replaced"] == 3
    assert sum(by_method.values()) == 21
    shares = {r["method"]: str(r["share"]) for r in fault_statistics()["by_recovery_method"]}
    assert shares["part_replaced"] == "14.3"


def test_burn_in_by_month(paper_faults):
    months = fault_statistics()["by_month"]
    assert [(m["month"], m["count"]) for m in months] == [
        ("2025-01", 13), ("2025-02", 5), ("2025-03", 3)]
    assert months[0]["by_category"]["gpu"] == 6 and months[2]["by_category"]["storage_switch"] == 1


def test_mtta_mttr_vendor_time_and_mtbf(paper_faults):
    stats = fault_statistics(
        start=datetime(2025, 1, 1, tzinfo=UTC), end=datetime(2025, 4, 1, tzinfo=UTC)
    )
    overall = stats["overall"]
    assert overall["mtta_hours"] == 0.25
    # 18 faults in 2 hours, 3 vendor cases in 6 days + 2 hours.
    assert overall["mttr_hours"] == round((18 * 2 + 3 * (144 + 2)) / 21, 3)
    assert overall["awaiting_vendor_hours"] == 3 * 144
    nic = next(r for r in stats["by_category"] if r["category"] == "nic_transceiver")
    assert nic["mttr_hours"] == 146 and nic["awaiting_vendor_hours"] == 144
    period_hours = (31 + 28 + 31) * 24
    assert stats["period"]["hours"] == period_hours
    by_node = {row["node"]: row for row in stats["mtbf_by_node"]}
    # GPU and NVLink faults alternate between the two nodes: 13 of them.
    assert by_node["gpu001"]["faults"] + by_node["gpu002"]["faults"] == 13
    assert by_node["gpu001"]["mtbf_hours"] == round(period_hours / by_node["gpu001"]["faults"], 3)
    by_gpu = {row["gpu_serial"]: row["faults"] for row in stats["mtbf_by_gpu_serial"]}
    assert sum(by_gpu.values()) == 9 and set(by_gpu) == {"SERIAL0", "SERIAL1", "SERIAL2"}


def test_statistics_api(paper_faults, api_as):
    body = api_as(Role.VIEWER).get("/api/faults/statistics/").json()
    assert [row["share"] for row in body["by_category"]] == [42.9, 19.0, 4.8, 23.8, 4.8, 4.8]
    assert [row["count"] for row in body["by_category"]] == [9, 4, 1, 5, 1, 1]
    assert body["total"] == 21 and body["total_share"] == 100.0
    february = api_as(Role.VIEWER).get(
        "/api/faults/statistics/", {"start": "2025-02-01T00:00Z", "end": "2025-03-01T00:00Z"}
    ).json()
    assert february["total"] == 5
    bad = api_as(Role.VIEWER).get("/api/faults/statistics/", {"start": "last week"})
    assert bad.status_code == 400 and "start" in bad.json()


def test_statistics_period_with_a_far_offset_is_converted_to_utc(paper_faults, api_as):
    # -19:53 is a valid RFC 3339 offset that PostgreSQL refuses unconverted (it was a 500).
    response = api_as(Role.VIEWER).get(
        "/api/faults/statistics/", {"start": "2025-01-31T04:07:00-19:53"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["period"]["start"].startswith("2025-02-01T00:00:00")
    assert response.json()["total"] == 8


@pytest.mark.parametrize("end", ["2025-13-01T00:00Z", "2025-01-01T00:00+24:00", "x\u0000"])
def test_statistics_period_that_is_no_time_is_400_naming_it(paper_faults, api_as, end):
    response = api_as(Role.VIEWER).get("/api/faults/statistics/", {"end": end})
    assert response.status_code == 400 and "end" in response.json()

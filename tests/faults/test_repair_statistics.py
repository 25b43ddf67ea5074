"""Issue 25 item 4: repair statistics and the burn-in per component type in the statistics API
and page, read back from the seeded history of the paper (13/5/3 faults by month, three vendor
replacements: a GPU tray, an NVLink module, a NIC transceiver)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from portal.models import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded():
    call_command("seed_fault_history", stdout=StringIO())


def test_statistics_api_carries_failures_per_component_type_per_month(seeded, api_as):
    body = api_as(Role.VIEWER).get("/api/faults/statistics/").json()

    months = body["failures_by_component_month"]
    assert [(row["month"], row["failures"]) for row in months] == [
        ("2025-01", 13), ("2025-02", 5), ("2025-03", 3)]
    january = {row["component"]: row["failures"] for row in months[0]["by_component"]}
    assert january == {"gpu": 6, "nvlink_nvswitch_pcie": 3, "nic_transceiver": 0,
                       "interconnect_switch": 3, "storage_switch": 0, "misconfiguration": 1}
    # The three replacements, each in the month of the failure that needed it, by part type.
    assert [(row["month"], row["replacements"],
             [(part["component"], part["replacements"]) for part in row["replaced_parts"]])
            for row in months] == [
        ("2025-01", 2, [("gpu_tray", 1), ("nvlink_module", 1)]),
        ("2025-02", 1, [("transceiver", 1)]),
        ("2025-03", 0, []),
    ]
    assert months[1]["replaced_parts"][0]["label"] == "Transceiver"


def test_statistics_api_carries_the_repair_statistics(seeded, api_as):
    body = api_as(Role.VIEWER).get("/api/faults/statistics/").json()

    rows = {row["component"]: row for row in body["repair_statistics"]}
    assert set(rows) == {"gpu_tray", "nvlink_module", "transceiver"}
    assert rows["gpu_tray"] == {
        "component": "gpu_tray", "label": "GPU tray / baseboard", "vendor": "Server vendor",
        "cases": 1, "waiting_for_part_hours": 384.0, "hands_on_hours": 7.0,
        "mttr_hours": 391.0,
    }
    assert rows["transceiver"]["mttr_hours"] == 4 * 24 + 7


def test_statistics_bounds_apply_to_the_repairs_too(seeded, api_as):
    body = api_as(Role.VIEWER).get(
        "/api/faults/statistics/?start=2025-02-01T00:00:00Z&end=2025-03-01T00:00:00Z").json()

    assert [row["component"] for row in body["repair_statistics"]] == ["transceiver"]
    assert [row["month"] for row in body["failures_by_component_month"]] == ["2025-02"]


def test_the_schema_types_the_new_statistics(api_as):
    schema = api_as(Role.VIEWER).get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]

    statistics = components["Statistics"]["properties"]
    assert statistics["repair_statistics"]["items"]["$ref"].endswith("/RepairStatistics")
    assert statistics["failures_by_component_month"]["items"]["$ref"].endswith(
        "/ComponentMonth")
    repair = components["RepairStatistics"]
    assert set(repair["required"]) >= {"component", "vendor", "cases", "waiting_for_part_hours",
                                       "hands_on_hours", "mttr_hours"}
    month = components["ComponentMonth"]["properties"]
    assert month["replaced_parts"]["items"]["$ref"].endswith("/ReplacedParts")


def test_statistics_page_shows_failures_per_component_type_per_month(seeded, make_user):
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    html = client.get("/faults/statistics/").content.decode()

    assert 'id="failures-by-component-month"' in html
    assert ('<tr data-month="2025-01"><td>2025-01</td><td class="num">13</td>'
            '<td class="num">6</td>') in html
    assert "GPU tray / baseboard, NVLink / NVSwitch module</td>" in html
    assert 'id="repair-statistics"' in html

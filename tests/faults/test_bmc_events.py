"""BMC events become tickets: the poll reads each node's event log from the project's Redfish
emulator (scripts/bmc/redfish_mockup_server.py, the HGX-like mockup) through the real Redfish
driver, and files new Warning/Critical entries through the faults de-duplication."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from faults.models import BmcEventCursor, FaultTicket, IntakeRecord, Source
from faults.services.bmc_events import poll_bmc_events
from faults.tasks import poll_bmc_events as poll_bmc_events_task
from inventory.models import GPU
from tests.faults.conftest import build_fleet
from tests.inventory.bmc_fixtures import HGX_SYSTEM_ID, MOCKUP_CREDENTIALS_REF


@pytest.fixture
def bmc_fleet(db, mockup_settings, redfish_mockup):
    """The faults fleet with gpu001's BMC the emulator's HGX baseboard."""
    fleet = build_fleet()
    node = fleet.nodes[0]
    node.bmc_system_id = HGX_SYSTEM_ID
    node.bmc_credentials_ref = MOCKUP_CREDENTIALS_REF
    node.save()
    mockup_settings.BMC_ENDPOINTS = {node.hostname: redfish_mockup.url}
    return fleet


def _minutes_ago(minutes: int) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes)).replace(microsecond=0).isoformat()


def test_a_psu_entry_opens_a_ticket_with_its_own_text_and_time(bmc_fleet, redfish_mockup):
    created = _minutes_ago(3)
    redfish_mockup.append_event(
        Severity="Critical",
        SensorType="Power Supply / Converter",
        Created=created,
        Message="Power supply PSU2 input lost (AC).",
    )
    result = poll_bmc_events()
    assert (result.nodes_polled, result.tickets_opened, result.unreachable) == (1, 1, 0)
    ticket = FaultTicket.objects.get()
    assert ticket.node == bmc_fleet.nodes[0]
    assert ticket.summary == "gpu001 BMC: Power supply PSU2 input lost (AC)."
    assert ticket.detected_at == datetime.fromisoformat(created)
    assert ticket.sources == [Source.BMC]
    assert ticket.category == "unclassified"  # Table 13 has no row for power supplies
    assert ticket.timeline.filter(text__contains="PSU2 input lost").exists()
    intake = IntakeRecord.objects.get(channel=Source.BMC)
    assert intake.accepted and list(intake.tickets.all()) == [ticket]
    assert intake.payload["message"] == "Power supply PSU2 input lost (AC)."


def test_the_same_entry_polled_twice_is_one_ticket_and_a_new_one_joins_it(
    bmc_fleet, redfish_mockup
):
    redfish_mockup.append_event(
        Severity="Warning",
        SensorType="Fan",
        Created=_minutes_ago(5),
        Message="Fan FAN3 speed below lower critical threshold.",
    )
    first = poll_bmc_events()
    second = poll_bmc_events()
    assert (first.tickets_opened, second.tickets_opened, second.tickets_joined) == (1, 0, 0)
    assert FaultTicket.objects.count() == 1
    # A later entry about the same kind of part on the same node joins the open ticket.
    redfish_mockup.append_event(
        Severity="Critical", SensorType="Fan", Created=_minutes_ago(1), Message="Fan FAN3 stopped."
    )
    third = poll_bmc_events()
    assert (third.tickets_opened, third.tickets_joined) == (0, 1)
    ticket = FaultTicket.objects.get()
    assert ticket.event_count == 2


def test_entries_of_the_same_second_are_each_read_once(bmc_fleet, redfish_mockup):
    same_second = _minutes_ago(2)
    redfish_mockup.append_event(
        Severity="Critical",
        SensorType="Temperature",
        Created=same_second,
        Message="Inlet temperature critical.",
    )
    poll_bmc_events()
    redfish_mockup.append_event(
        Severity="Critical",
        SensorType="Memory",
        Created=same_second,
        Message="DIMM B3 uncorrectable error.",
    )
    result = poll_bmc_events()
    # The faults de-duplication joins an untriaged event to the node's open ticket.
    assert (result.tickets_opened, result.tickets_joined) == (0, 1)
    assert FaultTicket.objects.get().event_count == 2
    again = poll_bmc_events()
    assert (again.tickets_opened, again.tickets_joined) == (0, 0)
    cursor = BmcEventCursor.objects.get(node=bmc_fleet.nodes[0])
    assert cursor.last_created == datetime.fromisoformat(same_second)
    assert len(cursor.ids_at_last_created) == 2


def test_an_informational_entry_opens_no_ticket(bmc_fleet, redfish_mockup):
    redfish_mockup.append_event(
        Severity="OK",
        SensorType="Power Supply / Converter",
        Created=_minutes_ago(1),
        Message="Power supply PSU2 restored.",
    )
    redfish_mockup.append_event(
        Severity="Warning",
        SensorType="Session",
        Created=_minutes_ago(1),
        Message="Login from 10.0.0.5 failed.",
    )
    result = poll_bmc_events()
    assert result.entries_read >= 3 and result.tickets_opened == 0
    assert not FaultTicket.objects.exists()
    assert BmcEventCursor.objects.get(node=bmc_fleet.nodes[0]).health == "OK"


def test_a_gpu_entry_is_matched_to_the_inventory_gpu_by_serial_not_by_number(
    bmc_fleet, redfish_mockup
):
    # The BMC's GPU_SXM_3 is the host's GPU index 5 on this node: only the serial says so.
    node = bmc_fleet.nodes[0]
    GPU.objects.filter(node=node, index=5).update(serial="1654923000003")
    redfish_mockup.append_event(
        Severity="Critical",
        SensorType="Processor",
        Created=_minutes_ago(1),
        Message="GPU_SXM_3 has an uncorrectable ECC error.",
    )
    poll_bmc_events()
    ticket = FaultTicket.objects.get()
    assert (ticket.category, ticket.subtype) == ("gpu", "hardware_error")
    assert ticket.gpu.index == 5 and ticket.gpu_serial == "1654923000003"


def test_old_history_on_a_first_poll_is_not_news(bmc_fleet, redfish_mockup):
    redfish_mockup.append_event(
        Severity="Critical",
        SensorType="Fan",
        Created=_minutes_ago(60 * 24 * 30),
        Message="Fan FAN1 failed.",
    )
    assert poll_bmc_events().tickets_opened == 0
    assert not FaultTicket.objects.exists()


def test_an_unreachable_bmc_is_recorded_and_the_others_still_polled(
    bmc_fleet, redfish_mockup, mockup_settings
):
    silent = bmc_fleet.nodes[1]
    silent.bmc_system_id = HGX_SYSTEM_ID
    silent.bmc_credentials_ref = MOCKUP_CREDENTIALS_REF
    silent.save()
    # Port 9 (discard) on loopback: nothing listens, the connection is refused.
    mockup_settings.BMC_ENDPOINTS = {
        **mockup_settings.BMC_ENDPOINTS,
        silent.hostname: "http://127.0.0.1:9",
    }
    redfish_mockup.append_event(
        Severity="Critical", SensorType="Fan", Created=_minutes_ago(1), Message="Fan FAN2 failed."
    )
    result = poll_bmc_events()
    assert (result.nodes_polled, result.unreachable, result.tickets_opened) == (2, 1, 1)
    cursor = BmcEventCursor.objects.get(node=silent)
    assert "unreachable" in cursor.last_error and cursor.polled_at is not None
    assert FaultTicket.objects.get().node == bmc_fleet.nodes[0]


def test_a_run_is_bounded_and_starts_with_the_longest_unpolled(bmc_fleet, mockup_settings):
    mockup_settings.BMC_EVENT_POLL_NODES_PER_RUN = 1
    mockup_settings.BMC_ENDPOINTS = {
        **mockup_settings.BMC_ENDPOINTS,
        "gpu002": "http://127.0.0.1:9",
    }
    assert poll_bmc_events().nodes_polled == 1
    first = BmcEventCursor.objects.get()
    poll_bmc_events()
    second = BmcEventCursor.objects.exclude(pk=first.pk).get()
    assert {first.node.hostname, second.node.hostname} == {"gpu001", "gpu002"}


def test_the_periodic_task_is_registered_and_runs(bmc_fleet, settings):
    assert settings.CELERY_BEAT_SCHEDULE["faults-poll-bmc-events"]["task"] == (
        "faults.tasks.poll_bmc_events"
    )
    assert settings.CELERY_TASK_ROUTES["faults.tasks.poll_bmc_events"] == {"queue": "periodic"}
    assert poll_bmc_events_task.apply().get()["nodes_polled"] == 1

"""Repair cases (issue 25 item 1): opened from a ticket with their parts, moved along a dated
workflow, parts installed through the inventory's swap; bad input is a 400 naming the field and
writes nothing."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

from faults.models import FaultTicket, RepairCase, RepairPart, TimelineKind
from faults.repair_workflow import REPAIR_TRANSITIONS, RepairStatus
from faults.services import repairs
from faults.services.intake import submit_user_report
from inventory.models import GPU, ComponentSwap
from portal.errors import Conflict, InvalidInput
from portal.models import AuditEntry, Role
from tests.faults.conftest import post_json

CASES = "/api/faults/repair-cases/"
ALL_PAIRS = list(itertools.product(RepairStatus.values, RepairStatus.values))


@pytest.fixture
def ticket(fleet, make_user) -> FaultTicket:
    ticket, _ = submit_user_report(
        reported_by=make_user(Role.ONCALL), summary="GPU 3 fell off the bus",
        node=fleet.nodes[0], gpu=fleet.nodes[0].gpus.get(index=3),
    )
    return ticket


@pytest.fixture
def oncall(make_user):
    return make_user(Role.ONCALL)


def open_gpu_case(ticket, actor, **fields) -> RepairCase:
    return repairs.open_repair_case(
        ticket=ticket, vendor="Supermicro", vendor_case_number="SM-1001", component="gpu",
        actor=actor, parts=[repairs.PartRequest(kind="gpu", gpu_index=3)], **fields,
    )


def test_the_table_covers_every_state():
    assert set(REPAIR_TRANSITIONS) == set(RepairStatus.values)
    assert REPAIR_TRANSITIONS[RepairStatus.CLOSED] == ()


@pytest.mark.parametrize(("from_status", "to_status"), ALL_PAIRS)
def test_each_transition_is_allowed_exactly_when_the_table_says(ticket, oncall, from_status,
                                                                to_status):
    case = open_gpu_case(ticket, oncall)
    RepairCase.objects.filter(pk=case.pk).update(status=from_status)
    if to_status == RepairStatus.INSTALLED:
        ComponentSwap.objects.all().delete()
        part = case.parts.get()
        part.swap = ComponentSwap.objects.create(kind="gpu", slot="x", serial_in="S",
                                                 swapped_at=timezone.now())
        part.save()
    if to_status in REPAIR_TRANSITIONS[from_status]:
        moved = repairs.transition_repair_case(case=case, to_status=to_status, actor=oncall)
        assert moved.status == to_status
    else:
        with pytest.raises(Conflict) as refused:
            repairs.transition_repair_case(case=case, to_status=to_status, actor=oncall)
        assert refused.value.extra["allowed"] == list(REPAIR_TRANSITIONS[from_status])
        assert RepairCase.objects.get(pk=case.pk).status == from_status


def test_a_case_runs_from_open_to_closed_with_each_step_dated(ticket, oncall):
    opened = timezone.now() - timedelta(days=10)
    FaultTicket.objects.filter(pk=ticket.pk).update(detected_at=opened - timedelta(hours=1))
    ticket.refresh_from_db()
    case = open_gpu_case(ticket, oncall, opened_at=opened)
    requested, arrived = opened + timedelta(hours=2), opened + timedelta(days=8)
    repairs.transition_repair_case(case=case, to_status="waiting_for_part", at=requested,
                                   actor=oncall)
    case = repairs.transition_repair_case(case=case, to_status="part_received", at=arrived,
                                          actor=oncall)
    assert (case.opened_at, case.waiting_for_part_at, case.part_received_at) == (
        opened, requested, arrived)
    assert case.waited_for_part == arrived - requested  # the node's lead time

    gpu = GPU.objects.get(node=ticket.node, index=3)
    failed_serial = gpu.serial
    part = repairs.install_repair_part(
        case=case, part=case.parts.get(), serial_in="1654300000999", actor=oncall,
        uuid_in="GPU-99990000-0000-0000-0000-000000000000",
        installed_at=arrived + timedelta(hours=3),
    )
    case.refresh_from_db()
    gpu.refresh_from_db()
    assert case.status == RepairStatus.INSTALLED  # the last part went in
    assert case.installed_at == arrived + timedelta(hours=3)
    assert gpu.serial == "1654300000999" and gpu.index == 3
    assert (part.swap.serial_out, part.swap.serial_in, part.swap.reference) == (
        failed_serial, "1654300000999", case.reference)
    ticket.refresh_from_db()
    assert ticket.gpu_serial == failed_serial  # the ticket still names the GPU that failed
    case = repairs.transition_repair_case(case=case, to_status="closed", actor=oncall)
    assert case.closed_at is not None
    texts = list(ticket.timeline.filter(kind=TimelineKind.REPAIR).values_list("text", flat=True))
    assert texts[0].startswith(f"{case.reference} opened with Supermicro (case SM-1001)")
    assert any(f"{failed_serial} → 1654300000999" in text for text in texts)
    assert AuditEntry.objects.filter(object_type="faults.repaircase").count() == 5


def test_several_cases_per_ticket_and_several_parts_per_case(ticket, oncall):
    first = open_gpu_case(ticket, oncall)
    second = repairs.open_repair_case(
        ticket=ticket, vendor="NVIDIA", component="nvlink_module", actor=oncall,
        parts=[repairs.PartRequest(kind="nvlink_module", position="NVSwitch tray"),
               repairs.PartRequest(kind="nic", nic="mlx5_0", description="CX7 spare")],
    )
    assert list(ticket.repair_cases.order_by("pk")) == [first, second]
    assert [part.kind for part in second.parts.all()] == ["nvlink_module", "nic"]
    repairs.add_repair_part(case=first, request=repairs.PartRequest(kind="psu", position="PSU1"),
                            actor=oncall)
    assert first.parts.count() == 2


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"component": "flux_capacitor"}, "component"),
        ({"vendor": " "}, "vendor"),
        ({"opened_at": "ticket-1d"}, "opened_at"),
        ({"opened_at": "future"}, "opened_at"),
        ({"parts": [{"kind": "gpu", "gpu_index": 3}, {"kind": "gpu", "gpu_index": 9}]}, "parts"),
        ({"parts": [{"kind": "gpu_fan"}]}, "parts"),
        ({"parts": [{"kind": "nic", "nic": "mlx5_7"}]}, "parts"),
    ],
)
def test_bad_input_when_opening_is_refused_naming_the_field_and_writes_nothing(
        ticket, oncall, fields, field):
    now = timezone.now()
    if fields.get("opened_at") == "ticket-1d":
        fields["opened_at"] = ticket.detected_at - timedelta(days=1)
    elif fields.get("opened_at") == "future":
        fields["opened_at"] = now + timedelta(days=1)
    parts = [repairs.PartRequest(**part) for part in fields.pop("parts", [])] or [
        repairs.PartRequest(kind="gpu", gpu_index=3)]
    arguments = {"vendor": "Supermicro", "component": "gpu", **fields}
    timeline = ticket.timeline.count()
    with pytest.raises(InvalidInput) as refused:
        repairs.open_repair_case(ticket=ticket, actor=oncall, parts=parts, **arguments)
    assert field in refused.value.detail
    assert not RepairCase.objects.exists() and not RepairPart.objects.exists()
    assert ticket.timeline.count() == timeline


def test_a_step_dated_before_the_case_opened_is_refused_naming_at(ticket, oncall):
    case = open_gpu_case(ticket, oncall)
    with pytest.raises(InvalidInput) as refused:
        repairs.transition_repair_case(case=case, to_status="waiting_for_part", actor=oncall,
                                       at=case.opened_at - timedelta(minutes=1))
    assert list(refused.value.detail) == ["at"]
    case.refresh_from_db()
    assert case.status == "open" and case.waiting_for_part_at is None


def test_installing_needs_the_part_on_site_and_a_serial_not_installed_elsewhere(
        ticket, oncall, fleet):
    case = open_gpu_case(ticket, oncall)
    part = case.parts.get()
    with pytest.raises(Conflict):
        repairs.install_repair_part(case=case, part=part, serial_in="NEW", actor=oncall)
    repairs.transition_repair_case(case=case, to_status="part_received", actor=oncall)
    elsewhere = fleet.nodes[1].gpus.get(index=0).serial
    with pytest.raises(InvalidInput) as refused:
        repairs.install_repair_part(case=case, part=part, serial_in=elsewhere, actor=oncall)
    assert list(refused.value.detail) == ["serial_in"]
    with pytest.raises(InvalidInput) as refused:
        repairs.install_repair_part(case=case, part=part, serial_in="NEW", actor=oncall,
                                    installed_at=case.opened_at - timedelta(hours=1))
    assert list(refused.value.detail) == ["installed_at"]
    part.refresh_from_db()
    case.refresh_from_db()
    assert part.swap is None and case.status == "part_received"
    assert not ComponentSwap.objects.exists()
    with pytest.raises(InvalidInput) as refused:
        repairs.transition_repair_case(case=case, to_status="installed", actor=oncall)
    assert list(refused.value.detail) == ["parts"]


def test_every_write_publishes_the_ticket_for_live_pages(ticket, oncall, monkeypatch):
    published = []
    monkeypatch.setattr("faults.services.timeline.publish",
                        lambda group, event, payload: published.append((group, event,
                                                                        payload["id"])))
    case = open_gpu_case(ticket, oncall)
    repairs.transition_repair_case(case=case, to_status="waiting_for_part", actor=oncall)
    assert published == [("faults", "fault.updated", ticket.pk)] * 2


# -- the API ------------------------------------------------------------------------------------


def test_the_api_opens_moves_and_installs(ticket, api_as):
    client = api_as(Role.ONCALL)
    response = post_json(client, CASES, {
        "ticket": ticket.pk, "vendor": "Supermicro", "vendor_case_number": "SM-77",
        "component": "gpu_tray", "parts": [{"kind": "gpu", "gpu_index": 3}],
    })
    assert response.status_code == 201, response.content
    case = response.json()
    assert (case["status"], case["ticket_reference"], case["allowed_transitions"]) == (
        "open", ticket.reference, ["waiting_for_part", "part_received", "closed"])
    url = f"{CASES}{case['id']}/"
    assert post_json(client, f"{url}transition/", {"to_status": "part_received"}).status_code == 200
    response = post_json(client, f"{url}install/", {
        "part": case["parts"][0]["id"], "serial_in": "1654300000555",
        "firmware_version_in": "96.00.89.00.01",
    })
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "installed"
    swap = body["parts"][0]["swap"]
    assert (swap["serial_in"], swap["slot"], swap["firmware_version_in"]) == (
        "1654300000555", "gpu001 GPU3", "96.00.89.00.01")
    assert client.get(f"{CASES}?ticket={ticket.pk}").json()["results"][0]["id"] == case["id"]
    detail = client.get(url).json()
    assert detail["parts"][0]["installed"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"component": "gpu_fan"}, "component"),
        ({"ticket": 999999}, "ticket"),
        ({"parts": [{"kind": "warp_core"}]}, "parts"),
        ({"parts": [{"kind": "gpu", "gpu_index": 12}]}, "parts"),
        ({"opened_at": "2000-01-01T00:00:00Z"}, "opened_at"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_the_api_refuses_bad_input_naming_the_field(ticket, api_as, body, field):
    client = api_as(Role.OPERATOR)
    body = {"ticket": ticket.pk, "vendor": "Supermicro", "component": "gpu", **body}
    response = post_json(client, CASES, body)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not RepairCase.objects.exists()


def test_the_api_install_names_a_serial_already_installed(ticket, api_as, fleet):
    client = api_as(Role.OPERATOR)
    case = open_gpu_case(ticket, None)
    repairs.transition_repair_case(case=case, to_status="part_received", actor=None)
    response = post_json(client, f"{CASES}{case.pk}/install/", {
        "part": case.parts.get().pk, "serial_in": fleet.nodes[1].gpus.get(index=1).serial,
    })
    assert response.status_code == 400
    assert "gpu002 GPU1" in response.json()["serial_in"][0]
    response = post_json(client, f"{CASES}{case.pk}/install/", {"part": 999999, "serial_in": "X"})
    assert response.status_code == 400 and "part" in response.json()
    response = post_json(client, f"{CASES}{case.pk}/transition/", {"to_status": "open"})
    assert response.status_code == 409 and response.json()["allowed"] == [
        "installed", "waiting_for_part"]


def test_the_api_refuses_each_bad_step_naming_the_field_and_writes_nothing(
        ticket, api_as, fleet):
    """Issue 25 "Done when": an unknown part type, a serial already installed elsewhere and a
    date before the case opened are each a 400 naming the field, on every endpoint that takes
    them (adding a part, moving the case, installing), and nothing is written: no part, no
    swap, no serial changed, no step dated, no timeline entry, no audit record."""
    client = api_as(Role.OPERATOR)
    case = open_gpu_case(ticket, None)
    repairs.transition_repair_case(case=case, to_status="part_received", actor=None)
    case.refresh_from_db()
    url = f"{CASES}{case.pk}/"
    part = case.parts.get()
    slot_serial = ticket.node.gpus.get(index=3).serial
    elsewhere = fleet.nodes[1].gpus.get(index=1).serial
    before_opening = (case.opened_at - timedelta(hours=1)).isoformat()
    counts = (RepairPart.objects.count(), ComponentSwap.objects.count(),
              ticket.timeline.count(), AuditEntry.objects.count())
    refused = {
        "kind": post_json(client, f"{url}parts/", {"kind": "warp_core"}),
        "serial_in": post_json(client, f"{url}install/",
                               {"part": part.pk, "serial_in": elsewhere}),
        "installed_at": post_json(client, f"{url}install/", {
            "part": part.pk, "serial_in": "NEW-1", "installed_at": before_opening}),
        "at": post_json(client, f"{url}transition/",
                        {"to_status": "installed", "at": before_opening}),
    }
    for field, response in refused.items():
        assert response.status_code == 400, (field, response.content)
        assert field in response.json(), (field, response.json())
    assert (RepairPart.objects.count(), ComponentSwap.objects.count(),
            ticket.timeline.count(), AuditEntry.objects.count()) == counts
    case.refresh_from_db()
    assert (case.status, case.installed_at) == ("part_received", None)
    assert ticket.node.gpus.get(index=3).serial == slot_serial
    assert GPU.objects.filter(serial=elsewhere).count() == 1


@pytest.mark.parametrize(("role", "read", "write"), [
    (Role.VIEWER, 200, 403), (Role.TENANT_ADMIN, 403, 403), (Role.OPERATOR, 200, 400),
])
def test_repair_cases_follow_the_tickets_permissions(ticket, api_as, role, read, write):
    client = api_as(role)
    open_gpu_case(ticket, None)
    assert client.get(CASES).status_code == read
    assert post_json(client, CASES, {}).status_code == write


def test_a_ticket_whose_case_installed_a_part_resolves_as_part_replaced(ticket, oncall):
    from faults.models import RecoveryMethod
    from faults.services.tickets import transition_ticket

    case = open_gpu_case(ticket, oncall)
    repairs.transition_repair_case(case=case, to_status="waiting_for_part", actor=oncall)
    case = repairs.transition_repair_case(case=case, to_status="part_received", actor=oncall)
    repairs.install_repair_part(case=case, part=case.parts.get(), serial_in="1654300000777",
                                actor=oncall)
    transition_ticket(ticket=ticket, to_status="triaged", actor=oncall, category="gpu")
    resolved = transition_ticket(ticket=ticket, to_status="resolved", actor=oncall)
    assert resolved.recovery_method == RecoveryMethod.PART_REPLACED
    assert f"from {case.reference}: part installed" in resolved.timeline.last().text


def test_opening_a_case_acknowledges_the_ticket_like_any_act_on_it(ticket, oncall):
    """The story's screenshot: a ticket with a vendor case open still said "New", no responder,
    acknowledged "—", so its MTTA ran on past the engineer's first response."""
    assert ticket.acknowledged_at is None and ticket.responder is None
    repairs.open_repair_case(ticket=ticket, vendor="Supermicro", component="psu", actor=None,
                             parts=[repairs.PartRequest(kind="psu", position="PSU1")])
    ticket.refresh_from_db()
    assert ticket.acknowledged_at is None  # the system acting is no one's response
    case = open_gpu_case(ticket, oncall)
    ticket.refresh_from_db()
    assert (ticket.acknowledged_at, ticket.responder) == (case.opened_at, oncall)

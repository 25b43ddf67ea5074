"""Every transition of the workflow: the allowed ones work and leave a row, the others are 409."""

from __future__ import annotations

import itertools

import pytest
from django.utils import timezone

from faults.models import Category, FaultTicket, FaultTransition, RecoveryMethod
from faults.services import tickets
from faults.workflow import ALLOWED_TRANSITIONS, Status
from portal.errors import Conflict, InvalidInput
from portal.models import Role

ALL_PAIRS = list(itertools.product(Status.values, Status.values))
ALLOWED = [(a, b) for a, b in ALL_PAIRS if b in ALLOWED_TRANSITIONS[a]]
REFUSED = [(a, b) for a, b in ALL_PAIRS if b not in ALLOWED_TRANSITIONS[a]]

# What entering each state needs, given by the person moving the ticket.
FIELDS_FOR = {
    Status.TRIAGED: {"category": Category.GPU, "subtype": "ecc"},
    Status.AWAITING_VENDOR: {"rma_part": "GPU tray", "rma_case_number": "NV-4711"},
    Status.RESOLVED: {"recovery_method": RecoveryMethod.WARM_REBOOT},
}


def ticket_in(status: str, **fields) -> FaultTicket:
    return FaultTicket.objects.create(
        status=status, summary=f"a ticket in {status}", detected_at=timezone.now(),
        category=fields.pop("category", Category.UNCLASSIFIED), **fields,
    )


def test_the_table_covers_every_state():
    assert set(ALLOWED_TRANSITIONS) == set(Status.values)
    assert len(ALLOWED) == 13 and len(REFUSED) == 64 - 13


@pytest.mark.parametrize(("from_status", "to_status"), ALLOWED)
def test_allowed_transition_moves_stamps_and_records(db, make_user, from_status, to_status):
    user = make_user(Role.ONCALL)
    ticket = ticket_in(from_status, category=Category.GPU)
    moved = tickets.transition_ticket(
        ticket=ticket, to_status=to_status, actor=user, note="why", **FIELDS_FOR.get(to_status, {})
    )
    assert moved.status == to_status
    row = FaultTransition.objects.get(ticket=ticket)
    assert (row.from_status, row.to_status, row.actor, row.note) == (
        from_status, to_status, user, "why"
    )
    assert moved.acknowledged_at is not None and moved.responder == user
    stamp = {
        Status.TRIAGED: "triaged_at", Status.MITIGATING: "mitigated_at",
        Status.RESOLVED: "resolved_at", Status.VERIFIED: "verified_at", Status.CLOSED: "closed_at",
    }.get(to_status)
    if stamp:
        assert getattr(moved, stamp) is not None
    assert moved.timeline.filter(kind="transition").count() == 1


@pytest.mark.parametrize(("from_status", "to_status"), REFUSED)
def test_refused_transition_is_a_conflict_naming_the_allowed(db, make_user, from_status, to_status):
    ticket = ticket_in(from_status, category=Category.GPU, recovery_method="warm_reboot")
    with pytest.raises(Conflict) as caught:
        tickets.transition_ticket(
            ticket=ticket, to_status=to_status, actor=make_user(Role.ONCALL),
            **FIELDS_FOR.get(to_status, {}),
        )
    assert caught.value.extra["allowed"] == list(ALLOWED_TRANSITIONS[from_status])
    ticket.refresh_from_db()
    assert ticket.status == from_status
    assert not FaultTransition.objects.filter(ticket=ticket).exists()


def test_api_refusal_is_409_with_the_allowed_states(db, api_as):
    client = api_as(Role.ONCALL)
    ticket = ticket_in(Status.NEW)
    response = client.post(
        f"/api/faults/tickets/{ticket.pk}/transition/", {"to_status": "resolved"}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["allowed"] == ["triaged", "false_positive"]
    assert "Allowed: Triaged, False positive" in response.json()["to_status"][0]
    # Every error but a 400's field list says what is wrong in `detail` (the API schema).
    assert response.json()["detail"] == response.json()["to_status"][0]


def test_triage_needs_a_category_resolve_a_method_and_rma_the_case(db, make_user):
    user = make_user(Role.ONCALL)
    with pytest.raises(InvalidInput) as caught:
        tickets.transition_ticket(ticket=ticket_in(Status.NEW), to_status="triaged", actor=user)
    assert "category" in caught.value.detail
    with pytest.raises(InvalidInput) as caught:
        tickets.transition_ticket(
            ticket=ticket_in(Status.MITIGATING), to_status="resolved", actor=user
        )
    assert "recovery_method" in caught.value.detail
    with pytest.raises(InvalidInput) as caught:
        tickets.transition_ticket(
            ticket=ticket_in(Status.MITIGATING), to_status="awaiting_vendor", actor=user,
            rma_part="NVLink module",
        )
    assert list(caught.value.detail) == ["rma_case_number"]
    with pytest.raises(InvalidInput) as caught:
        tickets.transition_ticket(
            ticket=ticket_in(Status.NEW, category=Category.GPU), to_status="triaged", actor=user,
            subtype="leaf",
        )
    assert "subtype" in caught.value.detail


def test_full_life_through_the_api(db, api_as):
    client = api_as(Role.ONCALL)
    ticket = ticket_in(Status.NEW)
    url = f"/api/faults/tickets/{ticket.pk}/"
    steps = [
        {"to_status": "triaged", "category": "nvlink_nvswitch_pcie", "subtype": "nvlink"},
        {"to_status": "mitigating", "note": "drained"},
        {"to_status": "awaiting_vendor", "rma_part": "NVLink module", "rma_case_number": "C-1",
         "rma_expected_at": "2025-02-10"},
        {"to_status": "resolved", "recovery_method": "part_replaced"},
        {"to_status": "verified", "note": "health check passed"},
        {"to_status": "closed"},
    ]
    for step in steps:
        response = client.post(f"{url}transition/", step, format="json")
        assert response.status_code == 200, response.json()
        assert response.json()["status"] == step["to_status"]
    detail = client.get(url).json()
    assert [t["to_status"] for t in detail["transitions"]] == [s["to_status"] for s in steps]
    assert detail["rma_expected_at"] == "2025-02-10"
    assert detail["recovery_method"] == "part_replaced"
    assert detail["allowed_transitions"] == []


def test_acknowledge_sets_responder_and_time_once(db, api_as):
    first, second = api_as(Role.ONCALL), api_as(Role.OPERATOR)
    ticket = ticket_in(Status.NEW)
    url = f"/api/faults/tickets/{ticket.pk}/acknowledge/"
    assert first.post(url).status_code == 200
    acknowledged = FaultTicket.objects.get(pk=ticket.pk).acknowledged_at
    assert second.post(url).json()["responder"] == second.user.username
    ticket.refresh_from_db()
    assert ticket.acknowledged_at == acknowledged and ticket.status == Status.NEW


def test_reopen_within_the_window_links_a_new_ticket(db, make_user, settings):
    settings.FAULTS_REOPEN_WINDOW_HOURS = 24
    user = make_user(Role.ONCALL)
    resolved = ticket_in(Status.CLOSED, category=Category.GPU, fingerprint="gpu:1|gpu",
                         resolved_at=timezone.now() - timezone.timedelta(hours=2))
    again = tickets.reopen_ticket(ticket=resolved, actor=user, note="came back")
    assert again.reopened_from == resolved and again.status == Status.NEW
    assert again.fingerprint == "gpu:1|gpu"
    with pytest.raises(Conflict):  # one open ticket per fingerprint
        tickets.reopen_ticket(ticket=resolved, actor=user)
    old = ticket_in(Status.CLOSED, resolved_at=timezone.now() - timezone.timedelta(hours=30))
    with pytest.raises(Conflict, match="open a new ticket"):
        tickets.reopen_ticket(ticket=old, actor=user)
    with pytest.raises(Conflict):
        tickets.reopen_ticket(ticket=ticket_in(Status.MITIGATING), actor=user)

"""Spares (issue 25 item 3): stock per part type and site, reserved by a repair case, consumed
by the swap that installs it, released when the case closes without it; the last spare goes to
one case only; bad input is a 400 naming the field and writes nothing."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from faults.models import RepairCase
from faults.repair_workflow import RepairStatus
from faults.services import repairs
from faults.services.intake import submit_user_report
from inventory.models import ReservationStatus, SpareReservation, SpareStock
from inventory.selectors import spare_stock_list, spares_below_minimum
from inventory.spares import spare_stock_set
from portal.errors import Conflict, InvalidInput
from portal.models import AuditEntry, Role
from tests.faults.conftest import build_fleet, post_json

SPARES = "/api/inventory/spares/"


def _ticket(fleet, user, index=0):
    ticket, _ = submit_user_report(
        reported_by=user, summary=f"GPU 3 on node {index} keeps logging ECC errors",
        node=fleet.nodes[index], gpu=fleet.nodes[index].gpus.get(index=3),
    )
    return ticket


def _case(ticket, user) -> RepairCase:
    return repairs.open_repair_case(
        ticket=ticket, vendor="Supermicro", vendor_case_number="SM-7", component="gpu",
        actor=user, parts=[repairs.PartRequest(kind="gpu", gpu_index=3)],
    )


@pytest.fixture
def oncall(make_user):
    return make_user(Role.ONCALL)


def test_a_reserved_spare_is_consumed_by_the_swap(fleet, oncall):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=2, minimum=1)
    case = _case(_ticket(fleet, oncall), oncall)
    reservation = repairs.reserve_case_spare(case=case, site="tokyo", actor=oncall)
    stock = spare_stock_list(user=oncall).get(kind="gpu", site="tokyo")
    assert (stock.on_hand, stock.reserved, stock.free) == (2, 1, 1)
    repairs.transition_repair_case(case=case, to_status=RepairStatus.PART_RECEIVED, actor=oncall)
    repairs.install_repair_part(case=case, part=case.parts.get(), serial_in="SPARE-GPU-1",
                                actor=oncall)
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.CONSUMED
    assert reservation.swap.serial_in == "SPARE-GPU-1"
    stock = spare_stock_list(user=oncall).get(kind="gpu", site="tokyo")
    assert (stock.on_hand, stock.reserved, stock.free) == (1, 0, 1)
    assert AuditEntry.objects.filter(object_type="inventory.sparereservation",
                                     note__contains="consumed").exists()
    assert AuditEntry.objects.filter(object_type="inventory.sparestock",
                                     note__contains="spare installed").exists()


def test_closing_a_case_releases_the_spare_it_did_not_use(fleet, oncall):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=1)
    case = _case(_ticket(fleet, oncall), oncall)
    repairs.reserve_case_spare(case=case, site="tokyo", actor=oncall)
    assert spare_stock_list(user=oncall).get().free == 0
    repairs.transition_repair_case(case=case, to_status=RepairStatus.CLOSED, actor=oncall)
    assert SpareReservation.objects.get().status == ReservationStatus.RELEASED
    stock = spare_stock_list(user=oncall).get()
    assert (stock.on_hand, stock.free) == (1, 1)
    assert case.ticket.timeline.filter(text__contains="released").exists()


def test_the_dashboard_selector_names_the_shelves_below_their_minimum(db):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=1, minimum=2)
    spare_stock_set(kind="psu", site="tokyo", on_hand=4, minimum=2)
    assert [(s.kind, s.free) for s in spares_below_minimum()] == [("gpu", 1)]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"kind": "flux_capacitor", "site": "tokyo"}, "kind"),
        ({"kind": "gpu", "site": "osaka"}, "kind"),  # no shelf there: none on hand
        ({"kind": "nic", "site": "tokyo"}, "kind"),  # a shelf with none on hand
        ({"kind": "gpu", "site": ""}, "site"),
    ],
)
def test_a_bad_reservation_is_a_400_naming_the_field_and_writes_nothing(
    fleet, oncall, api_as, fields, field
):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=1)
    spare_stock_set(kind="nic", site="tokyo", on_hand=0)
    case = _case(_ticket(fleet, oncall), oncall)
    client = api_as(Role.ONCALL)
    response = post_json(client, f"/api/faults/repair-cases/{case.pk}/reserve-spare/", fields)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not SpareReservation.objects.exists()


def test_a_closed_case_reserves_nothing(fleet, oncall):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=1)
    case = _case(_ticket(fleet, oncall), oncall)
    repairs.transition_repair_case(case=case, to_status=RepairStatus.CLOSED, actor=oncall)
    with pytest.raises(Conflict):
        repairs.reserve_case_spare(case=case, site="tokyo", actor=oncall)
    assert not SpareReservation.objects.exists()


def test_the_count_cannot_drop_below_what_cases_hold(fleet, oncall):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=1)
    repairs.reserve_case_spare(case=_case(_ticket(fleet, oncall), oncall), site="tokyo",
                               actor=oncall)
    with pytest.raises(InvalidInput) as refused:
        spare_stock_set(kind="gpu", site="tokyo", on_hand=0)
    assert "on_hand" in refused.value.detail
    assert SpareStock.objects.get().on_hand == 1


def test_the_spares_api_sets_reads_and_refuses_bad_input(db, api_as):
    operator = api_as(Role.OPERATOR)
    created = post_json(operator, SPARES, {"kind": "gpu", "site": "tokyo", "on_hand": 3,
                                           "minimum": 4})
    assert created.status_code == 201, created.content
    assert created.json()["below_minimum"] is True
    patched = operator.patch(f"{SPARES}{created.json()['id']}/", {"minimum": 2}, format="json")
    assert patched.status_code == 200, patched.content
    assert (patched.json()["free"], patched.json()["below_minimum"]) == (3, False)
    for body, field in (({"kind": "warp_core", "site": "tokyo"}, "kind"),
                        ({"kind": "gpu", "site": "tokyo", "on_hand": -1}, "on_hand")):
        refused = post_json(operator, SPARES, body)
        assert refused.status_code == 400 and field in refused.json(), refused.content
    assert SpareStock.objects.count() == 1
    viewer = api_as(Role.VIEWER)
    assert viewer.get(SPARES).status_code == 200
    assert post_json(viewer, SPARES, {"kind": "gpu", "site": "x"}).status_code == 403


@pytest.mark.django_db(transaction=True)
def test_two_cases_reaching_for_the_last_spare_one_wins(make_user):
    """Two connections reserve the last GPU spare at once: the stock row's lock makes the second
    wait for the first to commit, then find none free (400 naming `kind`)."""
    fleet = build_fleet()
    user = make_user(Role.ONCALL)
    spare_stock_set(kind="gpu", site="tokyo", on_hand=1)
    cases = [_case(_ticket(fleet, user, index), user) for index in (0, 1)]
    start = threading.Barrier(2)
    outcomes: list = []

    def reserve(case):
        try:
            start.wait(10)
            outcomes.append(repairs.reserve_case_spare(case=case, site="tokyo", actor=user))
        except InvalidInput as refused:
            outcomes.append(refused)
        finally:
            connection.close()

    threads = [threading.Thread(target=reserve, args=(case,)) for case in cases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    won = [o for o in outcomes if isinstance(o, SpareReservation)]
    lost = [o for o in outcomes if isinstance(o, InvalidInput)]
    assert (len(won), len(lost)) == (1, 1), outcomes
    assert "kind" in lost[0].detail
    assert SpareReservation.objects.filter(status=ReservationStatus.RESERVED).count() == 1


def test_the_dashboard_warns_and_the_spares_page_lists_the_shelves(fleet, oncall, client,
                                                                   make_user):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=1, minimum=1)
    spare_stock_set(kind="psu", site="tokyo", on_hand=3, minimum=1)
    client.force_login(make_user(Role.VIEWER))
    assert "spares-low" not in client.get("/").content.decode()
    repairs.reserve_case_spare(case=_case(_ticket(fleet, oncall), oncall), site="tokyo",
                               actor=oncall)
    dashboard = client.get("/").content.decode()
    assert 'data-spare="tokyo/gpu"' in dashboard
    assert 'data-spare="tokyo/psu"' not in dashboard
    page = client.get("/inventory/spares/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "below minimum" in body and "RC-" in body

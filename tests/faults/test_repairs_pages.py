"""The ticket page's repair-case panel (issue 25 item 1) and the inventory pages that show a
slot's and a serial's history (item 2)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from faults.models import RepairCase
from faults.services import repairs
from faults.services.intake import submit_user_report
from inventory.models import GPU, ComponentSwap, SpareReservation
from inventory.spares import spare_stock_set
from inventory.swaps import component_replace, slot_for
from portal.models import Role


@pytest.fixture
def ticket(fleet, make_user):
    ticket, _ = submit_user_report(
        reported_by=make_user(Role.ONCALL), summary="GPU 3 fell off the bus",
        node=fleet.nodes[0], gpu=fleet.nodes[0].gpus.get(index=3),
    )
    return ticket


def page_client(make_user, role) -> Client:
    client = Client()
    client.force_login(make_user(role))
    return client


def test_a_responder_opens_moves_and_installs_from_the_ticket_page(ticket, make_user):
    client = page_client(make_user, Role.ONCALL)
    url = f"/faults/{ticket.pk}/"
    response = client.post(f"{url}repairs/", {
        "vendor": "Supermicro", "vendor_case_number": "SM-42", "component": "gpu",
        "gpu_index": "3",
    })
    assert response.status_code == 302, response.content
    case = RepairCase.objects.get()
    assert [part.gpu.index for part in case.parts.all()] == [3]
    response = client.post(f"{url}repairs/{case.pk}/transition/", {"to_status": "part_received"})
    assert response.status_code == 302
    old_serial = GPU.objects.get(node=ticket.node, index=3).serial
    response = client.post(f"{url}repairs/{case.pk}/install/", {
        "part": case.parts.get().pk, "serial_in": "1654300012345", "firmware_version_in": "96.1",
    })
    assert response.status_code == 302, response.content
    page = client.get(url).content.decode()
    assert 'id="ticket-repairs" data-live-region' in page
    assert f"{case.reference} · Supermicro case <code>SM-42</code>" in page
    assert old_serial in page and "1654300012345" in page
    assert "Installed" in page
    assert GPU.objects.get(node=ticket.node, index=3).serial == "1654300012345"
    # A second case is the exception: its form is folded away once one exists.
    assert ('<details class="repair-open-another"><summary>Open another repair case</summary>'
            in page)
    assert "{#" not in page  # a template comment never reaches the page


def test_bad_input_on_the_page_is_a_400_naming_the_field_and_keeps_the_typing(ticket, make_user):
    client = page_client(make_user, Role.OPERATOR)
    response = client.post(f"/faults/{ticket.pk}/repairs/", {
        "vendor": "Supermicro", "component": "warp_core",
    })
    assert response.status_code == 400
    assert "component" in response.content.decode()
    assert 'value="Supermicro"' in response.content.decode()
    case = repairs.open_repair_case(ticket=ticket, vendor="NVIDIA", component="gpu", actor=None,
                                    parts=[repairs.PartRequest(kind="gpu", gpu_index=3)])
    too_early = timezone.localtime(case.opened_at - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    response = client.post(f"/faults/{ticket.pk}/repairs/{case.pk}/transition/", {
        "to_status": "waiting_for_part", "at": too_early,
    })
    assert response.status_code == 400
    assert "at: " in response.content.decode()
    assert RepairCase.objects.filter(pk=case.pk, status="open").exists()
    assert RepairCase.objects.count() == 1


def test_the_install_form_refuses_a_serial_installed_elsewhere_or_dated_too_early(
        ticket, make_user, fleet):
    """Issue 25 "Done when", on the page: a serial already installed in another slot and an
    install dated before the case opened are each a 400 naming the field; nothing is written
    (no swap, the slot keeps its serial, the other slot its own, the case stays received)."""
    client = page_client(make_user, Role.OPERATOR)
    case = repairs.open_repair_case(ticket=ticket, vendor="NVIDIA", component="gpu", actor=None,
                                    parts=[repairs.PartRequest(kind="gpu", gpu_index=3)])
    repairs.transition_repair_case(case=case, to_status="part_received", actor=None)
    case.refresh_from_db()
    part = case.parts.get()
    slot_serial = GPU.objects.get(node=ticket.node, index=3).serial
    elsewhere = fleet.nodes[1].gpus.get(index=1).serial
    too_early = timezone.localtime(case.opened_at - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    url = f"/faults/{ticket.pk}/repairs/{case.pk}/install/"
    for field, data in (
        ("serial_in", {"part": part.pk, "serial_in": elsewhere}),
        ("installed_at", {"part": part.pk, "serial_in": "NEW-2", "installed_at": too_early}),
    ):
        response = client.post(url, data)
        assert response.status_code == 400, field
        assert f"{field}: " in response.content.decode(), field
    assert not ComponentSwap.objects.exists()
    assert GPU.objects.get(node=ticket.node, index=3).serial == slot_serial
    assert GPU.objects.filter(serial=elsewhere).count() == 1
    case.refresh_from_db()
    part.refresh_from_db()
    assert (case.status, case.installed_at, part.swap) == ("part_received", None, None)


def test_readers_see_the_panel_without_its_forms(ticket, make_user):
    repairs.open_repair_case(ticket=ticket, vendor="NVIDIA", component="nvlink_module",
                             actor=None, parts=[repairs.PartRequest(kind="nvlink_module")])
    page = page_client(make_user, Role.VIEWER).get(f"/faults/{ticket.pk}/").content.decode()
    assert "NVLink / NVSwitch module" in page
    assert "Open a repair case" not in page and "repair-move" not in page
    assert page_client(make_user, Role.VIEWER).post(
        f"/faults/{ticket.pk}/repairs/", {"vendor": "x"}).status_code == 403


def test_the_node_page_and_the_part_page_tell_a_parts_history(ticket, make_user, fleet):
    node, other = fleet.nodes
    failed = node.gpus.get(index=3).serial
    case = repairs.open_repair_case(ticket=ticket, vendor="Supermicro", component="gpu",
                                    actor=None, parts=[repairs.PartRequest(kind="gpu",
                                                                           gpu_index=3)])
    repairs.transition_repair_case(case=case, to_status="part_received", actor=None)
    repairs.install_repair_part(case=case, part=case.parts.get(), serial_in="SPARE-9",
                                actor=None)
    component_replace(slot=slot_for(kind="gpu", node=other, gpu_index=6), serial_in=failed,
                      reference="refurbished")
    client = page_client(make_user, Role.OPERATOR)
    node_page = client.get(f"/inventory/nodes/{node.hostname}/").content.decode()
    assert 'id="swap-history"' in node_page
    assert f"/inventory/parts/{failed}/" in node_page and case.reference in node_page
    part_page = client.get(f"/inventory/parts/{failed}/").content.decode()
    assert "Installed now in gpu002 GPU6." in part_page
    assert part_page.index("removed") < part_page.index("installed")
    assert "(came back)" in part_page and "SPARE-9" in part_page
    assert ComponentSwap.objects.count() == 2
    tenant_page = page_client(make_user, Role.TENANT_ADMIN).get(f"/inventory/parts/{failed}/")
    assert tenant_page.status_code == 200
    assert "No swap names this serial." in tenant_page.content.decode()


def test_a_responder_reserves_a_spare_from_the_ticket_page(ticket, make_user):
    """Issue 25 item 6's story needs it: on main a spare could be reserved only over the API."""
    spare_stock_set(kind="gpu", site="Tokyo DC1", on_hand=2)
    spare_stock_set(kind="psu", site="Tokyo DC1", on_hand=3)
    case = repairs.open_repair_case(ticket=ticket, vendor="Supermicro", component="gpu",
                                    actor=None, parts=[repairs.PartRequest(kind="gpu",
                                                                           gpu_index=3)])
    client = page_client(make_user, Role.ONCALL)
    url = f"/faults/{ticket.pk}/"
    page = client.get(url).content.decode()
    # Only the shelves that hold a free spare of the failed component's type are offered.
    assert '<option value="Tokyo DC1">Tokyo DC1 (2 free)</option>' in page
    assert "(3 free)" not in page
    response = client.post(f"{url}repairs/{case.pk}/reserve-spare/", {"site": "Tokyo DC1"})
    assert response.status_code == 302, response.content
    reservation = SpareReservation.objects.get()
    assert (reservation.reference, reservation.stock.kind) == (case.reference, "gpu")
    page = client.get(url).content.decode()
    assert 'data-spare="reserved">GPU from the shelf at Tokyo DC1, reserved' in page
    assert "repair-reserve" not in page  # the case holds one: nothing more to reserve
    assert ticket.timeline.filter(text__contains="spare GPU reserved at Tokyo DC1").exists()


def test_a_bad_spare_reservation_on_the_page_is_a_400_naming_the_field(ticket, make_user):
    case = repairs.open_repair_case(ticket=ticket, vendor="Supermicro", component="gpu",
                                    actor=None, parts=[repairs.PartRequest(kind="gpu",
                                                                           gpu_index=3)])
    client = page_client(make_user, Role.OPERATOR)
    url = f"/faults/{ticket.pk}/repairs/{case.pk}/reserve-spare/"
    blank = client.post(url, {"site": ""})
    assert blank.status_code == 400 and "site: " in blank.content.decode()
    empty_shelf = client.post(url, {"site": "Osaka"})
    assert empty_shelf.status_code == 400
    assert "kind: No GPU spare is on hand at Osaka." in empty_shelf.content.decode()
    assert not SpareReservation.objects.exists()
    assert page_client(make_user, Role.VIEWER).post(url, {"site": "Osaka"}).status_code == 403


def test_the_open_case_form_starts_at_the_tickets_gpu_and_says_what_the_policy_proposed(
    fleet, make_user
):
    """The story's screenshot: a repeat offender's ticket said "No vendor repair case." with an
    empty form, and the policy's vendor proposal only at the foot of the timeline."""
    from faults.models import TimelineKind
    from faults.services.timeline import add_timeline_entry

    ticket, _ = submit_user_report(
        reported_by=make_user(Role.ONCALL), summary="ECC errors again on GPU 6",
        node=fleet.nodes[0], gpu=fleet.nodes[0].gpus.get(index=6),
    )
    client = page_client(make_user, Role.ONCALL)
    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert '<option value="gpu" selected>GPU</option>' in page
    assert 'name="gpu_index" type="number" min="0" max="7" value="6"' in page
    assert 'id="repair-proposed"' not in page
    add_timeline_entry(ticket, TimelineKind.PROPOSAL, "Proposed by policy ecc: repeat offender, "
                                                      "Open an RMA with the vendor.")
    page = client.get(f"/faults/{ticket.pk}/").content.decode()
    assert ('<p class="warning" id="repair-proposed">Proposed by policy ecc: repeat offender, '
            "Open an RMA with the vendor.</p>") in page


def test_the_move_form_offers_the_usual_next_step_first(ticket, make_user):
    """The story's screenshot: an installed case's "Move to" preselected "Waiting for part" (the
    step back, for a replacement that did not fix it), one click from undoing the repair."""
    case = repairs.open_repair_case(ticket=ticket, vendor="Supermicro", component="gpu",
                                    actor=None, parts=[repairs.PartRequest(kind="gpu",
                                                                           gpu_index=3)])
    repairs.transition_repair_case(case=case, to_status="part_received", actor=None)
    client = page_client(make_user, Role.ONCALL)

    def options() -> list[str]:
        page = client.get(f"/faults/{ticket.pk}/").content.decode()
        select = page.split(f'id="repair-{case.pk}-to" name="to_status">', 1)[1]
        select = select.split("</select>")[0]
        return [chunk.split('"', 1)[0] for chunk in select.split('<option value="')[1:]]

    assert options() == ["waiting_for_part"]  # installing the part is the install form's job
    repairs.install_repair_part(case=case, part=case.parts.get(), serial_in="SPARE-7", actor=None)
    assert options() == ["closed", "waiting_for_part"]

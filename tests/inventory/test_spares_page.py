"""Issue 25 item 3's remainder: the spares page sets a shelf's counts (on hand, minimum) for
those who may write the inventory, with refusals beside the field they name."""

from __future__ import annotations

import pytest
from django.test import Client

from inventory.models import SpareStock
from inventory.spares import spare_stock_set
from portal.models import AuditEntry, Role

pytestmark = pytest.mark.django_db


def client_as(make_user, role: str, **extra) -> Client:
    client = Client()
    client.force_login(make_user(role, **extra))
    return client


def test_an_operator_sets_a_new_shelf_and_changes_an_existing_one(make_user):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=2, minimum=1)
    operator = client_as(make_user, Role.OPERATOR)

    page = operator.get("/inventory/spares/").content.decode()
    assert 'id="spare-set"' in page and 'action="/inventory/spares/set/"' in page

    created = operator.post("/inventory/spares/set/",
                            {"kind": "transceiver", "site": "tokyo", "on_hand": "12",
                             "minimum": "4"})
    changed = operator.post("/inventory/spares/set/",
                            {"kind": "gpu", "site": "tokyo", "on_hand": "5", "minimum": ""})

    assert created.status_code == changed.status_code == 302
    assert created["Location"] == "/inventory/spares/"
    assert (SpareStock.objects.get(kind="transceiver", site="tokyo").on_hand,
            SpareStock.objects.get(kind="transceiver", site="tokyo").minimum) == (12, 4)
    gpu = SpareStock.objects.get(kind="gpu", site="tokyo")
    assert (gpu.on_hand, gpu.minimum) == (5, 1)  # a blank minimum is kept
    entry = AuditEntry.objects.filter(object_type__icontains="sparestock").order_by("-pk").first()
    assert entry is not None and entry.via == "ui"


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"kind": "flux_capacitor", "site": "tokyo", "on_hand": "1"}, "kind", "valid choice"),
        ({"kind": "gpu", "site": "", "on_hand": "1"}, "site", "required"),
        ({"kind": "gpu", "site": "tokyo", "on_hand": "-1"}, "on_hand", "greater than or equal"),
        ({"kind": "gpu", "site": "tokyo", "on_hand": "many"}, "on_hand", "whole number"),
        ({"kind": "gpu", "site": "tokyo", "minimum": "x"}, "minimum", "whole number"),
        ({"kind": "gpu", "site": "tokyo"}, "on_hand", "Give the count on hand"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(make_user, data, field, words):
    operator = client_as(make_user, Role.OPERATOR)

    response = operator.post("/inventory/spares/set/", data)

    assert response.status_code == 400
    html = response.content.decode()
    error = html.split(f'id="id_{field}_error"')[1].split("</p>")[0]
    assert words in error
    assert not SpareStock.objects.exists()


def test_fewer_on_hand_than_cases_hold_is_refused_beside_on_hand(make_user, monkeypatch):
    """The service's rule (not restated by the form): its refusal lands on the field it names."""
    from inventory import spares

    def held(stock):
        return 3

    stock = spare_stock_set(kind="gpu", site="tokyo", on_hand=4)
    monkeypatch.setattr(spares, "_reserved_count", held)
    operator = client_as(make_user, Role.OPERATOR)

    response = operator.post("/inventory/spares/set/",
                             {"kind": "gpu", "site": "tokyo", "on_hand": "2"})

    assert response.status_code == 400
    error = response.content.decode().split('id="id_on_hand_error"')[1].split("</p>")[0]
    assert "3 of these are reserved by repair cases" in error
    stock.refresh_from_db()
    assert stock.on_hand == 4


def test_readers_see_no_form_and_may_not_post(make_user):
    spare_stock_set(kind="gpu", site="tokyo", on_hand=2)
    viewer = client_as(make_user, Role.VIEWER)

    page = viewer.get("/inventory/spares/").content.decode()
    response = viewer.post("/inventory/spares/set/", {"kind": "gpu", "site": "tokyo",
                                                      "on_hand": "0"})

    assert 'id="spare-set"' not in page and "spare-row-form" not in page
    assert response.status_code == 403
    assert SpareStock.objects.get().on_hand == 2

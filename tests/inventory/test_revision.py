"""Whole-fleet reads are computed once per inventory change.

Validation and the topology picture are cached under the inventory's revision
(inventory/revision.py): a view of an unchanged inventory computes nothing, a saved or deleted
design row (or an import) gives the next view a fresh answer, and a change rolled back takes its
bump with it. Past POD_PICTURE_LIMIT pods the topology page draws one pod at a time.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from inventory import validation
from inventory.models import Cable, CableStatus, InventoryRevision, Node
from inventory.revision import current_revision
from inventory.topology.importer import import_topology
from inventory.views.topology import POD_PICTURE_LIMIT
from portal.models import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, make_user):
    client.force_login(make_user(Role.OPERATOR))
    return client


@pytest.fixture
def counted_validation(monkeypatch):
    calls = []
    real = validation.validate_topology

    def counting(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(validation, "validate_topology", counting)
    return calls


def test_every_save_bumps_the_revision(sakuraone):
    before = InventoryRevision.objects.get().number
    with transaction.atomic():
        for node in Node.objects.order_by("hostname")[:3]:
            node.serial = f"{node.serial}-checked"
            node.save()
    assert InventoryRevision.objects.get().number == before + 3


def test_a_rolled_back_change_takes_its_bump_with_it(sakuraone):
    before = current_revision()
    with transaction.atomic():
        try:
            with transaction.atomic():
                node = Node.objects.order_by("hostname").first()
                node.serial = "never committed"
                node.save()
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        assert current_revision() == before


def test_validation_is_computed_once_per_revision(sakuraone, operator, counted_validation):
    for _ in range(3):
        assert operator.get("/inventory/validation/").status_code == 200
        assert operator.get("/api/inventory/validation").json()["count"] == 0
    # Once, or not at all when an earlier test already viewed this same committed fleet.
    computed = len(counted_validation)
    assert computed <= 1

    cable = Cable.objects.get(a_nic__node__hostname="gpu007", a_nic__device="mlx5_5")
    cable.status = CableStatus.DECOMMISSIONED
    cable.save()
    report = operator.get("/api/inventory/validation").json()
    assert report["count"] == 1 and len(counted_validation) == computed + 1
    assert "gpu007" in operator.get("/inventory/validation/").content.decode()
    assert len(counted_validation) == computed + 1

    cable.delete()  # a delete is a change too
    operator.get("/inventory/validation/")
    assert len(counted_validation) == computed + 2


def test_an_import_bumps_the_revision(sakuraone, sakuraone_spec):
    before = current_revision()
    import_topology(sakuraone_spec, scale=2)  # bulk writes: no signals
    assert current_revision() != before


def test_topology_draws_one_pod_at_a_time_past_the_limit(sakuraone, sakuraone_spec, operator):
    import_topology(sakuraone_spec, scale=5)  # ten pods
    html = operator.get("/inventory/topology/").content.decode()
    pods = html.split('id="pod-table"', 1)[1].split("</table>", 1)[0]
    names = [part.split("</a>", 1)[0].rsplit(">", 1)[1] for part in pods.split("?pod=")[1:]]
    assert len(names) == 10 > POD_PICTURE_LIMIT
    assert names.index("p2") < names.index("p10")  # natural order
    svg = html.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert svg.count('class="fabric-pod"') == 1
    assert svg.count('class="fabric-switch leaf"') == 8

    other = operator.get("/inventory/topology/", {"pod": "p10"}).content.decode()
    assert 'data-pod="p10"' in other and 'data-pod="p1"' not in other
    assert operator.get("/inventory/topology/", {"pod": "p99"}).status_code == 404

"""Issue 24: a topology spec names its nodes' BMCs by range; addresses count up, system ids are
formats, credentials are references; a bad address is located; a re-import keeps what the API
changed since."""

from __future__ import annotations

import pytest

from inventory.models import Node
from inventory.topology.importer import import_topology
from portal.errors import InvalidInput
from tests.inventory.conftest import delete_inventory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def without_the_sakuraone_import(db):
    """These tests make their own nodes under SAKURAONE's host names (the emulated BMCs are named
    so): the package's committed import is emptied inside each test's transaction, and is whole
    again for the next test."""
    delete_inventory()


def test_a_range_names_its_bmcs(sakuraone_spec):
    sakuraone_spec["pods"][0]["nodes"][0]["bmc"] = {
        "address_start": "10.10.1.1", "system_id": "Self-{number}", "credentials_ref": "redfish/x"
    }
    import_topology(sakuraone_spec)
    first, last = Node.objects.get(hostname="gpu001"), Node.objects.get(hostname="gpu050")
    assert (first.bmc_address, first.bmc_system_id, first.bmc_credentials_ref) == (
        "10.10.1.1", "Self-1", "redfish/x"
    )
    assert last.bmc_address == "10.10.1.50"
    assert Node.objects.get(hostname="gpu051").bmc_address is None
    first.bmc_address = "10.99.0.1"
    first.save()
    import_topology(sakuraone_spec)
    assert Node.objects.get(hostname="gpu001").bmc_address == "10.99.0.1"


@pytest.mark.parametrize(
    ("bmc", "message"),
    [
        ({"address_start": "10.10.1.x"}, "bmc.address_start: is not an IP address"),
        ({"address_start": "255.255.255.250"}, "bmc.address_start: runs past the address space"),
        ({"credentials_ref": "has spaces"}, "bmc.credentials_ref"),
        ({"password": "nope"}, "bmc"),
    ],
)
def test_bad_bmc_entries_are_located(sakuraone_spec, bmc, message):
    sakuraone_spec["pods"][0]["nodes"][0]["bmc"] = bmc
    with pytest.raises(InvalidInput) as refused:
        import_topology(sakuraone_spec)
    assert any(message in problem for problem in refused.value.detail), refused.value.detail

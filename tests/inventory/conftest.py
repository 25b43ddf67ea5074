"""The SAKURAONE spec, and the fleet it imports, shared by the inventory tests.

`sakuraone` imports the shipped spec once for this package's tests, committed, and removes it
when they are done (before any other app's tests run); each test still runs in its own
transaction (the `db` fixture), so a test may break the fleet freely and the next test sees it
whole again.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from inventory.topology.spec import spec_from_yaml
from tests.inventory.bmc_fixtures import (  # noqa: F401 - fixtures
    mockup_settings,
    redfish_mockup,
    redfish_settings,
    sushy_emulator,
)

SAKURAONE_SPEC_PATH = Path(__file__).resolve().parents[2] / "inventory/fixtures/sakuraone.yaml"


@pytest.fixture(scope="session")
def _sakuraone_spec_text() -> str:
    return SAKURAONE_SPEC_PATH.read_text(encoding="utf-8")


@pytest.fixture
def sakuraone_spec(_sakuraone_spec_text) -> dict:
    """A fresh copy of the shipped spec, for a test to break."""
    return copy.deepcopy(spec_from_yaml(_sakuraone_spec_text))


def delete_inventory() -> None:
    """Empty the inventory's tables, in set-based statements (the ORM's cascade collector would
    load every row first)."""
    from django.db import connection, transaction

    from inventory.models import (
        GPU,
        NIC,
        Allocation,
        Cable,
        Node,
        Pod,
        Rack,
        Switch,
        SwitchPort,
        TopologyImportRun,
    )
    from portal.models import AuditEntry

    tables = [
        Cable._meta.db_table,
        Allocation.nodes.through._meta.db_table,
        Allocation._meta.db_table,
        NIC._meta.db_table,
        GPU._meta.db_table,
        SwitchPort._meta.db_table,
        Switch._meta.db_table,
        Node._meta.db_table,
        Rack._meta.db_table,
        Pod._meta.db_table,
        TopologyImportRun._meta.db_table,
    ]
    from faults.models import FaultTicket, IntakeRecord

    with transaction.atomic(), connection.cursor() as cursor:
        # Tickets point at nodes, ports and switches: a module that polled its committed fleet
        # may have opened some (faults/services/state_changes.py).
        FaultTicket.objects.all().delete()
        IntakeRecord.objects.all().delete()
        for table in tables:
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")  # noqa: S608
        AuditEntry.objects.filter(object_type="inventory.topologyimportrun").delete()


@pytest.fixture(scope="package")
def sakuraone(django_db_setup, django_db_blocker, _sakuraone_spec_text):
    """The SAKURAONE fleet, imported once for the package; yields that import's report."""
    from inventory.topology.importer import import_topology

    with django_db_blocker.unblock():
        delete_inventory()
        report = import_topology(spec_from_yaml(_sakuraone_spec_text))
    yield report
    with django_db_blocker.unblock():
        delete_inventory()

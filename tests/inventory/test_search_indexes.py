"""The hardware search's indexes are the ones the planner can use for the SQL Django writes.

At scale 125 a search for a hostname read every GPU's UUID, serial and PCI address and every
NIC's MAC (1.5 s a search, bench/ui_scale.py). An index on an expression the lookup does not
produce would be kept up to date and never used, and no functional test would notice: the plan
is what is checked here, with sequential scans priced out as on a large table.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import connection

from inventory.models import GPU, NIC, Node
from inventory.models.search_indexes import (
    SEARCHED_COLUMNS,
    create_search_indexes,
    search_index_name,
)
from inventory.selectors import hardware_search

MODELS = {"inventory_node": Node, "inventory_gpu": GPU, "inventory_nic": NIC}

pytestmark = pytest.mark.django_db


def _plan(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize(("table", "column", "how"), SEARCHED_COLUMNS)
def test_each_search_lookup_can_use_its_index(table, column, how):
    model = MODELS[table]
    lookup = {"contains": "icontains", "exact": "iexact"}[how]
    queryset = model.objects.filter(**{f"{column}__{lookup}": "6d:ae"}).order_by()
    if connection.vendor != "postgresql":
        # The embedded default scans SAKURAONE's few hundred rows; the migration makes nothing.
        executed = []
        create_search_indexes(SimpleNamespace(connection=connection, execute=executed.append))
        assert executed == []
        assert queryset.count() == 0
        return
    assert search_index_name(table, column) in _plan(queryset)


def test_the_search_itself_reads_through_the_indexes(sakuraone, make_user):
    """hardware_search's GPU and NIC queries are ORs of these lookups: it finds a fragment of a
    serial and a MAC on either database, and on PostgreSQL each part of the OR is an index
    scan, not a scan of the table."""
    user = make_user("operator")
    gpu = GPU.objects.exclude(serial="").order_by("pk").first()
    nic = NIC.objects.exclude(mac="").order_by("pk").first()
    assert gpu in hardware_search(user=user, query=gpu.serial[-6:].upper()).gpus
    assert nic in hardware_search(user=user, query=nic.mac[-5:].upper()).nics
    if connection.vendor != "postgresql":
        return
    text = "gpu6251"
    gpus = (GPU.objects.filter(uuid__icontains=text) | GPU.objects.filter(serial__icontains=text)
            | GPU.objects.filter(pci_bus_id__icontains=text))
    plan = _plan(gpus.order_by())
    for column in ("uuid", "serial", "pci_bus_id"):
        assert search_index_name("inventory_gpu", column) in plan
    nics = (NIC.objects.filter(device__iexact=text) | NIC.objects.filter(netdev__iexact=text)
            | NIC.objects.filter(mac__icontains=text))
    plan = _plan(nics.order_by())
    for column in ("device", "netdev", "mac"):
        assert search_index_name("inventory_nic", column) in plan

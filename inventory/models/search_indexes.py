"""Indexes that let the jump box and the hardware search find a fragment without reading the
fleet: at scale 125 (100,000 GPUs, 150,000 NICs) a search for a hostname scanned every GPU's
UUID, serial and PCI address and every NIC's MAC with `UPPER(col) LIKE '%text%'`, 0.4-0.5 s a
table (1.5 s a search).

PostgreSQL only. A `LIKE '%fragment%'` can use a GIN index of trigrams (contrib's pg_trgm, a
"trusted" extension since PostgreSQL 13: a database owner may create it without superuser).
Each index is on the very expression Django writes for the lookup, `UPPER("col"::text)`, for
icontains (trigrams) and iexact (a btree), or the planner would not match it; the test of
this module asks the planner. Where pg_trgm may not be created the search still works, by
scanning as before, and the migration says so. SQLite (the embedded default, SAKURAONE's 100
nodes) scans; it has no such index.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, transaction

logger = logging.getLogger(__name__)

# (table, column, how it is searched): "contains" for icontains, "exact" for iexact.
SEARCHED_COLUMNS = (
    ("inventory_node", "hostname", "contains"),
    ("inventory_node", "serial", "contains"),
    ("inventory_gpu", "uuid", "contains"),
    ("inventory_gpu", "serial", "contains"),
    ("inventory_gpu", "pci_bus_id", "contains"),
    ("inventory_nic", "mac", "contains"),
    ("inventory_nic", "device", "exact"),
    ("inventory_nic", "netdev", "exact"),
)


def search_index_name(table: str, column: str) -> str:
    return f"{table}_{column}_search"


def _create_statement(table: str, column: str, how: str) -> str:
    name = search_index_name(table, column)
    expression = f'UPPER("{column}"::text)'
    if how == "contains":
        return f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin ({expression} gin_trgm_ops)"
    return f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({expression})"


def create_search_indexes(schema_editor) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=connection.alias):  # a savepoint: a refusal is not fatal
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        trigrams = True
    except DatabaseError as error:
        trigrams = False
        logger.warning("pg_trgm could not be created (%s): hardware search scans the tables; "
                       "a superuser may run CREATE EXTENSION pg_trgm and migrate again", error)
    for table, column, how in SEARCHED_COLUMNS:
        if how == "contains" and not trigrams:
            continue
        schema_editor.execute(_create_statement(table, column, how))


def drop_search_indexes(schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, column, _ in SEARCHED_COLUMNS:
        schema_editor.execute(f"DROP INDEX IF EXISTS {search_index_name(table, column)}")

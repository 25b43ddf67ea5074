"""Natural sort keys kept by PostgreSQL: gpu2 < gpu10 < gpu100 < gpu1000, Ethernet2 < Ethernet10.

Hostnames sorted as text put gpu1000 between gpu100 and gpu101. Sorting in Python would load
the whole fleet (12,500 nodes) for every page, so each named model stores a key column in which
every run of digits is zero-padded to NATURAL_SORT_DIGITS. The column is GENERATED ... STORED:
PostgreSQL computes it on every write path (save, bulk_create, bulk_update, the topology and
NetBox imports, raw SQL) and filled it for the rows that existed when it was added, so no code
path can forget it. It is indexed, so ordering by it stays an index scan and pageable.
"""

from __future__ import annotations

import re

from django.db import models

NATURAL_SORT_FUNCTION = "inventory_natural_sort_key"
NATURAL_SORT_DIGITS = 20  # longer digit runs are kept as they are (none in real hostnames)

# IMMUTABLE, as a generated column requires: the key depends on the value alone.
CREATE_NATURAL_SORT_FUNCTION = rf"""
CREATE OR REPLACE FUNCTION {NATURAL_SORT_FUNCTION}(value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(
        CASE WHEN part[1] ~ '^[0-9]' AND length(part[1]) < {NATURAL_SORT_DIGITS}
             THEN lpad(part[1], {NATURAL_SORT_DIGITS}, '0') ELSE part[1] END,
        '' ORDER BY position), '')
    FROM regexp_matches(value, '([0-9]+|[^0-9]+)', 'g') WITH ORDINALITY AS parts(part, position)
$$;
"""  # noqa: S608 - built from this module's constants only
DROP_NATURAL_SORT_FUNCTION = f"DROP FUNCTION IF EXISTS {NATURAL_SORT_FUNCTION}(text);"

_DIGIT_RUN = re.compile(r"[0-9]+")


def natural_sort_text(value: str | None) -> str | None:
    """The same key in Python, for SQLite (the embedded default), where it is registered as an
    application-defined function on each connection."""
    if value is None:
        return None
    return _DIGIT_RUN.sub(
        lambda run: (
            run[0].zfill(NATURAL_SORT_DIGITS) if len(run[0]) < NATURAL_SORT_DIGITS else run[0]
        ),
        value,
    )


def create_natural_sort_function(connection) -> None:
    """Make the key's function exist for `connection`: PostgreSQL keeps it in the schema (the
    migration creates it); SQLite needs it on every connection, deterministic so that a
    generated column may call it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(CREATE_NATURAL_SORT_FUNCTION)
    elif connection.vendor == "sqlite":
        connection.connection.create_function(
            NATURAL_SORT_FUNCTION, 1, natural_sort_text, deterministic=True
        )


def register_on_sqlite_connections(sender, connection, **kwargs) -> None:
    if connection.vendor == "sqlite":
        create_natural_sort_function(connection)


def natural_sort_key(source: str) -> models.GeneratedField:
    """A stored, indexed natural sort key of the text field `source`."""
    return models.GeneratedField(
        expression=models.Func(
            models.F(source), function=NATURAL_SORT_FUNCTION, output_field=models.TextField()
        ),
        # Each digit may become NATURAL_SORT_DIGITS characters: text, not a bounded varchar.
        output_field=models.TextField(),
        db_persist=True,
        db_index=True,
        editable=False,
    )

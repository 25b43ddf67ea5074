"""Writing many rows at once on PostgreSQL through COPY, for the writers where the ORM's
per-value preparation is most of the time (a fabric poll's 43,000 ports, a topology import's
120,000 rows at scale 20). Elsewhere (SQLite for the demo) the same calls go through
bulk_create.

In portal/ because any app may write in bulk: inventory imports topologies, fabric stores polls.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Field, JSONField, Model


def written_fields(model: type[Model]) -> list[Field]:
    """The columns a bulk write fills: every concrete field but the primary key and the
    generated ones (e.g. the natural sort keys), which PostgreSQL computes and refuses in COPY."""
    return [
        f
        for f in model._meta.concrete_fields
        if not f.primary_key and not getattr(f, "generated", False)
    ]


def copy_rows(cursor, table: str, fields: list[Field], rows: Iterable[list]) -> None:
    """COPY `rows` (lists of values in `fields` order) into `table`, a quoted table name.

    psycopg's COPY does not adapt a JSON column's Python value by itself: those values are
    wrapped (in place: each row must be a fresh list)."""
    from psycopg.types.json import Jsonb

    columns = ", ".join(connection.ops.quote_name(each.column) for each in fields)
    json_positions = [
        position for position, each in enumerate(fields) if isinstance(each, JSONField)
    ]
    with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for values in rows:
            for position in json_positions:
                values[position] = Jsonb(values[position])
            copy.write_row(values)


def bulk_upsert(model: type[Model], rows: list[dict], *, unique_fields: list[str]) -> None:
    """Insert `rows` ({attname: value}, every concrete field but the primary key), or update
    every other column where `unique_fields` already exist.

    On PostgreSQL through COPY into a temporary table and one INSERT ... ON CONFLICT.
    """
    if not rows:
        return
    fields = written_fields(model)
    unique_columns = [model._meta.get_field(name).column for name in unique_fields]
    updated = [f.column for f in fields if f.column not in unique_columns]
    if connection.vendor != "postgresql":
        model.objects.bulk_create(
            [model(**row) for row in rows],
            update_conflicts=True,
            unique_fields=unique_fields,
            update_fields=[f.name for f in fields if f.column in updated],
            batch_size=2000,
        )
        return
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    staging = quote(f"{model._meta.db_table}_staging")
    columns = ", ".join(quote(f.column) for f in fields)
    attnames = [f.attname for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} ON COMMIT DELETE ROWS AS "  # noqa: S608
            f"SELECT {columns} FROM {table} WITH NO DATA"
        )
        copy_rows(cursor, staging, fields, ([row[name] for name in attnames] for row in rows))
        assignments = ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in updated)
        conflict = ", ".join(quote(c) for c in unique_columns)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging} "  # noqa: S608
            f"ON CONFLICT ({conflict}) DO UPDATE SET {assignments}"
        )
        cursor.execute(f"DELETE FROM {staging}")  # noqa: S608 - a second upsert may follow

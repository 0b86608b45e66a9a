"""Rows in bulk for ``seed_volume``: ids reserved first, then one COPY (PostgreSQL) or one
``executemany`` INSERT (SQLite) per table and batch, or one INSERT ... SELECT that derives a
table's rows from rows already written (computed by the database, no Python per row).

Rows are plain tuples of the columns named (attnames); every other column gets its field's
default (``auto_now`` fields: now), the primary key its identity default when not named, and
generated columns are computed by the database. JSON columns take JSON text (or None). Nothing
here runs ``save()``, signals or ``pre_save``: the rows are exactly what the caller built.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence

from django.db import connection, models
from django.utils import timezone


def reserve_ids(model: type[models.Model], count: int) -> list[int]:
    """``count`` new primary keys for ``model``. PostgreSQL: drawn from the table's own sequence
    (safe beside concurrent writers); SQLite: after the largest id (call inside the transaction
    that inserts them: SQLite has one writer)."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, count]
            )
            return [row[0] for row in cursor.fetchall()]
        cursor.execute(f'SELECT COALESCE(MAX("id"), 0) FROM "{table}"')  # noqa: S608 (a model's table)
        top = cursor.fetchone()[0]
    return list(range(top + 1, top + 1 + count))


def _rest(model: type[models.Model], columns: Sequence[str]) -> tuple[list[models.Field], list]:
    """The fields not in ``columns`` that take a value (not the primary key, not generated) and
    those values: the field's default, now for ``auto_now``, JSON defaults as JSON text."""
    now = timezone.now()
    fields, values = [], []
    for f in model._meta.concrete_fields:
        if f.generated or f.primary_key or f.attname in columns:
            continue
        value = f.get_default()
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            value = now
        elif isinstance(f, models.JSONField):
            value = json.dumps(value, ensure_ascii=False)
        fields.append(f)
        values.append(value)
    return fields, values


def copy_rows(model: type[models.Model], columns: Sequence[str], rows: Iterable[tuple]) -> int:
    """Write ``rows`` (tuples in ``columns``' order) of ``model``; returns how many."""
    rows = rows if isinstance(rows, list) else list(rows)
    if not rows:
        return 0
    by_name = {f.attname: f for f in model._meta.concrete_fields}
    rest, extra = _rest(model, columns)
    fields = [by_name[c] for c in columns] + rest
    names = ", ".join(f'"{f.column}"' for f in fields)
    table = model._meta.db_table
    extra = tuple(extra)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
                write = copy.write_row
                for row in rows:
                    write(row + extra)
        else:
            marks = ", ".join(["%s"] * len(fields))
            jsons = {i for i, f in enumerate(fields) if isinstance(f, models.JSONField)}
            prepared = [
                [
                    f.get_db_prep_save(json.loads(v) if i in jsons and v is not None else v, connection)
                    for i, (f, v) in enumerate(zip(fields, row + extra))
                ]
                for row in rows
            ]
            cursor.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', prepared)  # noqa: S608
    return len(rows)


def insert_select(model: type[models.Model], exprs: dict[str, str], source: str, params: Sequence = ()) -> int:
    """``INSERT INTO model (the rest, exprs' columns) SELECT the rest's defaults, exprs' SQL
    <source>``: rows derived by the database from rows already written. ``source`` is the SQL
    after the select list (``FROM ... WHERE ...``); ``params`` fill the ``%s`` of the exprs,
    then of ``source``, in that order. Returns the rows written."""
    by_name = {f.attname: f for f in model._meta.concrete_fields}
    rest, extra = _rest(model, list(exprs))
    if connection.vendor != "postgresql":
        extra = [
            f.get_db_prep_save(json.loads(v) if isinstance(f, models.JSONField) else v, connection)
            for f, v in zip(rest, extra)
        ]
    names = ", ".join([*(f'"{f.column}"' for f in rest), *(f'"{by_name[c].column}"' for c in exprs)])
    select = ", ".join([*(["%s"] * len(rest)), *exprs.values()])
    sql = f'INSERT INTO "{model._meta.db_table}" ({names}) SELECT {select} {source}'  # noqa: S608 (fixed SQL)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*extra, *params])
        return cursor.rowcount


def plus(column: str, delta: dt.timedelta) -> str:
    """SQL for the time ``column`` + ``delta`` (whole seconds) on this database."""
    seconds = int(delta.total_seconds())
    if connection.vendor == "postgresql":
        return f"({column} + interval '{seconds} seconds')"
    return f"datetime({column}, '{seconds:+d} seconds')"


def db_time(value: dt.datetime | None):
    """An aware datetime as this database compares it (SQLite: its stored UTC text)."""
    return connection.ops.adapt_datetimefield_value(value)

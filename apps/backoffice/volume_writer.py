"""Rows in bulk for ``seed_volume``: ids reserved first, then one COPY (PostgreSQL) or one
``executemany`` INSERT (SQLite) per table and batch.

Model instances are built by the caller with every value set (``auto_now`` fields left at
None get ``now``); generated columns are skipped (the database computes them). Nothing here
runs ``save()``, signals or ``pre_save``: the rows are exactly what the caller built.
"""

from __future__ import annotations

import json

from django.db import connection, models
from django.db.models.base import ModelState
from django.utils import timezone


def _columns(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not f.generated]


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


_DEFAULTS: dict[type, dict] = {}


def new(model: type[models.Model], **values) -> models.Model:
    """An unsaved instance without ``Model.__init__`` (a fifth of the cost): the fields'
    defaults, then ``values`` by attname (``customer_id``, not ``customer``)."""
    defaults = _DEFAULTS.get(model)
    if defaults is None:
        defaults = _DEFAULTS[model] = {f.attname: f.get_default() for f in _columns(model)}
    obj = model.__new__(model)
    obj.__dict__.update(defaults)
    obj.__dict__.update(values)
    obj._state = ModelState()
    return obj


def _pg_value(field: models.Field):
    if isinstance(field, models.JSONField):
        return lambda v: None if v is None else json.dumps(v, ensure_ascii=False)
    return None


def insert(model: type[models.Model], objs: list[models.Model]) -> int:
    """Write ``objs`` (primary keys set) as they are; returns how many."""
    if not objs:
        return 0
    fields = _columns(model)
    now = timezone.now()
    for f in fields:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            for o in objs:
                if getattr(o, f.attname) is None:
                    setattr(o, f.attname, now)
    names = ", ".join(f'"{f.column}"' for f in fields)
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            converters = [(f.attname, _pg_value(f)) for f in fields]
            with cursor.cursor.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
                for o in objs:
                    copy.write_row([c(getattr(o, a)) if c else getattr(o, a) for a, c in converters])
        else:
            marks = ", ".join(["%s"] * len(fields))
            rows = [[f.get_db_prep_save(getattr(o, f.attname), connection) for f in fields] for o in objs]
            cursor.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', rows)  # noqa: S608
    return len(objs)

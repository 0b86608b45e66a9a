"""The order's rows written at create: the order, its lines and its "created" event.

The hottest write of the shop: every 秒杀 winner makes them while the sale's and the SKU's rows
wait at the end of the same transaction. On PostgreSQL they are ONE statement of fixed text for
any number of orders (:func:`pg_statement`, data-modifying CTEs over one JSON parameter: one round
trip, a text psycopg parses once per process); elsewhere (SQLite) the ORM writes them. Both paths
give equal rows and objects (``tests/orders/test_order_rows.py``). Lock order (``starmall/locking.py``
step 1): the new order row first; its lines' KEY SHARE locks on their SKU and product rows do not
conflict with the stock UPDATEs (FOR NO KEY UPDATE) at the end of the transaction.
"""

from __future__ import annotations

import datetime as dt
import functools
import json

from django.db import connection

from apps.orders import drafts
from apps.orders.models import Order, OrderEvent, OrderLine, OrderStatus

CREATED_ACTOR = "customer"
CREATED_NOTE = "下单"

_LINE_COLUMNS = ("sku_id", "product_id", "name", "specs", "price_fen", "quantity", "amount_fen")
#: the columns an insert writes: not the generated ones (receiver_name / receiver_phone), the database's
_WRITTEN = [field for field in Order._meta.concrete_fields if not field.generated]
_COLUMNS = {field.attname: field.column for field in _WRITTEN}  # attribute -> column


def order_fields(
    draft: drafts.OrderDraft,
    *,
    customer_id: int,
    order_no: str,
    remark: str,
    pay_deadline: dt.datetime,
    now: dt.datetime,
    extra: dict | None = None,
) -> dict:
    """The new order's columns (unpaid), as ``Order.objects.create`` would write them: the
    draft's, then ``extra`` (e.g. a pickup order's store), then every other column of the model
    at its default, so a column added later is written by both paths alike."""
    fields = {
        "order_no": order_no,
        "order_key": draft.order_key,
        "customer_id": customer_id,
        "kind": draft.kind,
        "status": OrderStatus.UNPAID.value,
        "goods_fen": draft.goods_fen,
        "freight_fen": draft.freight_fen,
        "coupon_fen": draft.coupon_fen,
        "points_fen": draft.points_fen,
        "points_used": draft.points_used,
        "member_fen": draft.member_fen,
        "pay_fen": draft.pay_fen,
        "coupon_id": draft.coupon_id,
        "pay_method": "",
        "slot_id": draft.slot_id,
        "flash_sale_id": draft.flash_sale_id,
        "address": draft.address,
        "remark": remark,
        "created_at": now,
        "pay_deadline": pay_deadline,
        "paid_at": None,
        "shipped_at": None,
        "completed_at": None,
        "cancelled_at": None,
        "cancel_reason": "",
    }
    fields.update(extra or {})
    for field in _WRITTEN:
        if not field.primary_key and field.attname not in fields:
            default = field.get_default()
            fields[field.attname] = getattr(default, "value", default)  # a choices enum as its stored value
    return fields


def order_rows_insert(
    draft: drafts.OrderDraft,
    *,
    customer_id: int,
    order_no: str,
    remark: str,
    pay_deadline: dt.datetime,
    now: dt.datetime,
    extra: dict | None = None,
) -> tuple[Order, list[OrderLine]]:
    """INSERT the unpaid order of ``draft``, its lines (as priced in the draft, in its order)
    and its "created" event (actor ``customer``), in the caller's transaction; return the
    order and its lines as saved instances. ``now``: the order's and the event's
    ``created_at`` (aware). ``extra``: more columns of the order by attribute name
    (``{"delivery": "pickup", "pickup_store_id": 3, ...}``). A second order of the key raises IntegrityError (UNIQUE
    order_key), which rolls the caller's transaction back."""
    fields = order_fields(
        draft,
        customer_id=customer_id,
        order_no=order_no,
        remark=remark,
        pay_deadline=pay_deadline,
        now=now,
        extra=extra or {},
    )
    if connection.vendor != "postgresql":
        return _orm_insert(draft, fields, now)
    return _pg_insert([(draft, fields)], now)[0]


def orders_rows_insert(entries: list[dict]) -> list[tuple[Order, list[OrderLine]]]:
    """:func:`order_rows_insert` for several orders (``entries``: its keyword arguments, one dict
    per order, all with the same ``now``), in the order given: on PostgreSQL their statements go
    in ONE round trip; elsewhere the ORM writes them one after another."""
    if connection.vendor != "postgresql":
        return [order_rows_insert(**entry) for entry in entries]
    now = entries[0]["now"]
    made = []
    for entry in entries:
        fields = {name: value for name, value in entry.items() if name != "draft"}
        fields["extra"] = fields.get("extra") or {}
        made.append((entry["draft"], order_fields(entry["draft"], **fields)))
    return _pg_insert(made, now)


def _orm_insert(draft: drafts.OrderDraft, fields: dict, now: dt.datetime) -> tuple[Order, list[OrderLine]]:
    """The ORM's three INSERTs (the reference the hand-written statement is held equal to)."""
    order = Order.objects.create(**fields)
    lines = OrderLine.objects.bulk_create(
        [
            OrderLine(
                order=order,
                sku_id=line.sku_id,
                product_id=line.product_id,
                name=line.name,
                specs=line.specs,
                price_fen=line.price_fen,
                quantity=line.quantity,
                amount_fen=line.amount_fen,
            )
            for line in draft.lines
        ]
    )
    OrderEvent.objects.create(order=order, to_status=OrderStatus.UNPAID, actor=CREATED_ACTOR, note=CREATED_NOTE)
    return order, lines


def _pg_insert(made: list[tuple[drafts.OrderDraft, dict]], now: dt.datetime) -> list[tuple[Order, list[OrderLine]]]:
    """The rows of ``made`` (``(draft, fields)`` pairs) in ONE statement of fixed text
    (:func:`pg_statement`), the orders and their lines passed as one JSON parameter: one round
    trip, and a query psycopg parses once per process rather than once per batch."""
    sql, param = pg_statement(made, now)
    with connection.cursor() as cursor:
        cursor.execute(sql, [param, OrderStatus.UNPAID.value, CREATED_ACTOR, CREATED_NOTE, now])
        ids = {n: (order_id, line_ids) for n, order_id, line_ids in cursor.fetchall()}
    return [saved(draft, fields, *ids[n], connection.alias) for n, (draft, fields) in enumerate(made)]


def _json_default(value):
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON: add it to order_rows._json_default")


def pg_statement(made: list[tuple[drafts.OrderDraft, dict]], now: dt.datetime) -> tuple[str, str]:
    """The PostgreSQL statement inserting the orders of ``made`` (``fields``: :func:`order_fields`),
    each draft's lines and a "created" event at ``now``, and its first parameter: the orders as
    a JSON array (``n`` = position in ``made``, ``lines`` = the draft's lines in order). The
    other parameters are the event's status, actor, note and time. One row per order comes
    back: ``n``, the order's id, its lines' ids in the draft's order."""
    rows = []
    for n, (draft, fields) in enumerate(made):
        row = {_COLUMNS[name]: value for name, value in fields.items()}
        row["n"] = n
        row["lines"] = [
            {
                "i": i,
                "sku_id": line.sku_id,
                "product_id": line.product_id,
                "name": line.name,
                "specs": line.specs,
                "price_fen": line.price_fen,
                "quantity": line.quantity,
                "amount_fen": line.amount_fen,
            }
            for i, line in enumerate(draft.lines)
        ]
        rows.append(row)
    return _pg_sql(), json.dumps(rows, ensure_ascii=False, default=_json_default)


@functools.cache
def _pg_sql() -> str:
    """The statement's text: the same for every batch (the model's columns, in its order)."""
    quote = connection.ops.quote_name
    fields = [field for field in _WRITTEN if not field.primary_key]
    columns = ", ".join(quote(field.column) for field in fields)
    record = ", ".join(f"{quote(field.column)} {field.db_type(connection)}" for field in fields)
    line_fields = [OrderLine._meta.get_field(name) for name in _LINE_COLUMNS]
    line_columns = ", ".join(quote(field.column) for field in line_fields)
    line_record = ", ".join(f"{quote(field.column)} {field.db_type(connection)}" for field in line_fields)
    order_table, line_table, event_table = (quote(m._meta.db_table) for m in (Order, OrderLine, OrderEvent))
    return (
        f"WITH r AS MATERIALIZED (SELECT * FROM jsonb_to_recordset(%s::jsonb) AS r(n int, lines jsonb, {record})), "
        f"o AS (INSERT INTO {order_table} ({columns}) SELECT {columns} FROM r ORDER BY n RETURNING id, order_key), "
        f"ro AS MATERIALIZED (SELECT r.n, o.id, r.lines FROM r JOIN o USING (order_key)), "
        f"l AS (INSERT INTO {line_table} (order_id, {line_columns}) SELECT ro.id, {line_columns} "
        f"FROM ro, jsonb_to_recordset(ro.lines) AS x(i int, {line_record}) ORDER BY ro.n, x.i RETURNING id, order_id), "
        f"e AS (INSERT INTO {event_table} (order_id, from_status, to_status, actor, note, created_at) "
        f"SELECT id, '', %s, %s, %s, %s FROM o) "
        f"SELECT ro.n, ro.id, ARRAY(SELECT l.id FROM l WHERE l.order_id = ro.id ORDER BY l.id) FROM ro ORDER BY ro.n"
    )


def saved(
    draft: drafts.OrderDraft, fields: dict, order_id: int, line_ids: list[int], alias: str = "default"
) -> tuple[Order, list[OrderLine]]:
    """The order and its lines as saved instances (ids from :func:`pg_statement`'s row), without
    a query: what ``Order.objects.create`` and ``bulk_create`` would have given back."""
    order = Order(id=order_id, **fields)
    order._state.adding, order._state.db = False, alias
    lines = []
    for line_id, line in zip(line_ids, draft.lines, strict=True):
        row = OrderLine(
            id=line_id,
            order=order,
            sku_id=line.sku_id,
            product_id=line.product_id,
            name=line.name,
            specs=line.specs,
            price_fen=line.price_fen,
            quantity=line.quantity,
            amount_fen=line.amount_fen,
        )
        row._state.adding, row._state.db = False, alias
        lines.append(row)
    return order, lines


def lines_cache(order: Order, lines: list[OrderLine]) -> None:
    """Let ``order.lines.all()`` answer from the rows just inserted, as prefetch_related would
    (create's answer serializes them: one query less per order, none in the create gate)."""
    cached = order.lines.all()
    cached._result_cache = lines
    cached._prefetch_done = True
    order._prefetched_objects_cache = {"lines": cached}

"""The order's rows written at create: the order, its lines and its "created" event.

These three INSERTs are the hottest write of the shop (every winner of a 秒杀 makes them while
the sale's and the SKU's rows wait at the end of the same transaction). On PostgreSQL they are
ONE hand-written statement (:data:`_PG_INSERT`, data-modifying CTEs): one round trip and no
per-row ORM work (compiling three INSERTs, building the instances). Elsewhere (SQLite) the ORM
writes them. Both paths take the same values and give back equal objects:
``tests/orders/test_order_rows.py`` holds every field of the rows and of the returned
instances equal between the two.

Lock order (``starmall/locking.py``): the new order row first (step 1); the lines' foreign keys
take KEY SHARE locks on their SKU and product rows, which the stock UPDATEs at the end of the
transaction (FOR NO KEY UPDATE) do not conflict with.
"""

from __future__ import annotations

import datetime as dt
import json

from django.db import connection

from apps.orders import drafts
from apps.orders.models import Order, OrderEvent, OrderLine, OrderStatus

CREATED_ACTOR = "customer"
CREATED_NOTE = "下单"

_LINE_COLUMNS = ("sku_id", "product_id", "name", "specs", "price_fen", "quantity", "amount_fen")


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
    for field in Order._meta.concrete_fields:
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
    return _pg_insert(draft, fields, now)


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
    event = OrderEvent.objects.create(order=order, to_status=OrderStatus.UNPAID, actor=CREATED_ACTOR, note=CREATED_NOTE)
    # auto_now_add wrote the clock of each save: the rows take ``now``, as the PostgreSQL statement writes them
    Order.objects.filter(pk=order.pk).update(created_at=now)
    OrderEvent.objects.filter(pk=event.pk).update(created_at=now)
    order.created_at = now
    return order, lines


def _pg_insert(draft: drafts.OrderDraft, fields: dict, now: dt.datetime) -> tuple[Order, list[OrderLine]]:
    sql, params = pg_statement(draft, fields, now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        order_id, line_ids = cursor.fetchone()
    return saved(draft, fields, order_id, line_ids, connection.alias)


def pg_statement(draft: drafts.OrderDraft, fields: dict, now: dt.datetime) -> tuple[str, list]:
    """The PostgreSQL statement inserting the order (``fields``: :func:`order_fields`), the
    draft's lines and the "created" event at ``now``, and its parameters (``%s`` style, for
    Django's cursor and psycopg alike). It returns one row: the order's id and its lines' ids
    in the draft's order."""
    json_columns = {field.attname for field in Order._meta.concrete_fields if field.get_internal_type() == "JSONField"}
    columns = list(fields)
    values = [
        json.dumps(v, ensure_ascii=False) if name in json_columns and v is not None else v for name, v in fields.items()
    ]
    line_rows = ", ".join(["(%s, %s, %s, %s::jsonb, %s, %s, %s)"] * len(draft.lines))
    line_values = []
    for line in draft.lines:
        line_values += [
            line.sku_id,
            line.product_id,
            line.name,
            json.dumps(line.specs, ensure_ascii=False),
            line.price_fen,
            line.quantity,
            line.amount_fen,
        ]
    order_table, line_table, event_table = Order._meta.db_table, OrderLine._meta.db_table, OrderEvent._meta.db_table
    marks = ", ".join("%s::jsonb" if name in json_columns else "%s" for name in columns)
    sql = (
        f"WITH o AS (INSERT INTO {order_table} ({', '.join(columns)}) VALUES ({marks}) RETURNING id), "
        f"l AS (INSERT INTO {line_table} (order_id, {', '.join(_LINE_COLUMNS)}) "
        f"SELECT o.id, v.* FROM o, (VALUES {line_rows}) AS v({', '.join(_LINE_COLUMNS)}) RETURNING id), "
        f"e AS (INSERT INTO {event_table} (order_id, from_status, to_status, actor, note, created_at) "
        f"SELECT o.id, '', %s, %s, %s, %s FROM o) "
        f"SELECT o.id, ARRAY(SELECT id FROM l ORDER BY id) FROM o"
    )
    return sql, [*values, *line_values, OrderStatus.UNPAID.value, CREATED_ACTOR, CREATED_NOTE, now]


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

"""A 秒杀 winner's create in ONE round trip to PostgreSQL (the create gate's database half).

``services.order_create`` behind Django costs a whole request and nine round trips, while the
sale's and the SKU's rows stay locked from their UPDATEs until the application sends COMMIT.
For the drafts :func:`fits` (goods to an address, nothing but the lines and maybe a 秒杀: no
coupon, points, slot, cart lines, 拼团, 砍价 or pickup) the ASGI create gate
(``apps.orders.api.create_gate``) runs the SAME transaction here instead, on an async psycopg
connection, as ONE query message of three statements, which PostgreSQL runs as one implicit
transaction: committed after the last, rolled back whole when one fails. The values are bound
client-side (psycopg's ``AsyncClientCursor``, which quotes them as libpq does), measured cheaper
than pipeline mode's prepared statements for the client and the server alike
(docs/PERFORMANCE.md):

1. the order, its lines and its "created" event: ``order_rows.pg_statement``, the statement
   ``order_create`` runs (lock step 1 of ``starmall/locking.py``);
2. ``SELECT ... FOR UPDATE`` of the customer's row (step 5: ``wallet.customer_lock``, where one
   customer's creates pass one at a time);
3. :func:`take_statement`: the per-customer caps counted after that lock (this transaction's
   order included, as ``_caps_enforce``), the customer still active (what token auth checks),
   the 秒杀 allowance and the sale's conditional UPDATE (``flash_sales.allowance_take_sql`` and
   ``sale_take_sql``, the statements ``flash_sale_take`` runs), then the SKUs' conditional
   UPDATEs in id order (``stock.sku_take_sql``, ``sku_stock_decrement``'s) —
   each step runs only when the one before took its row — and a last SELECT that calls
   ``orders_refuse()`` (migration 0017) when a step did not: the error rolls the whole
   transaction back.

The hot rows stay locked only while statement 3 runs and PostgreSQL commits right after it,
with no round trip to the application in between, as in the bare-SQL limit of ``make bench``.
On a refusal nothing is kept and the gate hands the request to Django, whose ``order_create``
answers it exactly (and gives a reservation back). The rows and the answer equal
``order_create``'s for every field: ``tests/orders/test_flash_create.py``. Sending the three
statements in pipeline mode with prepared statements instead was measured and rejected: less
PostgreSQL CPU, more of the web worker's, a slower sale (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import psycopg
from django.conf import settings

from apps.accounts.models import Customer
from apps.catalog import stock
from apps.catalog.models import Kind
from apps.marketing import flash_sales
from apps.orders import drafts, order_rows
from apps.orders.models import Order, OrderLine, OrderStatus

REFUSED = "orders_refuse: "  # the message prefix of the function's error


def fits(draft: drafts.OrderDraft) -> bool:
    """True for a draft this path creates: goods with an address and lines of at least one unit,
    nothing else to take (coupon, points, slot, cart lines, 拼团, 砍价, pickup store)."""
    return (
        draft.kind == Kind.GOODS
        and bool(draft.lines)
        and all(line.quantity > 0 for line in draft.lines)  # order_create refuses other units (ValueError)
        and draft.address is not None
        and draft.coupon_id is None
        and draft.points_used == 0
        and draft.slot is None
        and not draft.cart_items
        and draft.pickup_store is None
        and draft.group_buy_id is None
        and draft.group_id is None
        and draft.bargain_no is None
    )


def take_statement(draft: drafts.OrderDraft, *, customer_id: int, now: dt.datetime) -> tuple[str, list]:
    """Statement 3 (see the module) and its parameters. It returns one row: the stock each SKU
    has left, in SKU id order (0 flags it sold out after commit), or raises through
    ``orders_refuse`` (``caps``, ``customer``, ``taken``). ``now``: the window check (aware)."""
    cap = settings.MAX_UNPAID_ORDERS
    parts = [
        f"caps AS (SELECT count(*) AS n FROM (SELECT 1 FROM {Order._meta.db_table} "
        f"WHERE customer_id = %s AND status = %s LIMIT %s) t)",
        f"who AS (SELECT 1 FROM {Customer._meta.db_table} WHERE id = %s AND is_active)",
    ]
    params: list = [customer_id, OrderStatus.UNPAID.value, cap + 1, customer_id]
    before = None  # the step whose row the next one needs
    if draft.flash_sale_id:
        units = draft.units
        parts += [
            f"allowance AS ({flash_sales.allowance_take_sql()})",
            f"sale AS ({flash_sales.sale_take_sql(' AND EXISTS (SELECT 1 FROM allowance)')})",
        ]
        params += [draft.flash_sale_id, customer_id, units, draft.flash_sale_id, units]
        params += [units, units, draft.flash_sale_id, now, now, units]
        before = "sale"
    skus = []
    for i, sku_id in enumerate(sorted(draft.quantities)):
        name, units = f"sku{i}", draft.quantities[sku_id]
        after = f" AND EXISTS (SELECT 1 FROM {before})" if before else ""
        parts.append(f"{name} AS ({stock.sku_take_sql(after)})")
        params += [units, sku_id, units]
        skus.append(name)
        before = name
    stocks = ", ".join(f"(SELECT stock FROM {name})" for name in skus)
    sql = (
        f"WITH {', '.join(parts)} "
        f"SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM who) THEN orders_refuse('customer') "
        f"WHEN (SELECT n FROM caps) > %s THEN orders_refuse('caps') "
        f"WHEN NOT EXISTS (SELECT 1 FROM {before}) THEN orders_refuse('taken') ELSE 0 END, ARRAY[{stocks}]"
    )
    return sql, [*params, cap]


@dataclass
class Created:
    """What :func:`create` made: ``order`` and ``lines`` (saved instances, the lines also in the
    order's prefetch cache), ``sold_out`` (SKU ids left at 0 stock)."""

    order: Order
    lines: list[OrderLine]
    sold_out: list[int]


async def create(
    conn: psycopg.AsyncConnection,
    draft: drafts.OrderDraft,
    *,
    customer_id: int,
    order_no: str,
    remark: str,
    pay_deadline: dt.datetime,
    now: dt.datetime,
) -> Created | None:
    """Run the transaction (module docstring) on ``conn`` (autocommit, idle: the query message
    is its own transaction); return what it
    created, or None when PostgreSQL refused (caps, an inactive customer, the allowance, the
    sale's window or stock, a SKU's stock; nothing kept). Another error (a second order of the
    key: UniqueViolation; a lost connection) propagates, also with nothing kept unless COMMIT
    had run. ``now``/``pay_deadline``: aware; ``remark``: at most 200 characters."""
    fields = order_rows.order_fields(
        draft, customer_id=customer_id, order_no=order_no, remark=remark, pay_deadline=pay_deadline, now=now
    )
    rows_sql, rows_params = order_rows.pg_statement(draft, fields, now)
    take_sql, take_params = take_statement(draft, customer_id=customer_id, now=now)
    lock_sql = f"SELECT 1 FROM {Customer._meta.db_table} WHERE id = %s FOR UPDATE"
    cursor = psycopg.AsyncClientCursor(conn)
    try:
        await cursor.execute("; ".join((rows_sql, lock_sql, take_sql)), [*rows_params, customer_id, *take_params])
    except psycopg.errors.RaiseException as exc:
        if str(exc).startswith(REFUSED):
            return None
        raise
    order_id, line_ids = await cursor.fetchone()
    cursor.nextset()  # the customer's lock
    cursor.nextset()
    _, stocks = await cursor.fetchone()
    order, lines = order_rows.saved(draft, fields, order_id, line_ids)
    order_rows.lines_cache(order, lines)
    return Created(order, lines, [sku_id for sku_id, left in zip(sorted(draft.quantities), stocks) if left == 0])

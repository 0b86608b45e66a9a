"""A 秒杀 winner's create in ONE round trip to PostgreSQL (the create gate's database half).

``services.order_create`` behind Django costs a whole request and nine round trips, while the
sale's and the SKU's rows stay locked from their UPDATEs until the application sends COMMIT.
For the drafts :func:`fits` (goods to an address, nothing but the lines and maybe a 秒杀: no
coupon, points, slot, cart lines, 拼团, 砍价 or pickup) the ASGI create gate
(``starmall.gates.order_create``) runs the SAME transaction here instead, on an async psycopg
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

Winners whose creates arrive while the gate's connections are busy go out together
(:func:`create_many`): one transaction for all of a sale's, so the sale's row is locked and
committed once per batch instead of once per order; each order still equal to its lone
create's (``tests/orders/test_flash_create_batch.py``).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable
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

logger = logging.getLogger(__name__)


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


def take_statement(
    draft: drafts.OrderDraft, *, customer_id: int, now: dt.datetime, part: str = "all", label: str = ""
) -> tuple[str, list]:
    """Statement 3 (see the module) and its parameters. It returns one row: 0 and the stock each
    SKU has left, in SKU id order (0 flags it sold out after commit), or raises through
    ``orders_refuse`` (``caps``, ``customer``, ``taken``). ``now``: the window check (aware).

    ``part``: ``"all"``, or the same steps as two statements for :func:`create_many`, which runs
    every order's ``"customer"`` half (caps, active customer, 秒杀 allowance; one row: 0) before
    any order's ``"stock"`` half (the sale, the SKUs; 0 and the stocks), so that a transaction of
    several orders still takes allowances before the sale (``starmall/locking.py``, step 6).
    ``label``: appended to the refusal's reason after ``@`` (:func:`create_many` names the item
    and the half that refused; letters and digits only, written into the statement as they are)."""
    if label and not label.isalnum():
        raise ValueError(f"label {label!r}")
    tag = f"@{label}" if label else ""
    cap = settings.MAX_UNPAID_ORDERS
    parts, params, checks = [], [], []
    before = None  # the step whose row the next one needs
    if part in ("all", "customer"):
        parts += [
            f"caps AS (SELECT count(*) AS n FROM (SELECT 1 FROM {Order._meta.db_table} "
            f"WHERE customer_id = %s AND status = %s LIMIT %s) t)",
            f"who AS (SELECT 1 FROM {Customer._meta.db_table} WHERE id = %s AND is_active)",
        ]
        params += [customer_id, OrderStatus.UNPAID.value, cap + 1, customer_id]
        checks += [
            f"WHEN NOT EXISTS (SELECT 1 FROM who) THEN orders_refuse('customer{tag}')",
            f"WHEN (SELECT n FROM caps) > %s THEN orders_refuse('caps{tag}')",
        ]
        if draft.flash_sale_id:
            parts.append(f"allowance AS ({flash_sales.allowance_take_sql()})")
            params += [draft.flash_sale_id, customer_id, draft.units, draft.flash_sale_id, draft.units]
            before = "allowance"
    skus = []
    if part in ("all", "stock"):
        if draft.flash_sale_id:
            after = " AND EXISTS (SELECT 1 FROM allowance)" if before else ""
            parts.append(f"sale AS ({flash_sales.sale_take_sql(after)})")
            units = draft.units
            params += [units, units, draft.flash_sale_id, now, now, units]
            before = "sale"
        for i, sku_id in enumerate(sorted(draft.quantities)):
            name, units = f"sku{i}", draft.quantities[sku_id]
            after = f" AND EXISTS (SELECT 1 FROM {before})" if before else ""
            parts.append(f"{name} AS ({stock.sku_take_sql(after)})")
            params += [units, sku_id, units]
            skus.append(name)
            before = name
    if before:
        checks.append(f"WHEN NOT EXISTS (SELECT 1 FROM {before}) THEN orders_refuse('taken{tag}')")
    stocks = f", ARRAY[{', '.join(f'(SELECT stock FROM {name})' for name in skus)}]" if skus else ""
    sql = f"WITH {', '.join(parts)} SELECT CASE {' '.join(checks)} ELSE 0 END{stocks}"
    return sql, [*params, *([cap] if part in ("all", "customer") else [])]


@dataclass
class Created:
    """What :func:`create` made: ``order`` and ``lines`` (saved instances, the lines also in the
    order's prefetch cache), ``sold_out`` (SKU ids left at 0 stock)."""

    order: Order
    lines: list[OrderLine]
    sold_out: list[int]


@dataclass(frozen=True)
class Create:
    """One create to run: the winner's ``draft`` (it :func:`fits`), its ``customer_id``, the new
    ``order_no``, the ``remark`` (at most 200 characters, trimmed) and, aware (Shanghai),
    ``pay_deadline`` and ``now`` (the sale's window check and the rows' times)."""

    draft: drafts.OrderDraft
    customer_id: int
    order_no: str
    remark: str
    pay_deadline: dt.datetime
    now: dt.datetime


async def create(conn: psycopg.AsyncConnection, item: Create) -> Created | None:
    """Run the transaction (module docstring) for ``item`` on ``conn`` (autocommit, idle: the
    query message is its own transaction); return what it created, or None when PostgreSQL
    refused (caps, an inactive customer, the allowance, the sale's window or stock, a SKU's
    stock; nothing kept). Another error (a second order of the key: UniqueViolation; a lost
    connection) propagates, also with nothing kept unless COMMIT had run."""
    made = await _run(conn, [item])
    return made[0] if isinstance(made, list) else None


async def create_many(
    conn: psycopg.AsyncConnection, items: list[Create], *, warn: Callable[[str, Exception], None] | None = None
) -> list[Created | None]:
    """Create ``items`` (winners arriving together, ``starmall.gates.postgres.Batches``) with as few
    transactions as is safe, one result per item in order: a :class:`Created` or None (refused,
    a second order of its key, or an error: Django answers it exactly).

    Items of the same sale and the same SKUs run as ONE transaction: the sale's row is locked and
    committed once for all of them, where under a 秒杀's burst every winner otherwise queued on
    that row lock, one commit after another (docs/PERFORMANCE.md). Inside it the rows are taken
    in the lock order of ``starmall/locking.py`` whatever the batch: the new orders (by
    customer, then key), the customers' rows (``ORDER BY id ... FOR UPDATE``), every order's
    caps and allowance (:func:`take_statement`'s ``"customer"`` halves), then every order's sale
    and SKUs (the ``"stock"`` halves) — so a batch cannot wait in a circle with another batch,
    a lone create or Django.

    When PostgreSQL refuses one item the transaction is rolled back whole, and the refusal names
    that item: it runs alone (its exact answer); when its own caps or allowance refused it, the
    others go out together again; when the sale or a SKU ran out (or the window closed) at it,
    the items before it in the transaction's order go out together, the ones after it each alone.
    A second order of a key, or a deadlock reported anyway: each item alone. Any other error
    (a cancelled statement, a lost connection) gives None to the items of that group not yet
    committed, reported through ``warn`` (the gate's; else logged): the transactions committed
    before it keep their orders and their answers, and a broken connection stops the batch."""
    results: list[Created | None] = [None] * len(items)
    groups: dict[tuple, list[int]] = {}
    for i, item in enumerate(items):
        groups.setdefault((item.draft.flash_sale_id, tuple(sorted(item.draft.quantities))), []).append(i)
    for indexes in groups.values():
        try:
            await _group(conn, items, indexes, results)
        except psycopg.Error as exc:
            if warn is not None:
                warn("a batch of creates failed", exc)
            else:
                logger.warning("a batch of creates failed", exc_info=True)
            if conn.broken:
                break
    return results


async def _group(conn: psycopg.AsyncConnection, items: list[Create], indexes: list[int], results: list) -> None:
    """Create ``items[i]`` for ``i`` in ``indexes`` (one sale, the same SKUs) into ``results``,
    together where they can be (:func:`create_many`)."""
    together, alone = list(indexes), []
    while len(together) > 1:
        try:
            made = await _run(conn, [items[i] for i in together])
        except (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected):
            alone += together
            together = []
            break
        if isinstance(made, list):
            for i, created in zip(together, made, strict=True):
                results[i] = created
            together = []
            break
        if made.index is None:
            alone += together
            together = []
            break
        blamed = together[made.index]
        alone.append(blamed)
        if made.half == "customer":  # this customer's caps, state or allowance: the others are unaffected
            together = [i for i in together if i != blamed]
        else:  # the stock ran out at it: the ones before it had their units, the ones after would not
            ordered = sorted(together, key=lambda i: _order_key(items[i]))
            at = ordered.index(blamed)
            alone += ordered[at + 1 :]
            together = ordered[:at]
    for i in sorted(alone + together):
        try:
            results[i] = await create(conn, items[i])
        except psycopg.errors.UniqueViolation:
            results[i] = None  # the key's order exists (a create racing this one)


@dataclass(frozen=True)
class _Refusal:
    """PostgreSQL refused a transaction: ``half`` (``"customer"``, ``"stock"``) and ``index`` (in
    the items sent) of the item that refused, or ``""`` and None when the statement named none."""

    half: str
    index: int | None


_LABEL = re.compile(r"@([cs])(\d+)$")


def _order_key(item: Create) -> tuple[int, str]:
    """Where an item's rows come in a transaction of several (by customer, then key)."""
    return item.customer_id, item.draft.order_key


async def _run(conn: psycopg.AsyncConnection, items: list[Create]) -> list[Created] | _Refusal:
    """ONE query message, one implicit transaction, for ``items`` (module docstring; several as
    :func:`create_many` says): what each created, in ``items``' order, or the :class:`_Refusal`
    (nothing kept)."""
    order = sorted(range(len(items)), key=lambda i: _order_key(items[i]))
    halves = ("all",) if len(items) == 1 else ("customer", "stock")
    statements, params, all_fields = [], [], {}
    for i in order:
        item = items[i]
        fields = order_rows.order_fields(
            item.draft,
            customer_id=item.customer_id,
            order_no=item.order_no,
            remark=item.remark,
            pay_deadline=item.pay_deadline,
            now=item.now,
        )
        all_fields[i] = fields
        sql, values = order_rows.pg_statement(item.draft, fields, item.now)
        statements.append(sql)
        params += values
    statements.append(f"SELECT 1 FROM {Customer._meta.db_table} WHERE id = ANY(%s) ORDER BY id FOR UPDATE")
    params.append(sorted({item.customer_id for item in items}))
    for half in halves:
        for i in order:
            sql, values = take_statement(
                items[i].draft,
                customer_id=items[i].customer_id,
                now=items[i].now,
                part=half,
                label="" if half == "all" else f"{half[0]}{i}",
            )
            statements.append(sql)
            params += values
    cursor = psycopg.AsyncClientCursor(conn)
    try:
        await cursor.execute("; ".join(statements), params)
    except psycopg.errors.RaiseException as exc:
        message = exc.diag.message_primary or str(exc)
        if not message.startswith(REFUSED):
            raise
        label = _LABEL.search(message)
        if label is None:
            return _Refusal("", None)
        return _Refusal("customer" if label[1] == "c" else "stock", int(label[2]))
    ids = {}
    for i in order:
        ids[i] = await cursor.fetchone()
        cursor.nextset()
    cursor.nextset()  # the customers' lock
    if len(halves) == 2:
        for _ in order:  # the customer halves: 0 each
            cursor.nextset()
    made: dict[int, Created] = {}
    for i in order:
        _, stocks = await cursor.fetchone()
        cursor.nextset()
        draft = items[i].draft
        order_id, line_ids = ids[i]
        saved, lines = order_rows.saved(draft, all_fields[i], order_id, line_ids)
        order_rows.lines_cache(saved, lines)
        sold_out = [sku_id for sku_id, left in zip(sorted(draft.quantities), stocks) if left == 0]
        made[i] = Created(saved, lines, sold_out)
    return [made[i] for i in range(len(items))]

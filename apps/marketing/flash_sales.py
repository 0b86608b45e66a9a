"""Flash sales (秒杀): scheduling by staff, and the units orders take and give back.

Orders ask marketing, never the reverse: ``order_confirm`` calls :func:`flash_sale_check`,
``apps.orders.create`` calls :func:`allowances_take` and :func:`sale_stock_take` inside the
order's transaction, and the order's restore path (cancel, refund) calls :func:`flash_sale_give_back`.
A sale's ``stock`` is a quota on the SKU's stock, so DESIGN.md's invariant holds for every SKU;
``sold`` = the sale's units in live orders, and until the sale ends ``stock + sold`` = its quota
(the rules: "Conservation", the comment above :func:`flash_sale_check`). "Live" for a sale means
``is_active and starts_at <= now < ends_at`` (aware, Shanghai).
"""

from __future__ import annotations

import datetime as dt
import logging
from functools import partial

from django.db import connection, transaction
from django.db.models import Case, F, When
from django.utils import timezone

from apps.catalog import soldout
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.marketing import flash_quota
from apps.marketing.exceptions import FlashSaleLimitExceeded, FlashSaleNotLive
from apps.marketing.models import FlashSale, FlashSalePurchase
from starmall.errors import InvalidInput, NotFound

logger = logging.getLogger(__name__)

MAX_WINDOW = dt.timedelta(days=31)  # a 秒杀 lasts minutes or hours; a month is certainly a typo


def flash_sale_is_live(sale: FlashSale, now: dt.datetime | None = None) -> bool:
    """True while ``sale`` sells: active and ``starts_at <= now < ends_at``."""
    now = now or timezone.now()
    return sale.is_active and sale.starts_at <= now < sale.ends_at


# --- orders ask (confirm, create, cancel/refund) -----------------------------------------

# Conservation (each rule has a test in tests/marketing/):
# * A flash-sale order takes ``n`` from the sale (``stock -= n, sold += n``) AND ``n`` from the SKU
#   (``sku_stock_decrement``), both conditional, in the order's one transaction. So for every SKU
#   ``initial SKU stock = sku.stock + units in live orders`` (DESIGN.md; "live": not cancelled and
#   not refunded-and-restocked; goods refunded after shipping stay counted, they left the warehouse).
# * A cancelled, or refunded-and-restocked, order gives its ``n`` back: to the SKU always
#   (``sku_stock_restore``), to the sale's ``stock`` while the sale has not ended (another buyer may
#   have them at the sale price; after the end they sell at the normal price), ``sold -= n`` always.
#   Hence ``sold`` = the sale's units in live orders, and until the end ``stock + sold`` = the quota
#   (initial stock plus staff changes).
# * A customer's allowance (``FlashSalePurchase.quantity``) counts units in the customer's orders of
#   the sale that are neither cancelled nor refunded (API.md "counted over live orders"): it grows at
#   create and shrinks on cancel and on every full refund, restocked or not, so it never passes
#   ``limit_per_customer``.


def flash_sale_check(
    *, sale_id: int, customer_id: int, quantities: dict[int, int], now: dt.datetime | None = None
) -> FlashSale:
    """Confirm (phase 1) of a flash-sale order: return the sale whose price the order takes.

    ``quantities``: the cart as {sku_id: units}; it must be exactly one SKU, the sale's.
    Reads only (the units are taken at create). Raises NotFound (no such sale),
    InvalidInput (``items``: not exactly the sale's SKU), FlashSaleNotLive (409
    ``invalid_state``: outside the window or paused), InsufficientStock (the sale's own stock),
    FlashSaleLimitExceeded (409 ``limit_exceeded``: the customer's units in live orders of this
    sale plus these would pass ``limit_per_customer``).
    """
    sale = FlashSale.objects.filter(pk=sale_id).first()
    if sale is None:
        raise NotFound("没有这个秒杀活动。", flash_sale_id=sale_id)
    if list(quantities) != [sale.sku_id]:
        raise InvalidInput(items=["秒杀订单只能包含该活动的一个商品规格"])
    if not flash_sale_is_live(sale, now):
        raise FlashSaleNotLive(
            flash_sale_id=sale.pk,
            starts_at=timezone.localtime(sale.starts_at).isoformat(),
            ends_at=timezone.localtime(sale.ends_at).isoformat(),
        )
    units = quantities[sale.sku_id]
    if sale.stock < units:
        if sale.stock == 0:  # committed quota seen at 0: later losers hear it from Redis
            soldout.mark(soldout.flash_sale_key(sale.pk), value=sale.sku_id)
        raise InsufficientStock(
            "秒杀商品已抢完。", flash_sale_id=sale.pk, sku_id=sale.sku_id, requested=units, available=sale.stock
        )
    held = (
        FlashSalePurchase.objects.filter(sale=sale, customer_id=customer_id).values_list("quantity", flat=True).first()
        or 0
    )
    if held + units > sale.limit_per_customer:
        raise FlashSaleLimitExceeded(
            flash_sale_id=sale.pk, limit_per_customer=sale.limit_per_customer, held=held, requested=units
        )
    return sale


def allowances_take(*, sale_id: int, units: dict[int, int]) -> list[int]:
    """Add ``units`` (``{customer_id: units > 0}``) to each customer's allowance of the sale, within
    ``limit_per_customer``, in ONE statement (:func:`allowance_take_sql`; rows in customer id
    order, whose conflict rows serialise racing orders of one customer). Returns the customers
    refused (over the limit: nothing written for them). Needs a transaction."""
    if not units or min(units.values()) <= 0:
        raise ValueError(f"units must be positive, got {units}")
    customers = sorted(units)
    params = []
    for customer_id in customers:
        params += [customer_id, units[customer_id]]
    with connection.cursor() as cursor:
        cursor.execute(allowance_take_sql(len(customers)), [*params, sale_id])
        taken = {row[0] for row in cursor.fetchall()}
    return [customer_id for customer_id in customers if customer_id not in taken]


def sale_stock_take(*, sale_id: int, units: int, now: dt.datetime | None = None) -> None:
    """Take ``units`` from a live sale's stock and add them to ``sold``: ONE conditional UPDATE
    (:func:`sale_take_sql`; the units of several orders at once when a create batches them).
    0 rows: FlashSaleNotLive, or InsufficientStock (``detail.flash_sale_id``; a sale seen at 0 is
    flagged sold out). Needs a transaction; ``now``: aware, the window check."""
    if units <= 0:
        raise ValueError(f"units must be positive, got {units}")
    now = now or timezone.now()
    moment = connection.ops.adapt_datetimefield_value(now)  # as the ORM writes it (SQLite: naive UTC text)
    with connection.cursor() as cursor:
        cursor.execute(sale_take_sql(), [units, units, sale_id, moment, moment, units])
        if cursor.fetchone() is not None:
            return
    sale = FlashSale.objects.get(pk=sale_id)
    if not flash_sale_is_live(sale, now):
        raise FlashSaleNotLive(flash_sale_id=sale_id)
    if sale.stock == 0:
        soldout.mark(soldout.flash_sale_key(sale_id), value=sale.sku_id)
    raise InsufficientStock(
        "秒杀商品已抢完。", flash_sale_id=sale_id, sku_id=sale.sku_id, requested=units, available=sale.stock
    )


def allowance_take_sql(customers: int = 1) -> str:
    """Insert each (sale, customer) row with its units, or add them to the existing row, only
    while the total stays within the sale's ``limit_per_customer``; ``RETURNING customer_id`` (a
    customer missing: over the limit). Parameters: ``customer_id, units`` for each of
    ``customers``, then ``sale_id``. On a conflict the row is locked and its ``quantity``
    re-checked on the newest version (``ON CONFLICT DO UPDATE ... WHERE``)."""
    purchase, sale = FlashSalePurchase._meta.db_table, FlashSale._meta.db_table
    values = ", ".join(["(%s, %s)"] * customers)
    return (
        f"INSERT INTO {purchase} (sale_id, customer_id, quantity) "
        f"SELECT s.id, v.column1, v.column2 FROM (VALUES {values}) AS v, {sale} s "
        f"WHERE s.id = %s AND s.limit_per_customer >= v.column2 ORDER BY v.column1 "
        f"ON CONFLICT (sale_id, customer_id) DO UPDATE SET quantity = {purchase}.quantity + excluded.quantity "
        f"WHERE {purchase}.quantity + excluded.quantity <= "
        f"(SELECT limit_per_customer FROM {sale} WHERE id = excluded.sale_id) RETURNING customer_id"
    )


def sale_take_sql() -> str:
    """Take units from a live sale's stock and add them to ``sold``, ``RETURNING stock`` (no row:
    not live, or not enough left). Parameters ``(units, units, sale_id, now, now, units)``. Only
    the sale's own columns are conditions, so PostgreSQL re-checks them on the newest version
    after waiting for the row lock."""
    return (
        f"UPDATE {FlashSale._meta.db_table} SET stock = stock - %s, sold = sold + %s WHERE id = %s "
        f"AND is_active AND starts_at <= %s AND ends_at > %s AND stock >= %s RETURNING stock"
    )


@transaction.atomic(savepoint=False)
def flash_sale_give_back(
    *, sale_id: int, customer_id: int, units: int, restock: bool, now: dt.datetime | None = None
) -> None:
    """A flash-sale order of ``units`` stopped being live (cancelled or fully refunded).

    The caller runs this once per order, under its conditional order transition, in its
    transaction; the SKU's units are the caller's business (``sku_stock_restore`` when it
    restocks). Always: the customer's allowance shrinks by ``units``. With ``restock``
    (cancelled, or refunded and restocked): ``sold -= units``, and ``stock += units`` while
    the sale has not ended (see "Conservation" above). One UPDATE each; the guards
    (``quantity >= units``, ``sold >= units``) keep a double call from going negative.
    Allowance, then sale: step 6 of ``starmall/locking.py``; the caller restores SKUs after.
    """
    now = now or timezone.now()
    FlashSalePurchase.objects.filter(sale_id=sale_id, customer_id=customer_id, quantity__gte=units).update(
        quantity=F("quantity") - units
    )
    if restock:
        FlashSale.objects.filter(pk=sale_id, sold__gte=units).update(
            sold=F("sold") - units,
            stock=Case(When(ends_at__gt=now, then=F("stock") + units), default=F("stock")),
        )
        soldout.clear_now_and_after_commit([soldout.flash_sale_key(sale_id)])
    # The Redis quota follows after commit (apps.marketing.flash_quota): the allowance always,
    # the quota when the units came back to the sale.
    transaction.on_commit(partial(flash_quota.units_returned, sale_id, customer_id, units, to_quota=restock))


def flash_sale_quota_prepare(sale_id: int) -> None:
    """Load the sale's card and (when missing) its Redis quota from the database
    (``apps.marketing.flash_quota``); after commit when called in a transaction. Redis errors
    are logged: confirms then take the ordinary path, which loads it on demand."""

    def prepare() -> None:
        try:
            flash_quota.card_write(FlashSale.objects.get(pk=sale_id))
            flash_quota.quota_load(sale_id)
        except FlashSale.DoesNotExist:
            return
        except Exception:  # noqa: BLE001
            logger.warning("could not load the Redis quota of flash sale %s", sale_id, exc_info=True)

    transaction.on_commit(prepare)


# --- staff (admin) ---------------------------------------------------------------------------


def _moved(new: dt.datetime, old: dt.datetime) -> bool:
    """A changed time, to the second (the admin's form has no microseconds)."""
    return new.replace(microsecond=0) != old.replace(microsecond=0)


def flash_sale_validate(
    *,
    sku: Sku | None,
    price_fen: int | None,
    starts_at: dt.datetime | None,
    ends_at: dt.datetime | None,
    limit_per_customer: int | None,
    stock: int | None = None,
    sale: FlashSale | None = None,
    now: dt.datetime | None = None,
) -> None:
    """The scheduling rules, all at once: raises InvalidInput whose ``detail`` maps each field
    to its problems (the admin shows them as form errors). ``sale``: the sale being changed
    (then ``stock`` and ``sku`` are not checked: they do not change). Rules: see
    :func:`flash_sale_schedule` and :func:`flash_sale_update`.
    """
    now = now or timezone.now()
    errors: dict[str, list[str]] = {}
    if sale is None and (
        sku is None or not sku.is_active or sku.product.kind != Kind.GOODS or not sku.product.is_active
    ):
        errors["sku"] = ["请选择在售的实物商品规格（咨询预约不能秒杀）"]
    if price_fen is None or price_fen < 1:
        errors["price_fen"] = ["秒杀价至少 1 分"]
    elif sku is not None and price_fen > sku.price_fen:
        errors["price_fen"] = [f"秒杀价不能高于原价 {sku.price_fen} 分"]
    if starts_at is None or ends_at is None or timezone.is_naive(starts_at) or timezone.is_naive(ends_at):
        errors["starts_at"] = ["请填写开始和结束时间（北京时间）"]
    elif ends_at <= starts_at:
        errors["ends_at"] = ["结束时间必须晚于开始时间"]
    elif ends_at - starts_at > MAX_WINDOW:
        errors["ends_at"] = [f"一场秒杀最长 {MAX_WINDOW.days} 天"]
    elif sale is None and ends_at <= now:
        errors["ends_at"] = ["结束时间已过"]
    elif sale is not None and sale.starts_at <= now and _moved(starts_at, sale.starts_at):
        errors["starts_at"] = ["活动已开始，不能修改开始时间"]
    elif sale is not None and sale.ends_at <= now and _moved(ends_at, sale.ends_at):
        errors["ends_at"] = ["活动已结束，不能重新开放"]
    if limit_per_customer is None or limit_per_customer < 1:
        errors["limit_per_customer"] = ["每人限购至少 1 件"]
    if sale is None and sku is not None and "sku" not in errors and (stock is None or not 1 <= stock <= sku.stock):
        errors["stock"] = [f"秒杀库存须在 1 到该规格当前库存 {sku.stock} 之间"]
    if errors:
        raise InvalidInput(**errors)


@transaction.atomic
def flash_sale_schedule(
    *,
    title: str,
    sku_id: int,
    price_fen: int,
    stock: int,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    limit_per_customer: int = 1,
    is_active: bool = True,
) -> FlashSale:
    """Staff schedule a sale. Prices in fen, times aware (Shanghai).

    Rules (InvalidInput with the field's name in ``detail``): the SKU is an active goods SKU
    (a consultation needs a slot: no 秒杀); ``1 <= price_fen <= the SKU's price``;
    ``starts_at < ends_at``, at most 31 days apart, ending in the future;
    ``limit_per_customer >= 1``;
    ``1 <= stock <= the SKU's stock at this moment`` — checked at scheduling only: later
    SKU sales or restocks do not change the sale's quota, and the SKU's own conditional
    UPDATE at create still refuses what the warehouse does not hold.
    """
    sku = Sku.objects.select_related("product").filter(pk=sku_id).first()
    flash_sale_validate(
        sku=sku,
        price_fen=price_fen,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        stock=stock,
    )
    sale = FlashSale.objects.create(
        title=title,
        sku=sku,
        price_fen=price_fen,
        stock=stock,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        is_active=is_active,
    )
    flash_sale_quota_prepare(sale.pk)  # the winners are decided in Redis (apps.marketing.flash_quota)
    return sale


@transaction.atomic
def flash_sale_update(
    *,
    sale_id: int,
    title: str,
    price_fen: int,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    limit_per_customer: int,
    is_active: bool,
    now: dt.datetime | None = None,
) -> FlashSale:
    """Staff change a sale's terms (never its SKU, stock or sold: see :func:`flash_sale_stock_adjust`).

    The same rules as :func:`flash_sale_schedule`; in addition a sale that has started keeps
    its ``starts_at``, and an ended sale cannot be reopened (``ends_at`` in the past stays).
    Orders already confirmed keep the price they were shown (the draft's price).
    """
    now = now or timezone.now()
    sale = FlashSale.objects.get(pk=sale_id)  # no row lock: the sale row is hot during a 秒杀
    flash_sale_validate(
        sku=Sku.objects.get(pk=sale.sku_id),
        price_fen=price_fen,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        sale=sale,
        now=now,
    )
    FlashSale.objects.filter(pk=sale_id).update(
        title=title,
        price_fen=price_fen,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        is_active=is_active,
    )
    transaction.on_commit(partial(flash_quota.card_drop, sale_id))  # the gate reads the new terms
    return FlashSale.objects.get(pk=sale_id)


def flash_sale_stock_adjust(*, sale_id: int, delta: int) -> int:
    """Staff add (+) or withdraw (-) ``delta`` units of a sale's quota; returns the new stock.

    Relative (``stock = stock + delta``), never "stock = <value read when the page opened>",
    so units taken by orders meanwhile are not overwritten; withdrawing more than is left
    raises InsufficientStock.
    """
    qs = FlashSale.objects.filter(pk=sale_id)
    if delta < 0:
        qs = qs.filter(stock__gte=-delta)
    if qs.update(stock=F("stock") + delta) != 1:
        raise InsufficientStock("不能减去比剩余秒杀库存更多的数量。", flash_sale_id=sale_id)
    if delta > 0:
        soldout.clear_now_and_after_commit([soldout.flash_sale_key(sale_id)])
    transaction.on_commit(partial(_quota_adjust, sale_id, delta))
    return FlashSale.objects.values_list("stock", flat=True).get(pk=sale_id)


def _quota_adjust(sale_id: int, delta: int) -> None:
    """Staff's change of the sale's stock, applied to the Redis quota (errors logged: the
    reconciliation corrects it)."""
    try:
        flash_quota.adjust(sale_id, delta)
    except Exception:  # noqa: BLE001
        logger.warning("could not adjust the Redis quota of flash sale %s by %s", sale_id, delta, exc_info=True)

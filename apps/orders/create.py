"""Phase 2 of an order: drafts turned into orders, batch first. The one create of the shop.

:func:`orders_create` is called by Django's ``POST /api/v1/orders`` with one request
(:func:`order_create`) and by the ASGI gate (``starmall.gates.creates``) with the creates that
arrive together in a 秒杀. Each order is made from its draft (``apps.orders.drafts``) in ONE
transaction, all or nothing, taking its rows in the lock order of ``starmall/locking.py``
(:func:`_transaction`). Creates of one sale and the same SKUs share one transaction: its hot rows
(the sale, the SKUs) are taken once for all; a refusal rolls it back and the creates go on
without the one refused (tests/orders/test_create_batch.py).
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import Customer
from apps.appointments import slots
from apps.catalog import soldout, stock
from apps.catalog.exceptions import InsufficientStock
from apps.marketing import bargains, flash_sales, group_buys
from apps.marketing.exceptions import FlashSaleLimitExceeded
from apps.orders import caps, cart, drafts, flash_reservations, order_rows
from apps.orders.exceptions import CouponUnavailable, CustomerInactive, OrderKeyExpired
from apps.orders.models import Delivery, Order
from starmall.errors import InvalidState, ShopError
from starmall.locking import is_lock_conflict

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CreateRequest:
    """One create: the customer's ``order_key`` (from confirm) and ``remark`` (trimmed, at most
    200 characters: ``CreateInSerializer``)."""

    customer_id: int
    order_key: str
    remark: str = ""


@dataclass
class Created:
    """An order of a request: made by this create (``created``), or the key's order that already
    existed (a replay, or a racing create of the same key that committed first)."""

    order: Order
    created: bool


def order_create(*, customer: Customer, order_key: str, remark: str = "") -> tuple[Order, bool]:
    """Turn the draft ``order_key`` into an order: :func:`orders_create` of one request.

    Returns ``(order, created)``; the same key again returns the existing order with
    ``created=False``. Raises what :func:`orders_create` answers for it.
    """
    (result,) = orders_create([CreateRequest(customer.pk, order_key, remark)])
    if isinstance(result, Exception):
        raise result
    return result.order, result.created


def orders_create(requests: list[CreateRequest]) -> list[Created | Exception]:
    """Create the orders of ``requests``; one result per request, in order.

    A result is :class:`Created`, or the error answering that request, with nothing kept for it:
    OrderKeyExpired (no draft of the customer's, no order of the key), InsufficientStock (first
    from the sold-out flags, :func:`sold_out`; else from the database), SlotUnavailable,
    CouponUnavailable, InvalidState (points changed; a 秒杀, 拼团 or 砍价 no longer live),
    LimitExceeded (the unpaid caps, a 秒杀's limit), CustomerInactive; another error (the database
    gone) for every request of the transaction it broke. A refused 秒杀 create gives its reserved
    units back to the quota at once; after a commit the drafts are dropped, reservations settled.
    """
    results: list[Created | Exception | None] = [None] * len(requests)
    items = []
    found = cache.get_many([drafts.draft_key(r.order_key) for r in requests])
    for i, request in enumerate(requests):
        draft = draft_of(request, found.get(drafts.draft_key(request.order_key)))
        if draft is None:
            results[i] = _replay(request)  # its order committed and dropped the draft, or expired
        else:
            items.append(_Item(i, request, draft))
    for group in _groups(_in_stock(items, results)):
        try:
            _create_together(group, results)
        except Exception as exc:  # noqa: BLE001 - the database or Redis failed: this group's answer
            logger.warning("order create failed for %d requests", len(group), exc_info=True)
            for item in group:
                if results[item.index] is None:
                    results[item.index] = exc
    return results


def draft_of(request: CreateRequest, data: dict | None) -> drafts.OrderDraft | None:
    """The request's draft from its stored dict (``OrderDraft.to_json``); None when there is no
    draft of this customer under the key (its order committed and dropped it, it expired, or it
    is another customer's)."""
    if data is None or data["customer_id"] != request.customer_id or data["order_key"] != request.order_key:
        return None
    return drafts.OrderDraft.from_json(data)


def sold_out_keys(draft: drafts.OrderDraft) -> list[str]:
    """The sold-out flags :func:`sold_out` reads for ``draft``: its SKUs' own; none for a 秒杀's
    draft, whose units are reserved on the sale's quota (the database judges its create)."""
    return [] if draft.flash_sale_id else [soldout.sku_key(pk) for pk in sorted(draft.quantities)]


def sold_out(draft: drafts.OrderDraft, flags: dict[str, int]) -> InsufficientStock | None:
    """The refusal of a create whose SKU is flagged sold out (``flags``: those set among
    :func:`sold_out_keys`), before any row is taken: ``apps.catalog.soldout.refusal``, the
    answer confirm gives, so a create priced just before the last unit went is turned away
    as its confirm would be now. None for a 秒杀's draft and when nothing is flagged."""
    return None if draft.flash_sale_id else soldout.refusal(flags, draft.quantities, None)


@dataclass(frozen=True)
class _Item:
    """A request with its draft; ``index``: its place in the requests."""

    index: int
    request: CreateRequest
    draft: drafts.OrderDraft

    @property
    def lock_key(self) -> tuple[int, str]:
        """Where its rows come in a shared transaction (by customer, then key)."""
        return self.request.customer_id, self.request.order_key


def _in_stock(items: list[_Item], results: list) -> list[_Item]:
    """``items`` less those :func:`sold_out` refuses (answered in ``results``): one Redis read."""
    keys = sorted({key for item in items for key in sold_out_keys(item.draft)})
    if not keys:
        return items
    flags = soldout.flagged(keys)
    kept = []
    for item in items:
        refused = sold_out(item.draft, flags)
        if refused is None:
            kept.append(item)
        else:
            results[item.index] = refused
    return kept


def _groups(items: list[_Item]) -> list[list[_Item]]:
    """Items that may share a transaction: a 秒杀's (or plain goods') creates of the same SKUs
    with nothing but the customer's rows besides; a slot, coupon, 拼团 or 砍价 goes alone."""
    groups: dict[tuple, list[_Item]] = {}
    for item in items:
        draft = item.draft
        alone = draft.slot or draft.coupon_id or draft.group_buy_id or draft.group_id or draft.bargain_no
        key = ("alone", item.index) if alone else (draft.flash_sale_id, tuple(sorted(draft.quantities)))
        groups.setdefault(key, []).append(item)
    return list(groups.values())


class _Refused(Exception):
    """The shared transaction was refused at ``item``'s own rows (``mine``: its caps, points,
    allowance...: the others are unaffected), or at the rows all share (the sale's or SKUs'
    stock, the window: ``mine`` False)."""

    def __init__(self, item: _Item | None, error: ShopError, *, mine: bool) -> None:
        super().__init__(str(error))
        self.item, self.error, self.mine = item, error, mine


def _create_together(group: list[_Item], results: list) -> None:
    """Create ``group`` in as few transactions as is safe (module docstring): the refused item
    is answered alone and the others go on together; when the shared rows ran out, each half
    goes on together (the first ones may still fit); after a UNIQUE or lock conflict each alone."""
    pending = sorted(group, key=lambda item: item.lock_key)
    while len(pending) > 1:
        try:
            made = _transaction(pending)
        except _Refused as refused:
            if not refused.mine:  # the shared stock ran out within: each half again, the first first
                half = len(pending) // 2
                _create_together(pending[:half], results)
                _create_together(pending[half:], results)
                return
            pending.remove(refused.item)
            results[refused.item.index] = _create_alone(refused.item)
            continue
        except DatabaseError as exc:  # a second order of a key, a deadlock: each alone
            if not isinstance(exc, IntegrityError) and not is_lock_conflict(exc):
                raise
            break
        for item, order in zip(pending, made, strict=True):
            results[item.index] = Created(order, True)
        return
    for item in pending:
        results[item.index] = _create_alone(item)


def _create_alone(item: _Item) -> Created | ShopError:
    """One item in a transaction of its own: its order, or the exact refusal (a 秒杀's reserved
    units given back); the key's order when a racing create of the key committed first."""
    try:
        (order,) = _transaction([item])
    except _Refused as refused:
        if item.draft.flash_sale_id:  # nothing kept (an inactive customer's too): the units go back now
            flash_reservations.reservation_give_back(item.draft.flash_sale_id, item.request.order_key)
        return refused.error
    except IntegrityError:
        winner = Order.objects.filter(order_key=item.request.order_key, customer_id=item.request.customer_id).first()
        if winner is None:
            raise
        return Created(winner, False)
    return Created(order, True)


@contextmanager
def _refusing(item: _Item | None, *, mine: bool = True) -> Iterator[None]:
    """A ShopError raised inside becomes the :class:`_Refused` of ``item``."""
    try:
        yield
    except ShopError as exc:
        raise _Refused(item, exc, mine=mine) from exc


def _transaction(items: list[_Item]) -> list[Order]:
    """ONE transaction making the orders of ``items`` (sorted by :attr:`_Item.lock_key`), every
    row in the lock order of ``starmall/locking.py``; raises :class:`_Refused` (rolled back)."""
    now = timezone.now()
    with transaction.atomic():
        made = order_rows.orders_rows_insert([_rows_of(item, now) for item in items])  # step 1
        # first after commit: a draft is gone before its SKU is flagged (a retry then finds its order)
        transaction.on_commit(partial(flash_reservations.drafts_done, [item.draft for item in items]))
        for item, (order, _lines) in zip(items, made, strict=True):
            with _refusing(item):
                _slot_book(item.draft, order)  # step 3
                _coupon_take(item.draft, order)  # step 4
        _customers_lock(items)  # step 5
        _caps_enforce(items)
        for item, (order, _lines) in zip(items, made, strict=True):
            with _refusing(item):
                _points_take(item.draft, order)
                _cart_lines_remove(item.draft, item.request.customer_id)
        _promotions_take(items, [order for order, _lines in made], now)  # step 6
        with _refusing(items[0] if len(items) == 1 else None, mine=False):
            stock.sku_stock_decrement(quantities=_units(items))  # step 7
    for order, lines in made:
        order_rows.lines_cache(order, lines)
    return [order for order, _lines in made]


def _rows_of(item: _Item, now: dt.datetime) -> dict:
    """The order, its lines and its "created" event to insert (``order_rows``)."""
    return dict(
        draft=item.draft,
        customer_id=item.request.customer_id,
        order_no=order_no_new(now),
        remark=item.request.remark,
        pay_deadline=pay_deadline_of(item.draft, now),
        now=now,
        extra=_pickup_fields(item.draft),
    )


def _customers_lock(items: list[_Item]) -> None:
    """Lock the customers' rows in id order (the caps' and the wallet's serialization point);
    a customer deactivated since the token was read: CustomerInactive."""
    wanted = sorted({item.request.customer_id for item in items})
    active = set(
        Customer.objects.select_for_update()
        .filter(pk__in=wanted, is_active=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for item in items:
        if item.request.customer_id not in active:
            raise _Refused(item, CustomerInactive(), mine=True)


def _caps_enforce(items: list[_Item]) -> None:
    """The unpaid caps counted after the customers' locks, the new orders included
    (``caps.caps_refusals``: one query for all)."""
    refused = caps.caps_refusals([(item.request.customer_id, item.draft.kind) for item in items], new=0)
    for item in items:
        if item.request.customer_id in refused:
            raise _Refused(item, refused[item.request.customer_id], mine=True)


def _promotions_take(items: list[_Item], orders: list[Order], now: dt.datetime) -> None:
    """Step 6: each 秒杀 allowance, then the sale's stock for all at once; a 拼团 seat or a 砍价
    record (such items are alone in their transaction)."""
    sale_id = items[0].draft.flash_sale_id  # one sale per transaction (_groups)
    if sale_id:
        units = Counter()
        for item in items:
            units[item.request.customer_id] += item.draft.units
        for customer_id in flash_sales.allowances_take(sale_id=sale_id, units=dict(units)):
            blamed = next(item for item in items if item.request.customer_id == customer_id)
            raise _Refused(
                blamed, FlashSaleLimitExceeded(flash_sale_id=sale_id, requested=blamed.draft.units), mine=True
            )
        with _refusing(items[0] if len(items) == 1 else None, mine=False):
            flash_sales.sale_stock_take(sale_id=sale_id, units=sum(item.draft.units for item in items), now=now)
    for item, order in zip(items, orders, strict=True):
        with _refusing(item):
            _group_or_bargain_take(item.draft, item.request.customer_id, order, now)


def _units(items: list[_Item]) -> Counter:
    """``{sku_id: units}`` of all the items' lines together."""
    units: Counter = Counter()
    for item in items:
        units.update(item.draft.quantities)
    return units


def _replay(request: CreateRequest) -> Created | ShopError:
    """The key's order when it exists (a replay): OrderKeyExpired when none, or another's."""
    order = Order.objects.filter(order_key=request.order_key).first()
    if order is None or order.customer_id != request.customer_id:
        return OrderKeyExpired()
    return Created(order, False)


def pay_deadline_of(draft: drafts.OrderDraft, now: dt.datetime) -> dt.datetime:
    """``now + ORDER_PAY_TIMEOUT_MINUTES``; a consultation's no later than its booking closes
    (slot start - ``BOOKING_MIN_NOTICE_MINUTES``)."""
    pay_deadline = now + dt.timedelta(minutes=settings.ORDER_PAY_TIMEOUT_MINUTES)
    if draft.slot:
        pay_deadline = min(pay_deadline, slots.booking_closes_at(draft.slot_start))
    return pay_deadline


def _pickup_fields(draft: drafts.OrderDraft) -> dict:
    """The order's delivery columns: a pickup draft's store (自提), else none (express)."""
    if not draft.pickup_store:
        return {}
    return {
        "delivery": Delivery.PICKUP,
        "pickup_store_id": draft.pickup_store["id"],
        "pickup_store": draft.pickup_store,
    }


def _slot_book(draft: drafts.OrderDraft, order: Order) -> None:
    """Book a consultation's start for the order, point it at that start's grid row (lock step 3;
    SlotUnavailable when no longer listed). A legacy ``slot_id`` was read as its start at confirm."""
    if not draft.slot:
        return
    slot = slots.slot_book_start(
        product_id=draft.slot["product_id"],
        start=draft.slot_start,
        order_no=order.order_no,
        customer_id=order.customer_id,
        hold_until=order.pay_deadline,
    )
    if order.slot_id != slot.pk:
        Order.objects.filter(pk=order.pk).update(slot=slot)
        order.slot = slot


def _coupon_take(draft: drafts.OrderDraft, order: Order) -> None:
    """Mark the chosen coupon used by the order (lock step 4; CouponUnavailable when gone)."""
    if draft.coupon_id and not wallet.coupon_take(
        coupon_id=draft.coupon_id, customer_id=order.customer_id, order_no=order.order_no
    ):
        raise CouponUnavailable(coupon_id=draft.coupon_id)


def _points_take(draft: drafts.OrderDraft, order: Order) -> None:
    """Spend the draft's points (lock step 5, under the customer's row lock of the caps)."""
    if not wallet.points_spend(customer_id=order.customer_id, points=draft.points_used, ref=order.order_no):
        raise InvalidState("您的积分已变化，请重新确认订单。")


def _cart_lines_remove(draft: drafts.OrderDraft, customer_id: int) -> None:
    """Remove the cart lines bought; after the customer's row lock, as cart adds take it."""
    if draft.cart_items:
        cart.cart_items_remove_bought(customer_id=customer_id, bought=draft.cart_items)


def _group_or_bargain_take(draft: drafts.OrderDraft, customer_id: int, order: Order, now: dt.datetime) -> None:
    """A 拼团 seat and the activity's units, or a 砍价 record bought and its unit (lock step 6,
    ``apps.marketing.group_buys.group_take`` / ``bargains.bargain_take``); the order row (ours,
    step 1) records which."""
    if draft.group_buy_id or draft.group_id:
        order.group_id = group_buys.group_take(
            customer_id=customer_id,
            order_no=order.order_no,
            units=draft.units,
            group_buy_id=draft.group_buy_id,
            group_id=draft.group_id,
            now=now,
        )
        Order.objects.filter(pk=order.pk).update(group_id=order.group_id)
    elif draft.bargain_no:
        order.bargain_id = bargains.bargain_take(
            bargain_no=draft.bargain_no, customer_id=customer_id, order_no=order.order_no, now=now
        )
        Order.objects.filter(pk=order.pk).update(bargain_id=order.bargain_id)


def order_no_new(now: dt.datetime) -> str:
    """``yyyyMMddHHmmss`` (Shanghai) + 8 random digits: 22 characters, fits out_trade_no (32)."""
    return timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"

"""Phase 2 of an order: :func:`order_create` turns a draft into an order in ONE transaction.

Order row (UNIQUE order_key), stock, slot, coupon and points: all or nothing.
"""

from __future__ import annotations

import datetime as dt
import secrets
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import Customer
from apps.appointments import slots
from apps.catalog import stock
from apps.catalog.exceptions import InsufficientStock
from apps.marketing import bargains, flash_sales, group_buys
from apps.orders import caps, cart, drafts, flash_reservations, order_rows
from apps.orders.exceptions import CouponUnavailable, OrderKeyExpired
from apps.orders.models import Delivery, Order
from starmall.errors import InvalidState, LimitExceeded


def order_create(*, customer: Customer, order_key: str, remark: str = "") -> tuple[Order, bool]:
    """Turn the draft ``order_key`` into an order; return ``(order, created)``.

    The same key again returns the existing order with ``created=False`` — also when two
    requests race: the loser's INSERT hits UNIQUE(order_key), its whole transaction (stock,
    slot, coupon, points) rolls back and it returns the winner's order. In one transaction:
    insert the order with its lines and first event (``order_rows``: one statement on PostgreSQL),
    book the slot, take the coupon and points, enforce the per-customer caps, remove the cart
    lines it bought (``cart_item_ids`` at confirm), and last (hot rows locked briefly) a flash sale's
    allowance and stock (``flash_sale_take``) and the SKUs' stock (conditional UPDATEs, SKU id
    order). After commit: drop the draft and schedule the unpaid timeout. A consultation's
    ``pay_deadline`` is ``min(now + ORDER_PAY_TIMEOUT_MINUTES, slot start -
    BOOKING_MIN_NOTICE_MINUTES)``. Raises OrderKeyExpired, InsufficientStock, SlotUnavailable,
    CouponUnavailable, InvalidState (points changed; a flash sale no longer live), LimitExceeded
    (caps, flash-sale limit); on any of them nothing is kept.
    """
    draft = _draft_take(order_key, customer)
    if draft is None:  # replayed key (its order committed and dropped the draft), or expired
        existing = _order_of_key(order_key, customer)
        if existing is None:
            raise OrderKeyExpired()
        return existing, False
    now = timezone.now()
    try:
        with transaction.atomic():
            # The lock order of starmall/locking.py: order, slot, coupon, customer, sale, SKUs.
            # The order, its lines and its "created" event: one statement on PostgreSQL (order_rows).
            order, lines = order_rows.order_rows_insert(
                draft,
                customer_id=customer.pk,
                order_no=order_no_new(now),
                remark=remark,
                pay_deadline=pay_deadline_of(draft, now),
                now=now,
                extra=_pickup_fields(draft),
            )
            order.customer = customer
            _slot_book(draft, order)
            _coupon_take(draft, order)
            caps.caps_enforce(customer_id=customer.pk, kind=draft.kind)
            _points_take(draft, order)
            _cart_lines_remove(draft, customer)
            # The hot rows last, right before commit, so their locks are held briefly: the 秒杀
            # allowance and sale (marketing), then the SKUs (in id order).
            _flash_sale_take(draft, customer, now)
            _group_or_bargain_take(draft, customer, order, now)
            _stock_take(draft)
            transaction.on_commit(partial(drafts.draft_delete, order_key))
            if draft.flash_sale_id:  # the reservation's units are the database's now
                transaction.on_commit(partial(flash_reservations.reservation_settle, draft.flash_sale_id, order_key))
        order_rows.lines_cache(order, lines)
    except (InsufficientStock, InvalidState, LimitExceeded):
        if draft.flash_sale_id:  # refused, nothing kept: the reserved units go back to the quota now
            flash_reservations.reservation_give_back(draft.flash_sale_id, order_key)
        raise
    except IntegrityError:
        winner = Order.objects.filter(order_key=order_key, customer=customer).first()
        if winner is None:
            raise
        return winner, False
    return order, True


def _draft_take(order_key: str, customer: Customer) -> drafts.OrderDraft | None:
    """The customer's draft ``order_key``, or None (gone, or another customer's).

    The draft first: while it exists the key has no committed order (the draft is dropped
    after that commit), and a create racing that commit meets UNIQUE(order_key) in
    ``order_rows.order_rows_insert``. Saves the order lookup on every first create.
    """
    data = drafts.draft_get(order_key)
    if data is None or data["customer_id"] != customer.pk:
        return None
    return drafts.OrderDraft.from_json(data)


def pay_deadline_of(draft: drafts.OrderDraft, now: dt.datetime) -> dt.datetime:
    """``now + ORDER_PAY_TIMEOUT_MINUTES``; a consultation's no later than its booking closes."""
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
    """Book a consultation's slot for the order (lock step 3; SlotUnavailable when taken)."""
    if draft.slot:
        slots.slot_book(
            slot_id=draft.slot["id"],
            teacher_id=draft.slot["teacher_id"],
            order_no=order.order_no,
            customer_id=order.customer_id,
            start=draft.slot_start,
        )


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


def _cart_lines_remove(draft: drafts.OrderDraft, customer: Customer) -> None:
    """Remove the cart lines bought; after the customer's row lock, as cart adds take it."""
    if draft.cart_items:
        cart.cart_items_remove_bought(customer_id=customer.pk, bought=draft.cart_items)


def _flash_sale_take(draft: drafts.OrderDraft, customer: Customer, now: dt.datetime) -> None:
    """A 秒杀's allowance, then the sale's stock (lock step 6)."""
    if draft.flash_sale_id:
        flash_sales.flash_sale_take(sale_id=draft.flash_sale_id, customer_id=customer.pk, units=draft.units, now=now)


def _group_or_bargain_take(draft: drafts.OrderDraft, customer: Customer, order: Order, now: dt.datetime) -> None:
    """A 拼团 seat and the activity's units, or a 砍价 record bought and its unit (lock step 6,
    ``apps.marketing.group_buys.group_take`` / ``bargains.bargain_take``); the order row (ours,
    step 1) records which."""
    if draft.group_buy_id or draft.group_id:
        order.group_id = group_buys.group_take(
            customer_id=customer.pk,
            order_no=order.order_no,
            units=draft.units,
            group_buy_id=draft.group_buy_id,
            group_id=draft.group_id,
            now=now,
        )
        Order.objects.filter(pk=order.pk).update(group_id=order.group_id)
    elif draft.bargain_no:
        order.bargain_id = bargains.bargain_take(
            bargain_no=draft.bargain_no, customer_id=customer.pk, order_no=order.order_no, now=now
        )
        Order.objects.filter(pk=order.pk).update(bargain_id=order.bargain_id)


def _stock_take(draft: drafts.OrderDraft) -> None:
    """Take the lines' units from SKU stock (lock step 7: conditional UPDATEs in SKU id order)."""
    stock.sku_stock_decrement(quantities=draft.quantities)


def _order_of_key(order_key: str, customer: Customer) -> Order | None:
    """The order made from ``order_key``; another customer's key is OrderKeyExpired."""
    order = Order.objects.filter(order_key=order_key).first()
    if order is not None and order.customer_id != customer.pk:
        raise OrderKeyExpired()
    return order


def order_no_new(now: dt.datetime) -> str:
    """``yyyyMMddHHmmss`` (Shanghai) + 8 random digits: 22 characters, fits out_trade_no (32)."""
    return timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"

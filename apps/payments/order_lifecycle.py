"""The order lifecycle that must ask WeChat first: the cancel of an unpaid order (customer,
staff, timeout) and the unpaid timeout's sweep.

An unpaid order may have an open WeChat trade; cancelling it without closing that trade would
let the customer pay a cancelled order. So every cancel goes through :func:`order_cancel`,
which settles the trade with WeChat (:func:`wechat_settle_before_cancel`) before the bare
state change ``apps.orders.services.order_mark_cancelled`` (DESIGN.md flow 6).
"""

from __future__ import annotations

import datetime as dt
import logging
from enum import Enum

from django.core.cache import cache
from django.utils import timezone

from apps.orders import services as orders
from apps.orders.models import Order, OrderStatus, PayMethod
from apps.payments import gateway, services
from apps.payments.exceptions import CancelUnconfirmed, OrderNotCancelled
from apps.payments.models import Payment, PaymentStatus

logger = logging.getLogger(__name__)


class Settle(str, Enum):
    """Where a WeChat payment stands before we cancel (or balance-pay) its order."""

    CLEAR = "clear"  # no WeChat payment, or it is closed: safe to cancel
    PAID = "paid"  # WeChat says paid: the order is now marked paid
    PAYING = "paying"  # the user is paying right now: ask again later
    UNKNOWN = "unknown"  # WeChat could not be asked: ask again later


def wechat_settle_before_cancel(*, order: Order) -> Settle:
    """Make sure WeChat will not take money for ``order`` any more (DESIGN.md flow 6).

    Each open payment through its own api (v2 or v3, ``gateway``): query; SUCCESS -> apply it
    (PAID); USERPAYING -> PAYING; NOTPAY -> close (if WeChat then says ORDERPAID, query and
    apply); CLOSED/closed -> mark the payment closed.
    """
    if Payment.objects.filter(order=order, status=PaymentStatus.PAID).exists():
        return Settle.PAID
    outcomes = {
        _settle_one(payment)
        for payment in Payment.objects.filter(order=order, method=PayMethod.WECHAT, status__in=services.OPEN_STATUSES)
    }
    for outcome in (Settle.PAID, Settle.PAYING, Settle.UNKNOWN):  # the most binding answer wins
        if outcome in outcomes:
            return outcome
    return Settle.CLEAR


def _settle_one(payment: Payment) -> Settle:
    state = services.payment_sync(payment=payment)
    if state in ("SUCCESS", "REFUND"):
        return Settle.PAID
    if state == "USERPAYING":
        return Settle.PAYING
    if state == "":
        return Settle.UNKNOWN
    if state in ("NOTPAY", "PAYERROR", "NOTEXIST"):
        try:
            closed = gateway.gateway_for(payment.api).close(out_trade_no=payment.out_trade_no)
        except gateway.PayUnavailable as exc:
            logger.warning("closeorder %s unanswered: %s", payment.out_trade_no, exc)
            return Settle.UNKNOWN
        except gateway.PayRejected as exc:
            # WeChat just said NOTPAY but will not close yet (it wants 5 minutes between create
            # and close). Going on is money-safe: the trade lapses at its time_expire, and a
            # payment made before that arrives as a late payment and is refunded exactly once.
            logger.warning("closeorder %s refused (%s): left to lapse", payment.out_trade_no, exc)
            return Settle.CLEAR
        if closed == "ORDERPAID":
            return Settle.PAID if services.payment_sync(payment=payment) in ("SUCCESS", "REFUND") else Settle.UNKNOWN
    Payment.objects.filter(pk=payment.pk, status__in=services.OPEN_STATUSES).update(status=PaymentStatus.CLOSED)
    return Settle.CLEAR


def order_cancel(*, order: Order, actor: str, reason: str) -> Order:
    """THE cancel of an unpaid order (customer, staff, timeout and sweep all call this one):
    make sure WeChat will not take its money (:func:`wechat_settle_before_cancel`), then
    ``unpaid -> cancelled`` with stock, slot, coupon and points given back, exactly once
    (``orders.order_mark_cancelled``). Returns the cancelled order.

    Raises OrderNotCancelled (409 ``invalid_state``; ``.outcome`` "raced": not unpaid any
    more, "paid": WeChat says paid and the payment is now applied, "paying": the customer is
    paying right now) or CancelUnconfirmed (503 ``wechat_unavailable``, ``.outcome``
    "unknown": WeChat could not be asked; nothing changed).
    """
    if order.status != OrderStatus.UNPAID:  # a status never goes back to unpaid: no need to ask
        raise OrderNotCancelled("raced", status=order.status)
    settle = wechat_settle_before_cancel(order=order)
    if settle == Settle.UNKNOWN:
        raise CancelUnconfirmed()
    if settle != Settle.CLEAR:
        raise OrderNotCancelled(settle.value, status=orders.order_get(order_no=order.order_no).status)
    if not orders.order_mark_cancelled(order=order, actor=actor, reason=reason):
        raise OrderNotCancelled("raced", status=orders.order_get(order_no=order.order_no).status)
    order.refresh_from_db()
    return order


def order_expire(*, order_id: int, now: dt.datetime | None = None) -> str:
    """The unpaid timeout of one order: cancel it when due, after asking WeChat.

    Safe to run any number of times and concurrently with the customer's own cancel: the
    conditional ``unpaid -> cancelled`` lets one of them restore stock and slot.
    Returns "not_unpaid", "not_due", "cancelled", "raced" or a Settle value.
    """
    now = now or timezone.now()
    order = Order.objects.filter(pk=order_id).first()
    if order is None or order.status != OrderStatus.UNPAID:
        return "not_unpaid"
    if order.pay_deadline > now:
        return "not_due"
    try:
        order_cancel(order=order, actor="system:timeout", reason="超时未支付")
    except (OrderNotCancelled, CancelUnconfirmed) as exc:
        return exc.outcome
    return "cancelled"


EXPIRE_CURSOR_KEY = "payments:orders_expire_due:after_id"
EXPIRE_LOCK_KEY = "payments:orders_expire_due:running"
EXPIRE_LOCK_SECONDS = 600  # a sweep that died holding the lock frees it after this


def orders_expire_due(*, now: dt.datetime | None = None, limit: int = 200) -> dict[str, int]:
    """The unpaid timeout (beat, every ``ORDER_EXPIRE_SWEEP_SECONDS``): run :func:`order_expire`
    for at most ``limit`` unpaid orders past their deadline; returns ``{outcome: count}``.

    The only path to the timeout (no per-order countdown message: the order's ``pay_deadline``
    is its timer, read by an indexed query), so no order may starve: due orders are taken in
    id order starting after the last id the previous sweep reached (kept in Redis), wrapping
    round, so an order WeChat cannot settle yet ("unknown", "paying") is asked again once a
    round and never holds back the orders behind it. One sweep runs at a time (a Redis lock;
    a sweep longer than the beat period is not doubled, nor WeChat asked twice). Without Redis it sweeps from the start, unlocked — ``order_expire`` is safe to race.
    """
    now = now or timezone.now()
    try:
        if not cache.add(EXPIRE_LOCK_KEY, 1, timeout=EXPIRE_LOCK_SECONDS):
            return {"busy": 1}
        after = cache.get(EXPIRE_CURSOR_KEY) or 0
        locked = True
    except Exception:  # noqa: BLE001 - Redis down: the database alone decides
        logger.warning("expire sweep without its Redis lock and cursor", exc_info=True)
        after, locked = 0, False
    due = Order.objects.filter(status=OrderStatus.UNPAID, pay_deadline__lte=now).order_by("pk")
    ids = list(due.filter(pk__gt=after).values_list("pk", flat=True)[:limit])
    if len(ids) < limit:
        ids += list(due.filter(pk__lte=after).values_list("pk", flat=True)[: limit - len(ids)])
    counts: dict[str, int] = {}
    try:
        for order_id in ids:
            outcome = order_expire(order_id=order_id, now=now)
            counts[outcome] = counts.get(outcome, 0) + 1
    finally:
        if locked:
            try:
                cache.set(EXPIRE_CURSOR_KEY, ids[-1] if len(ids) == limit else 0, timeout=None)
                cache.delete(EXPIRE_LOCK_KEY)
            except Exception:  # noqa: BLE001 - the lock expires by itself
                logger.warning("could not release the expire sweep's lock", exc_info=True)
    return counts

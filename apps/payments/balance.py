"""Paying an unpaid order from the customer's balance (余额支付).

WeChat is asked first when a WeChat payment was started, so that a customer never pays twice
(``order_lifecycle.wechat_settle_before_cancel``); then ``unpaid -> paid`` and the balance's
conditional debit in one transaction (both or neither).
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.exceptions import InsufficientBalance
from apps.orders import services as orders
from apps.orders.models import Order, OrderStatus, PayMethod
from apps.payments.models import Payment, PaymentStatus
from apps.payments.order_lifecycle import Settle, wechat_settle_before_cancel
from starmall.errors import InvalidState, WechatUnavailable
from starmall.locking import retry_on_lock_conflict


def payment_balance_pay(*, order_no: str, customer_id: int) -> Order:
    """Pay the customer's unpaid order from their balance; return the paid order.

    If a WeChat payment was started, WeChat is asked first (and the order closed there) so the
    customer can never pay twice. In one transaction (:func:`_balance_pay_apply`, run once more
    after a lock conflict): ``unpaid -> paid`` and a conditional balance decrement (both or
    neither). Raises InvalidState, InsufficientBalance, WechatUnavailable, DatabaseBusy (503:
    a second lock conflict; nothing changed).
    """
    order = orders.order_get(order_no=order_no, customer_id=customer_id)
    if order.status != OrderStatus.UNPAID:
        raise InvalidState("该订单不是待支付状态。", status=order.status)
    if order.pay_deadline <= timezone.now():
        raise InvalidState("该订单已超过支付时限。", status=order.status)
    if order.customer.balance_fen < order.pay_fen:  # don't close a WeChat trade for nothing
        raise InsufficientBalance(amount_fen=order.pay_fen)
    outcome = wechat_settle_before_cancel(order=order)
    if outcome == Settle.PAID:
        raise InvalidState("该订单已通过微信支付。", status="paid")
    if outcome != Settle.CLEAR:
        raise WechatUnavailable("该订单的微信支付正在进行中，请稍后再试。")
    order = _balance_pay_apply(order_id=order.pk, customer_id=customer_id, now=timezone.now())
    order.refresh_from_db()
    return order


@retry_on_lock_conflict
@transaction.atomic
def _balance_pay_apply(*, order_id: int, customer_id: int, now: dt.datetime) -> Order:
    """The paying transaction of :func:`payment_balance_pay`; returns the order (paid).

    Locks in the order of ``starmall/locking.py``: the order (1, so that a cancel, a racing
    click or WeChat's notification of this order waits here), its Payment (2, a new row), the
    customer's balance (5), and last ``order_mark_paid``'s product sales counters (8). Counting
    sales before the debit once deadlocked with a balance refund of the same customer, which
    credits the customer (5) before it takes units out of sales (8).
    """
    order = orders.order_lock(order_id=order_id)
    if order.status != OrderStatus.UNPAID:
        raise InvalidState("该订单不是待支付状态。", status=order.status)
    Payment.objects.create(
        order=order,
        method=PayMethod.BALANCE,
        total_fee=order.pay_fen,
        status=PaymentStatus.PAID,
        paid_at=now,
    )
    wallet.balance_debit(customer_id=customer_id, amount_fen=order.pay_fen, ref=order.order_no)
    if not orders.order_mark_paid(order=order, method=PayMethod.BALANCE, paid_at=now, actor="customer"):
        raise InvalidState("该订单不是待支付状态。", status=order.status)  # cannot happen under the row lock
    return order

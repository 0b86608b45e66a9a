"""Payments: start a WeChat payment, apply a confirmed payment, ask WeChat (the balance: ``balance.py``).

Money moves here and nowhere else. The WeChat call itself goes through the payment's own api
(``apps/payments/gateway.py``: v2 or v3, recorded on the Payment) and always runs outside a
database transaction; what it returns is applied by conditional
UPDATEs (``payment pending -> paid``, ``order unpaid -> paid``) whose row counts make every
notification, query and admin click idempotent. WeChat's notifications are checked in
``apps/payments/notifications.py``, which calls :func:`payment_apply_paid`.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_on_failure
from apps.orders import events
from apps.orders import services as orders
from apps.orders.models import Order, OrderStatus, PayMethod
from apps.payments import gateway, notify_duplicates, refunds
from apps.payments.applied import Applied
from apps.payments.models import Payment, PaymentStatus, Refund
from starmall.admin_money import yuan
from starmall.errors import InvalidState, WechatUnavailable
from starmall.locking import retry_on_lock_conflict
from starmall.shop import shop_name

logger = logging.getLogger(__name__)

PREPAY_REUSE_MARGIN = dt.timedelta(minutes=5)
# An UNKNOWN payment is queried 1, 5 and 15 minutes after the timeout, then becomes MANUAL.
UNCERTAIN_CHECK_WAITS = (dt.timedelta(minutes=1), dt.timedelta(minutes=4), dt.timedelta(minutes=10))
OPEN_STATUSES = (PaymentStatus.PENDING, PaymentStatus.UNKNOWN, PaymentStatus.MANUAL)


# --- starting a payment ---------------------------------------------------------------------


def payment_wechat_start(*, order_no: str, customer_id: int) -> dict:
    """``wx.requestPayment`` parameters for the customer's unpaid order.

    One Payment per order with ``out_trade_no = order_no``, made with ``WECHAT_PAY_API`` (v2
    or v3) and kept on that api; a prepay_id still valid for 5 minutes is reused. Raises
    NotFound, InvalidState (not unpaid, past deadline, already paid at WeChat) or
    WechatUnavailable (WeChat did not answer: nothing changed, try again).
    """
    order = orders.order_get(order_no=order_no, customer_id=customer_id)
    now = timezone.now()
    if order.status != OrderStatus.UNPAID:
        raise InvalidState("该订单不是待支付状态。", status=order.status)
    if order.pay_deadline <= now:
        raise InvalidState("该订单已超过支付时限。", status=order.status)
    payment = _wechat_payment(order)
    if payment.status == PaymentStatus.PAID:
        raise InvalidState("该订单已支付。", status="paid")
    if payment.status in (PaymentStatus.UNKNOWN, PaymentStatus.MANUAL):
        _clear_uncertainty_or_raise(payment)
    pay = gateway.gateway_for(payment.api)
    if payment.prepay_id and payment.prepay_expires_at > now + PREPAY_REUSE_MARGIN:
        return pay.pay_params(payment.prepay_id)
    prepay = _unified_order(order, payment, now)
    _prepay_store(payment, prepay)
    return pay.pay_params(prepay.prepay_id)


def _unified_order(order: Order, payment: Payment, now: dt.datetime) -> gateway.Prepay:
    """WeChat's prepay for ``payment`` through its api (v2 unifiedorder, v3 JSAPI prepay; no
    transaction open).

    No answer: the payment turns UNKNOWN (queried from ``now`` on) and WechatUnavailable is
    raised. ORDERPAID: the payment is synced, InvalidState. ORDERCLOSED: InvalidState. Any other
    refusal: WechatUnavailable with WeChat's err_code.
    """
    try:
        return gateway.gateway_for(payment.api).prepay(
            out_trade_no=payment.out_trade_no,
            total_fee=payment.total_fee,
            description=_body(order),
            openid=order.customer.openid,
            starts_at=order.created_at,
            expires_at=order.pay_deadline,
        )
    except gateway.PayUnavailable as exc:
        # WeChat may or may not have created the trade: UNKNOWN until a query says (flow 8).
        Payment.objects.filter(pk=payment.pk, status=PaymentStatus.PENDING).update(
            status=PaymentStatus.UNKNOWN, checks=0, next_check_at=now + UNCERTAIN_CHECK_WAITS[0]
        )
        raise WechatUnavailable("微信支付暂时无法连接，请稍后再试。") from exc
    except gateway.PayRejected as exc:
        if exc.err_code == "ORDERPAID":
            payment_sync(payment=payment)
            raise InvalidState("该订单已支付。", status="paid") from exc
        if exc.err_code == "ORDERCLOSED":
            raise InvalidState("该笔支付已关闭，订单无法再支付。") from exc
        logger.error("unifiedorder %s rejected: %s", payment.out_trade_no, exc)
        raise WechatUnavailable("微信支付暂时无法下单，请稍后再试。", wechat_err_code=exc.err_code) from exc


def _prepay_store(payment: Payment, prepay: gateway.Prepay) -> None:
    """Keep ``prepay`` on the payment if it is still open and its order still unpaid at the same
    amount (one conditional UPDATE); otherwise close the trade at WeChat, close the payment and
    raise InvalidState."""
    if (
        Payment.objects.filter(
            pk=payment.pk, status__in=OPEN_STATUSES, order__status=OrderStatus.UNPAID, order__pay_fen=payment.total_fee
        ).update(  # 改价 meanwhile: this amount is stale
            prepay_id=prepay.prepay_id, prepay_expires_at=prepay.expires_at
        )
        != 1
    ):
        # The order was cancelled, paid another way or repriced while WeChat created this trade: close
        # it there so the customer cannot pay it (if they already did, the notification or
        # the sweep finds a late payment and refunds it).
        try:
            gateway.gateway_for(payment.api).close(out_trade_no=payment.out_trade_no)
        except (gateway.PayUnavailable, gateway.PayRejected) as exc:
            logger.warning("closeorder %s after a raced prepay failed: %s", payment.out_trade_no, exc)
        Payment.objects.filter(pk=payment.pk, status__in=OPEN_STATUSES).update(status=PaymentStatus.CLOSED)
        raise InvalidState("该订单已不是待支付状态。")


def _wechat_payment(order: Order) -> Payment:
    """The order's WeChat payment that is not closed, created if needed.

    The first one's ``out_trade_no`` is the order_no; a trade closed at WeChat (the customer
    tried balance pay, say) cannot be reopened, so the next gets ``<order_no>P<n>`` (<= 32).
    """
    payment = (
        order.payments.filter(method=PayMethod.WECHAT).exclude(status=PaymentStatus.CLOSED).order_by("-id").first()
    )
    if payment is not None:
        return payment
    tried = order.payments.filter(method=PayMethod.WECHAT).count()
    out_trade_no = order.order_no if tried == 0 else f"{order.order_no}P{tried + 1}"
    payment, _ = Payment.objects.get_or_create(
        out_trade_no=out_trade_no,
        defaults={"order": order, "method": PayMethod.WECHAT, "total_fee": order.pay_fen, "api": gateway.api_new()},
    )
    return payment


def _clear_uncertainty_or_raise(payment: Payment) -> None:
    """A new unified order is made only after WeChat clearly says NOTPAY (or never saw it)."""
    state = payment_sync(payment=payment)
    if state in ("SUCCESS", "REFUND"):
        raise InvalidState("该订单已支付。", status="paid")
    if state not in ("NOTPAY", "NOTEXIST"):
        raise WechatUnavailable("正在向微信确认这笔支付，请稍后再试。")
    Payment.objects.filter(pk=payment.pk, status__in=(PaymentStatus.UNKNOWN, PaymentStatus.MANUAL)).update(
        status=PaymentStatus.PENDING, next_check_at=None
    )
    payment.refresh_from_db()


def _body(order: Order) -> str:
    """WeChat's ``body`` ("商家名称-销售商品类目", WECHAT.md): the shop's name (``starmall.shop``), then the first
    line's name (and "等" when there are more), at most 128 characters."""
    first = order.lines.first()
    more = " 等" if order.lines.count() > 1 else ""
    name = first.name if first else order.order_no
    shop = shop_name()  # the shop's settings row, else SHOP_NAME
    return f"{shop}-{name[: 128 - len(shop) - 1 - len(more)]}{more}"


# --- applying what WeChat says -------------------------------------------------------------


@retry_on_lock_conflict
def payment_apply_paid(*, payment: Payment, transaction_id: str, paid_at: dt.datetime, actor: str) -> Applied:
    """Apply a WeChat-confirmed payment (already verified: signature, appid, amount).

    ``pending/unknown/manual -> paid`` on the payment, then ``unpaid -> paid`` on the order, in
    one transaction (run once more after a lock conflict; a second one raises DatabaseBusy and
    changes nothing), or whole inside the caller's (WeChat's notification: with its audit row). A second delivery finds the payment paid and returns DUPLICATE; a payment
    that lands on an order no longer unpaid returns LATE (the money is recorded; the order is
    not revived and no stock is taken again).
    """
    with transaction.atomic(savepoint=False):  # joins a caller's transaction whole (no savepoint)
        # The order's row first, then its payment: step 1 before step 2 of starmall/locking.py,
        # as a balance payment, a cancel and a refund of this order take them.
        order = orders.order_lock(order_id=payment.order_id)
        updated = Payment.objects.filter(pk=payment.pk, status__in=OPEN_STATUSES + (PaymentStatus.CLOSED,)).update(
            status=PaymentStatus.PAID, transaction_id=transaction_id, paid_at=paid_at
        )
        if updated != 1:
            current = Payment.objects.get(pk=payment.pk)
            if current.transaction_id != transaction_id:
                logger.error(
                    "payment %s already paid by %s, now %s",
                    payment.out_trade_no,
                    current.transaction_id,
                    transaction_id,
                )
            return Applied.DUPLICATE
        # Paid for good: its re-sent notifications can be answered by the ASGI gate after commit.
        if payment.method == PayMethod.WECHAT:
            notify_duplicates.applied_remember_on_commit(
                out_trade_no=payment.out_trade_no, transaction_id=transaction_id, total_fee=payment.total_fee
            )
        if orders.order_mark_paid(order=order, method=PayMethod.WECHAT, paid_at=paid_at, actor=actor):
            return Applied.APPLIED
        # Money for an order that is cancelled (or was paid another way): keep the record, do
        # not revive the order or take stock again, and queue exactly one refund.
        reason = (
            Refund.Reason.LATE_PAYMENT if order.status == OrderStatus.CANCELLED else Refund.Reason.DUPLICATE_PAYMENT
        )
        payment.refresh_from_db()
        refund = refunds.refund_for_unwanted_payment(payment=payment, reason=reason)
        events.order_late_payment_event(
            order=order,
            actor=actor,
            transaction_id=transaction_id,
            out_refund_no=refund.out_refund_no if refund else None,
        )
        logger.error("late payment %s on %s order %s: refund queued", transaction_id, order.status, order.order_no)
        return Applied.LATE


def payment_sync(*, payment: Payment) -> str:
    """Ask WeChat about an open payment through its own api (v2 orderquery, v3 query by
    out_trade_no) and apply a SUCCESS; return trade_state.

    Returns "" when WeChat could not be asked (unreachable, error, bad signature).
    """
    state = gateway.gateway_for(payment.api).query_checked(
        out_trade_no=payment.out_trade_no, total_fee=payment.total_fee
    )
    if state is None:
        return ""
    if state.state in ("SUCCESS", "REFUND"):
        paid_at = state.paid_at or timezone.now()
        payment_apply_paid(
            payment=payment, transaction_id=state.transaction_id, paid_at=paid_at, actor="wechat:orderquery"
        )
    return state.state


def payment_check_uncertain(*, payment: Payment, now: dt.datetime | None = None) -> str:
    """One scheduled check of an UNKNOWN payment (DESIGN.md flow 8); returns what it found.

    "paid" (applied), "clear" (WeChat says it was not paid: PENDING again, or CLOSED),
    "later" (still unsure: next check scheduled) or "manual" (checks ran out: MANUAL, one alert).
    Staff use the same function from the admin on MANUAL payments.
    """
    now = now or timezone.now()
    state = payment_sync(payment=payment)
    if state in ("SUCCESS", "REFUND"):
        return "paid"
    if state in ("NOTPAY", "NOTEXIST", "PAYERROR", "CLOSED", "REVOKED"):
        to = PaymentStatus.CLOSED if state in ("CLOSED", "REVOKED") else PaymentStatus.PENDING
        Payment.objects.filter(pk=payment.pk, status__in=(PaymentStatus.UNKNOWN, PaymentStatus.MANUAL)).update(
            status=to, next_check_at=None
        )
        return "clear"
    checks = payment.checks + 1
    if checks < len(UNCERTAIN_CHECK_WAITS):
        Payment.objects.filter(pk=payment.pk, status=PaymentStatus.UNKNOWN).update(
            checks=checks, next_check_at=now + UNCERTAIN_CHECK_WAITS[checks]
        )
        return "later"
    manual = alert_on_failure(  # MANUAL and its one alert together
        lambda: Payment.objects.filter(pk=payment.pk, status=PaymentStatus.UNKNOWN).update(
            status=PaymentStatus.MANUAL, checks=checks, next_check_at=None
        ),
        lambda: dict(
            key=f"payment:{payment.out_trade_no}:manual",
            kind=Alert.Kind.PAYMENT_MANUAL,
            title=f"支付 {payment.out_trade_no} 状态无法确认，需人工处理",
            text=(
                f"商户订单号 {payment.out_trade_no}（{yuan(payment.total_fee)} 元）向微信查询 {checks} 次"
                f"仍无法确认是否支付（最后答复：{state or '无答复'}），已转为人工处理（MANUAL）。"
                f"请在后台「支付」中筛选「人工处理」，用「立即向微信查询」确认。"
            ),
        ),
    )
    if manual:
        logger.error(
            "ALERT payment %s still uncertain after %s checks (last answer %r): MANUAL",
            payment.out_trade_no,
            checks,
            state or "no answer",
        )
    return "manual"


def payments_check_uncertain(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Beat, every minute: the due checks of UNKNOWN payments."""
    now = now or timezone.now()
    counts: dict[str, int] = {}
    for payment in Payment.objects.filter(status=PaymentStatus.UNKNOWN, next_check_at__lte=now)[:200]:
        outcome = payment_check_uncertain(payment=payment, now=now)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def payment_status(*, order_no: str, customer_id: int) -> dict:
    """``{"order_status", "payment_status", "refund_status", "message"}``.

    Asks WeChat when a WeChat payment is still open. ``refund_status``: "requested" while an
    after-sale request waits for staff, else the latest refund's status (or null);
    ``message`` is a sentence for the customer (Chinese).
    """
    order = orders.order_get(order_no=order_no, customer_id=customer_id)
    payment = order.payments.order_by("-id").first()
    if (
        order.status == OrderStatus.UNPAID
        and payment
        and payment.method == PayMethod.WECHAT
        and payment.status in OPEN_STATUSES
        and payment.prepay_id
        and Payment.claim_status_query(payment.pk)
    ):
        payment_sync(payment=payment)
        order.refresh_from_db()
        payment.refresh_from_db()
    refund = order.refunds.order_by("-id").first()
    payment_state = payment.status if payment else "none"
    waiting = order.after_sales.filter(status="requested").exists()
    return {
        "order_status": order.status,
        "payment_status": payment_state,
        "refund_status": "requested" if waiting else (refund.status if refund else None),
        "message": "退款申请已提交，等待商家处理" if waiting else _status_message(order.status, payment_state, refund),
    }


def _status_message(order_status: str, payment_status: str, refund: Refund | None) -> str:
    if order_status == OrderStatus.CANCELLED and payment_status == PaymentStatus.PAID:
        done = refund is not None and refund.status == Refund.Status.SUCCESS
        return "已付款，但订单已取消，款项" + ("已退回" if done else "正在退回")
    if payment_status in (PaymentStatus.UNKNOWN, PaymentStatus.MANUAL):
        return "正在向微信确认支付结果"
    return {
        OrderStatus.UNPAID: "待支付",
        OrderStatus.PAID: "支付成功",
        OrderStatus.SHIPPED: "已发货",
        OrderStatus.COMPLETED: "已完成",
        OrderStatus.CANCELLED: "订单已取消",
        OrderStatus.REFUNDING: "退款中",
        OrderStatus.REFUNDED: "已退款",
    }[order_status]

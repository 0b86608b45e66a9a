"""改价: staff change what an unpaid order costs, before the customer pays.

A WeChat trade's ``total_fee`` cannot change, and the same ``out_trade_no`` with other
parameters is refused (``OUT_TRADE_NO_USED``, WECHAT.md). So the order's open WeChat trades are
settled first exactly as a cancel does (``order_lifecycle.wechat_settle_before_cancel``); then
one transaction holding the order's row moves ``adjust_fen`` and ``pay_fen`` together by a
conditional UPDATE (the CHECK ``pay_fen = goods + freight - coupon - points + adjust`` holds).
The customer's next "pay" makes a new trade, ``<order_no>P<n>``, for the new amount
(``services._wechat_payment``). Logged as an :class:`apps.orders.models.OrderEvent` with who and why.
"""

from __future__ import annotations

from django.db import transaction

from apps.orders.models import Order, OrderEvent, OrderStatus, PayMethod
from apps.payments import order_lifecycle, staff_limits
from apps.payments.models import Payment
from apps.payments.services import OPEN_STATUSES
from starmall.admin_money import yuan
from starmall.errors import InvalidInput, InvalidState, WechatUnavailable

PERMISSION = staff_limits.PRICE_ANY  # any amount (财务); PRICE_LIMITED: within a percentage (运营)
MAX_PAY_FEN = 10_000_000  # 100,000 yuan: far above any order of the shop; a typo guard


def order_price_change(*, order_no: str, pay_fen: int, reason: str, user, actor: str) -> Order:
    """Set an unpaid order's amount to ``pay_fen`` (fen, 1..10,000,000) with a reason, logged.

    ``user`` must hold ``orders.change_price``, or ``orders.change_price_limited`` with the new
    total adjustment within ``OPS_PRICE_CHANGE_PERCENT`` % of the goods total
    (``staff_limits.price_change_check``; StaffForbidden names who may). ``actor`` is "staff:<name>".
    Raises InvalidInput (amount, empty reason), InvalidState (not unpaid / paid at WeChat / the
    order changed meanwhile), WechatUnavailable (WeChat could not confirm the trade is closed, or
    the customer is paying right now: nothing changed, try again), ``Order.DoesNotExist``.
    """
    staff_limits.require_price_change(user)
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("请填写改价原因。")
    if not isinstance(pay_fen, int) or not 1 <= pay_fen <= MAX_PAY_FEN:
        raise InvalidInput("改后金额须在 0.01 元到 100000.00 元之间。")
    order = Order.objects.get(order_no=order_no)
    if order.status != OrderStatus.UNPAID:
        raise InvalidState(
            f"订单状态为「{order.get_status_display()}」，只有待支付的订单可以改价。", status=order.status
        )
    if order.pay_fen == pay_fen:
        return order
    # pay_fen - adjust_fen is fixed once the order exists, so the guard ``pay_fen = <as read>``
    # below also keeps the adjustment checked here
    staff_limits.price_change_check(user=user, goods_fen=order.goods_fen, adjust_fen=_adjust_after(order, pay_fen))
    settle = order_lifecycle.wechat_settle_before_cancel(order=order)  # orderquery + closeorder, outside a transaction
    if settle == order_lifecycle.Settle.PAID:
        raise InvalidState("微信显示该订单已支付，不能改价。", status="paid")
    if settle != order_lifecycle.Settle.CLEAR:
        raise WechatUnavailable("顾客正在支付或微信暂时无法确认，请稍后再试。")
    old = order.pay_fen
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)  # lock order: the order first
        if Payment.objects.filter(order=locked, method=PayMethod.WECHAT, status__in=OPEN_STATUSES).exists():
            raise WechatUnavailable("顾客刚发起了支付，请稍后再试。")  # a trade opened since the settle
        adjust = _adjust_after(locked, pay_fen)
        # Conditional: still unpaid and still the amount read before the settle.
        if (
            Order.objects.filter(pk=locked.pk, status=OrderStatus.UNPAID, pay_fen=old).update(
                pay_fen=pay_fen, adjust_fen=adjust
            )
            != 1
        ):
            raise InvalidState("订单刚刚发生了变化，请刷新后重试。", status=locked.status)
        OrderEvent.objects.create(
            order=locked,
            from_status=OrderStatus.UNPAID,
            to_status=OrderStatus.UNPAID,
            actor=actor,
            note=f"改价：{yuan(old)} 元 → {yuan(pay_fen)} 元；原因：{reason}"[:255],
        )
    order.refresh_from_db()
    return order


def _adjust_after(order: Order, pay_fen: int) -> int:
    """The order's ``adjust_fen`` once its amount is ``pay_fen`` (fen)."""
    return order.adjust_fen + (pay_fen - order.pay_fen)

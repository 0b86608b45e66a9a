"""Errors of payments, rendered by the API as ``{"code", "message", "detail"}``."""

from __future__ import annotations

from starmall.errors import InvalidState, WechatUnavailable


class OrderNotCancelled(InvalidState):
    """The order cannot be cancelled (409 ``invalid_state``). ``outcome`` says why, for the
    timeout task and the admin: ``"raced"`` (it is not unpaid any more: paid, cancelled by
    someone else), ``"paid"`` (WeChat says it was paid: the payment is now applied) or
    ``"paying"`` (the customer is paying at WeChat right now: try again later)."""

    MESSAGES = {
        "raced": "只有待支付的订单可以取消。",
        "paid": "该订单已支付，不能取消。",
        "paying": "该订单正在支付中，请稍后再试。",
    }

    def __init__(self, outcome: str, **detail) -> None:
        self.outcome = outcome
        super().__init__(self.MESSAGES[outcome], **detail)


class CancelUnconfirmed(WechatUnavailable):
    """WeChat could not be asked whether the order was paid, so it was not cancelled
    (503 ``wechat_unavailable``; ``outcome`` ``"unknown"``): try again later."""

    outcome = "unknown"
    message = "暂时无法向微信确认订单未支付，请稍后再试。"

"""Paid membership (SVIP) cards bought through WeChat Pay, exactly as a recharge is.

The purchase row is the members app's (``apps.members.models.CardPurchase``, its services add
the days); payments owns the WeChat side: the prepay through the api of ``WECHAT_PAY_API``
(recorded on the row, so a v2 trade stays v2 after a switch), the notification on the SAME
payment URLs (v2's and v3's) whose "member_card" handler (``apps/payments/notifications.py``)
claims it by its ``out_trade_no`` (``M...``; order numbers are digits, recharges ``R...``), the
query of a purchase whose notification was lost, and the expiry sweep. Refunds of an order
take back its member growth through the follow-up :func:`growth_revoke` (one per refund).
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from apps.accounts.models import Customer
from apps.members import services as members
from apps.members.models import CardPurchase
from apps.orders.models import FollowUp
from apps.payments import gateway, recharges
from apps.payments.applied import Applied
from apps.payments.models import Refund
from starmall.admin_money import yuan
from starmall.shop import shop_name


def card_buy(*, customer: Customer, card_id: int, now: dt.datetime | None = None) -> tuple[CardPurchase, dict]:
    """``POST /member-cards/{id}/buy``: an unpaid purchase of the active card and its
    ``wx.requestPayment`` parameters. The row is committed first (``members.card_purchase_create``),
    then WeChat's prepay is made outside any transaction through ``WECHAT_PAY_API``
    (``out_trade_no`` = purchase_no, total = pay_fen). Raises CardUnavailable (404),
    WechatUnavailable (the purchase stays unpaid and expires; buy again)."""
    now = now or timezone.now()
    purchase = members.card_purchase_create(customer=customer, card_id=card_id, api=gateway.api_new(), now=now)
    prepay_id, params = recharges.trade_prepay(
        row=purchase,
        out_trade_no=purchase.purchase_no,
        description=f"{shop_name()}-{purchase.card_name} {yuan(purchase.pay_fen)} 元",
        openid=customer.openid,
        now=now,
    )
    purchase.prepay_id = prepay_id
    return purchase, params


def card_apply_paid(*, purchase: CardPurchase, transaction_id: str, paid_at: dt.datetime) -> Applied:
    """A WeChat-confirmed purchase (already verified): the days added once (APPLIED), or
    DUPLICATE. Joins the caller's transaction (the notification's, with its audit row)."""
    done = members.card_purchase_apply_paid(purchase=purchase, transaction_id=transaction_id, paid_at=paid_at)
    return Applied.APPLIED if done else Applied.DUPLICATE


def card_sync(*, purchase: CardPurchase) -> str:
    """Ask WeChat about a purchase through its own api and apply a SUCCESS; return the
    trade_state ("" if WeChat could not be asked or the amount does not match)."""
    state = gateway.gateway_for(purchase.api).query_checked(
        out_trade_no=purchase.purchase_no, total_fee=purchase.pay_fen
    )
    if state is None:
        return ""
    if state.state in ("SUCCESS", "REFUND"):
        card_apply_paid(purchase=purchase, transaction_id=state.transaction_id, paid_at=state.paid_at or timezone.now())
    return state.state


def card_purchases_expire_due(*, now: dt.datetime | None = None, limit: int = 200) -> dict[str, int]:
    """Beat: unpaid purchases past ``expires_at`` (plus WeChat's grace) are asked about: paid
    ones are applied, the others become ``expired`` (conditional UPDATE); WeChat unreachable:
    the next sweep. Returns counts per outcome."""
    now = now or timezone.now()
    due = CardPurchase.objects.filter(status=CardPurchase.Status.UNPAID, expires_at__lte=now - recharges.EXPIRE_GRACE)
    return recharges.unpaid_sweep(
        due[:limit], sync=lambda purchase: card_sync(purchase=purchase), expired=CardPurchase.Status.EXPIRED
    )


def growth_revoke(followup: FollowUp) -> None:
    """Follow-up handler: take back the refund's share of its order's member growth
    (``members.growth_order_refunded``, once per refund by the ledger's UNIQUE key)."""
    out_refund_no = followup.key.split(":", 1)[1]
    refund = Refund.objects.get(out_refund_no=out_refund_no)
    order = followup.order
    members.growth_order_refunded(
        customer_id=order.customer_id, order_no=order.order_no, refund_no=out_refund_no, refund_fen=refund.refund_fen
    )

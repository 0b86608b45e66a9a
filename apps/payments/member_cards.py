"""Paid membership (SVIP) cards bought through WeChat Pay, exactly as a recharge is.

The purchase row is the members app's (``apps.members.models.CardPurchase``; its services add the
days); payments owns the WeChat side: the prepay through the api of ``WECHAT_PAY_API`` (recorded on
the row), the notification on the SAME payment URLs (v2's and v3's), claimed by the "member_card"
handler by its ``out_trade_no`` (``M...``), the query when a notification is lost, the expiry sweep,
and refunds (:func:`card_refund_request`, run by the refund worker through the purchase's api; a
success moves the SVIP expiry back by its share of the days, once: ``refunds.refund_succeeded``).
:func:`growth_revoke` takes back an order's member growth, once per refund.
"""

from __future__ import annotations

import datetime as dt
from functools import partial

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from apps.accounts.models import Customer
from apps.members import services as members
from apps.members.models import CardPurchase
from apps.orders.models import FollowUp
from apps.payments import gateway, recharges, refunds, staff_limits
from apps.payments.applied import Applied
from apps.payments.models import Refund
from starmall.admin_money import yuan
from starmall.errors import InvalidInput, InvalidState, NotFound
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


REFUNDABLE = (CardPurchase.Status.PAID, CardPurchase.Status.REFUNDED)


def card_refund_request(*, purchase_id: int, user, amount_fen: int | None = None) -> Refund:
    """Staff refund ``amount_fen`` fen (default: all not yet asked) of a paid card purchase
    through WeChat: a pending :class:`Refund` (``out_refund_no`` = purchase_no + ``R`` + n)
    dispatched to the refund worker after commit. The purchase row is locked (step 2 of
    ``starmall/locking.py``) so the refunds asked never add up past ``pay_fen`` (a FAILED one
    keeps its share: staff retry it). Raises NotFound, InvalidState (not paid, nothing left),
    InvalidInput (amount outside 1 .. what is left), StaffForbidden (``user`` may not approve
    that amount: ``staff_limits.refund_approval_check``)."""
    with transaction.atomic():
        purchase = CardPurchase.objects.select_for_update().filter(pk=purchase_id).first()
        if purchase is None:
            raise NotFound("会员卡购买记录不存在。", purchase_id=purchase_id)
        if purchase.status not in REFUNDABLE:
            raise InvalidState("只有已支付的会员卡可以退款。", status=purchase.status)
        asked = Refund.objects.filter(card_purchase=purchase)
        left = purchase.pay_fen - (asked.aggregate(fen=Sum("refund_fen"))["fen"] or 0)
        if left <= 0:
            raise InvalidState("这张会员卡已全部退款。", purchase_no=purchase.purchase_no)
        amount = left if amount_fen is None else amount_fen
        if not 1 <= amount <= left:
            raise InvalidInput("退款金额不正确。", amount_fen=[f"可退款金额为 1 到 {left} 分"])
        staff_limits.refund_approval_check(user=user, amount_fen=amount)
        refund = Refund.objects.create(
            card_purchase=purchase,
            out_refund_no=f"{purchase.purchase_no}R{asked.count() + 1}",
            refund_fen=amount,
            reason=Refund.Reason.MEMBER_CARD,
            next_attempt_at=timezone.now(),
        )
        transaction.on_commit(partial(refunds.refund_dispatch, refund.pk))
    return refund


def growth_revoke(followup: FollowUp) -> None:
    """Follow-up handler: take back the refund's share of its order's member growth
    (``members.growth_order_refunded``, once per refund by the ledger's UNIQUE key)."""
    out_refund_no = followup.key.split(":", 1)[1]
    refund = Refund.objects.get(out_refund_no=out_refund_no)
    order = followup.order
    members.growth_order_refunded(
        customer_id=order.customer_id, order_no=order.order_no, refund_no=out_refund_no, refund_fen=refund.refund_fen
    )

"""Recharge (top up the balance) through WeChat Pay, with a package's bonus.

A recharge is a WeChat payment like an order's: the same gateway (the api of ``WECHAT_PAY_API``,
kept on the recharge), the SAME notification URLs and checks (``apps/payments/notifications.py``,
whose "recharge" handler claims its ``out_trade_no``, ``R...``), the daily reconciliation; an app
beside payments would import payments and be imported by it, a cycle. It is credited exactly
once (:func:`recharge_apply_paid`). Payable until ``expires_at`` (``RECHARGE_PAY_MINUTES``, the
trade's ``time_expire``); beat asks WeChat about the ones past it (:func:`recharges_expire_due`).
A notification arriving later anyway is still credited: the money is the customer's.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import Customer, WalletEvent
from apps.payments import gateway, wechat
from apps.payments.applied import Applied
from apps.payments.models import Recharge, RechargePackage
from starmall.admin_money import yuan
from starmall.errors import InvalidInput, NotFound, WechatUnavailable
from starmall.locking import retry_on_lock_conflict
from starmall.shop import shop_name

logger = logging.getLogger(__name__)

PREFIX = "R"
EXPIRE_GRACE = wechat.MIN_EXPIRE  # WeChat may keep a trade open this much past our deadline


def is_recharge_no(out_trade_no: str) -> bool:
    """True for a recharge's out_trade_no (``R`` + digits); order numbers start with a digit."""
    return out_trade_no.startswith(PREFIX)


def _new_recharge_no(now: dt.datetime) -> str:
    """``R`` + ``yyyyMMddHHmmss`` (Shanghai) + 8 random digits: 23 characters."""
    return PREFIX + timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"


def recharge_package_save(*, package: RechargePackage, changed: list[str] | None = None) -> RechargePackage:
    """Staff add a package (``changed`` None) or change the ``changed`` columns of one (admin).
    Recharges copy the terms when made, so an edit never changes one already made. Raises
    InvalidInput for ``pay_fen`` < 1 fen or a negative bonus."""
    if package.pay_fen is None or package.pay_fen < 1 or (package.bonus_fen or 0) < 0:
        raise InvalidInput("充值金额至少 0.01 元，赠送金额不能为负。", pay_fen=["充值金额至少 0.01 元"])
    if changed is None or package.pk is None:
        package.save()
    elif changed:
        package.save(update_fields=changed)
    return package


def packages_active() -> list[RechargePackage]:
    """``GET /recharge/packages``: active packages in their ``sort`` order."""
    return list(RechargePackage.objects.filter(is_active=True))


def recharge_create(*, customer: Customer, package_id: int, now: dt.datetime | None = None) -> tuple[Recharge, dict]:
    """``POST /recharges``: a recharge of the package and its ``wx.requestPayment`` parameters.

    The row is committed first (unpaid, ``expires_at`` = now + RECHARGE_PAY_MINUTES), then
    WeChat's prepay is made outside any transaction through ``WECHAT_PAY_API`` (recorded as the
    recharge's ``api``; ``out_trade_no`` = recharge_no, ``total_fee`` = pay_fen). Raises
    NotFound (no such active package), WechatUnavailable (WeChat did not answer or refused: the
    recharge stays unpaid and expires; make a new one).
    """
    now = now or timezone.now()
    package = RechargePackage.objects.filter(pk=package_id, is_active=True).first()
    if package is None:
        raise NotFound("没有这个充值套餐。", package_id=package_id)
    recharge = Recharge.objects.create(
        recharge_no=_new_recharge_no(now),
        customer=customer,
        package=package,
        pay_fen=package.pay_fen,
        bonus_fen=package.bonus_fen,
        expires_at=now + dt.timedelta(minutes=settings.RECHARGE_PAY_MINUTES),
        api=gateway.api_new(),
    )
    prepay_id, params = trade_prepay(
        row=recharge,
        out_trade_no=recharge.recharge_no,
        description=f"{shop_name()}-余额充值 {yuan(recharge.pay_fen)} 元",
        openid=customer.openid,
        now=now,
    )
    recharge.prepay_id = prepay_id
    return recharge, params


def trade_prepay(*, row, out_trade_no: str, description: str, openid: str, now: dt.datetime) -> tuple[str, dict]:
    """WeChat's prepay of a committed trade row that is not an order's (a recharge, a member
    card purchase: ``api``, ``pay_fen``, ``expires_at``, ``prepay_id``), outside any transaction,
    through the row's own ``api``; the row's ``prepay_id`` is written. Returns ``(prepay_id,
    wx.requestPayment parameters)``. Raises WechatUnavailable (the row stays unpaid and expires)."""
    pay = gateway.gateway_for(row.api)
    try:
        prepay = pay.prepay(
            out_trade_no=out_trade_no,
            total_fee=row.pay_fen,
            description=description,
            openid=openid,
            starts_at=now,
            expires_at=row.expires_at,
        )
    except (gateway.PayUnavailable, gateway.PayRejected) as exc:
        logger.warning("prepay for %s failed: %s", out_trade_no, exc)
        raise WechatUnavailable("微信支付暂时无法下单，请稍后再试。") from exc
    type(row).objects.filter(pk=row.pk).update(prepay_id=prepay.prepay_id)
    return prepay.prepay_id, pay.pay_params(prepay.prepay_id)


def recharge_get(*, recharge_no: str, customer_id: int) -> Recharge:
    """The customer's recharge (another customer's: NotFound)."""
    recharge = Recharge.objects.filter(recharge_no=recharge_no, customer_id=customer_id).first()
    if recharge is None:
        raise NotFound("充值记录不存在。", recharge_no=recharge_no)
    return recharge


@retry_on_lock_conflict
def recharge_apply_paid(*, recharge: Recharge, transaction_id: str, paid_at: dt.datetime) -> Applied:
    """Credit a WeChat-confirmed recharge (already verified); Applied.APPLIED or DUPLICATE.

    One transaction: conditional ``unpaid/expired -> paid`` and, only for its winner, the
    balance ``recharge`` and ``bonus`` ledger rows (ref = recharge_no, UNIQUE (kind, reason, ref))
    and ``balance_fen += pay_fen + bonus_fen``: a duplicate or racing notification, or orderquery
    finding it paid afterwards, changes nothing. Run once more after a lock conflict (a second
    one raises DatabaseBusy, nothing credited); inside a caller's transaction (WeChat's
    notification, with its audit row) it joins it whole.
    """
    # The recharge row (step 2 of starmall/locking.py: the customer's payment record) before
    # the customer's balance (5), as an order's payment comes before the customer's wallet.
    with transaction.atomic(savepoint=False):  # joins a caller's transaction whole (no savepoint)
        if (
            Recharge.objects.filter(
                pk=recharge.pk, status__in=(Recharge.Status.UNPAID, Recharge.Status.EXPIRED)
            ).update(status=Recharge.Status.PAID, transaction_id=transaction_id, paid_at=paid_at)
            != 1
        ):
            return Applied.DUPLICATE
        wallet.balance_credit(
            customer_id=recharge.customer_id,
            amount_fen=recharge.pay_fen,
            reason=WalletEvent.Reason.RECHARGE,
            ref=recharge.recharge_no,
        )
        if recharge.bonus_fen > 0:
            wallet.balance_credit(
                customer_id=recharge.customer_id,
                amount_fen=recharge.bonus_fen,
                reason=WalletEvent.Reason.BONUS,
                ref=recharge.recharge_no,
            )
    return Applied.APPLIED


def recharge_sync(*, recharge: Recharge) -> str:
    """Ask WeChat about a recharge through its own api (v2 orderquery, v3 query) and apply a
    SUCCESS; return trade_state ("" if WeChat could not be asked or the amount does not match)."""
    state = gateway.gateway_for(recharge.api).query_checked(
        out_trade_no=recharge.recharge_no, total_fee=recharge.pay_fen
    )
    if state is None:
        return ""
    if state.state in ("SUCCESS", "REFUND"):
        recharge_apply_paid(
            recharge=recharge,
            transaction_id=state.transaction_id,
            paid_at=state.paid_at or timezone.now(),
        )
    return state.state


def recharges_expire_due(*, now: dt.datetime | None = None, limit: int = 200) -> dict[str, int]:
    """Beat, every minute: unpaid recharges past ``expires_at`` (plus WeChat's grace) are asked
    about (orderquery): paid ones are credited, the others become ``expired`` (conditional
    UPDATE); WeChat unreachable: left for the next sweep. Returns counts per outcome."""
    now = now or timezone.now()
    due = Recharge.objects.filter(status=Recharge.Status.UNPAID, expires_at__lte=now - EXPIRE_GRACE)[:limit]
    return unpaid_sweep(due, sync=lambda recharge: recharge_sync(recharge=recharge), expired=Recharge.Status.EXPIRED)


def unpaid_sweep(due, *, sync, expired: str) -> dict[str, int]:
    """The expiry sweep of unpaid trade rows past their deadline (recharges, member card
    purchases): ``sync(row)`` asks WeChat and applies a payment (its trade_state); states that
    can no longer pay make the row ``expired`` by a conditional UPDATE (``unpaid -> expired``);
    WeChat unreachable: the next sweep. Returns counts per outcome."""
    counts = {"paid": 0, "expired": 0, "later": 0}
    for row in due:
        state = sync(row)
        if state in ("SUCCESS", "REFUND"):
            counts["paid"] += 1
        elif state in ("NOTPAY", "NOTEXIST", "CLOSED", "REVOKED", "PAYERROR"):
            counts["expired"] += type(row).objects.filter(pk=row.pk, status="unpaid").update(status=expired)
        else:
            counts["later"] += 1
    return counts

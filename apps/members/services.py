"""Writes of the members app: the growth ledger and paid-membership (SVIP) periods.

Growth: every change is a :class:`GrowthEvent` row (UNIQUE ``(order_no, reason, ref)``) and, in
the same transaction, the conditional UPDATE of ``Membership.growth`` by the same amount; a
repeated call finds the row and changes nothing. An order's net growth is always
``(basis - refunded) // 100`` (whole yuan of ``pay_fen - freight_fen`` less refunds) once it
completed. SVIP: a purchase's ``unpaid/expired -> paid`` and the customer's expiry (``max(now,
expiry) + days``) commit together, once; a refund shortens the expiry by its share of the days.
Lock order: a purchase row (step 2 of ``starmall/locking.py``) before the locked ``Membership`` (5).
"""

from __future__ import annotations

import datetime as dt
import secrets

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from django.utils import timezone

from apps.accounts import address_cards
from apps.accounts.models import Customer
from apps.members.exceptions import CardUnavailable
from apps.members.models import CardPurchase, GrowthEvent, Level, MemberCard, Membership
from starmall.errors import InvalidInput, InvalidState

PURCHASE_PREFIX = "M"


def _units(fen: int) -> int:
    """Growth for ``fen``: 1 per whole yuan, never negative."""
    return max(0, fen) // 100


def membership_lock(customer_id: int) -> Membership:
    """The customer's member row, created if missing and locked until commit (step 5 of
    ``starmall/locking.py``). Caller holds the transaction."""
    Membership.objects.bulk_create([Membership(customer_id=customer_id)], ignore_conflicts=True)
    return Membership.objects.select_for_update().get(customer_id=customer_id)


def _ledger_add(*, customer_id: int, change: int, reason: str, order_no: str, ref: str, basis_fen: int) -> bool:
    """Insert one growth row and move ``Membership.growth`` by ``change`` in the caller's
    transaction (the member row locked). False when the row existed (UNIQUE): nothing done."""
    try:
        with transaction.atomic():  # savepoint: a duplicate must not spoil the caller's transaction
            GrowthEvent.objects.create(
                customer_id=customer_id, change=change, reason=reason, order_no=order_no, ref=ref, basis_fen=basis_fen
            )
    except IntegrityError:
        return False
    if (
        change
        and Membership.objects.filter(customer_id=customer_id, growth__gte=-change).update(growth=F("growth") + change)
        != 1
    ):
        raise InvalidState("成长值不足以扣回。", customer_id=customer_id, change=change)
    return True


@transaction.atomic(savepoint=False)
def growth_order_completed(*, customer_id: int, order_no: str, basis_fen: int) -> bool:
    """Credit a completed order: 1 growth per whole yuan of ``basis_fen`` (its ``pay_fen -
    freight_fen``) less what refunds took before it completed; once per order (False after)."""
    membership_lock(customer_id)
    refunded = _refunded_fen(order_no)
    return _ledger_add(
        customer_id=customer_id,
        change=_units(basis_fen - refunded),
        reason=GrowthEvent.Reason.ORDER_COMPLETED,
        order_no=order_no,
        ref=order_no,
        basis_fen=basis_fen,
    )


@transaction.atomic(savepoint=False)
def growth_order_refunded(*, customer_id: int, order_no: str, refund_no: str, refund_fen: int) -> bool:
    """Take back a refund's share of an order's growth: the order's net becomes
    ``(basis - all refunded) // 100``. Before the order completed nothing was credited: the row
    (change 0) records ``refund_fen`` for the completion to leave out. Once per refund."""
    membership_lock(customer_id)
    completed = GrowthEvent.objects.filter(order_no=order_no, reason=GrowthEvent.Reason.ORDER_COMPLETED).first()
    change = 0
    if completed is not None:
        net = GrowthEvent.objects.filter(order_no=order_no).aggregate(n=Sum("change"))["n"] or 0
        change = min(0, _units(completed.basis_fen - _refunded_fen(order_no) - refund_fen) - net)
    return _ledger_add(
        customer_id=customer_id,
        change=change,
        reason=GrowthEvent.Reason.ORDER_REFUNDED,
        order_no=order_no,
        ref=refund_no,
        basis_fen=refund_fen,
    )


def _refunded_fen(order_no: str) -> int:
    """Fen refunded on the order so far, by its refund rows."""
    rows = GrowthEvent.objects.filter(order_no=order_no, reason=GrowthEvent.Reason.ORDER_REFUNDED)
    return rows.aggregate(fen=Sum("basis_fen"))["fen"] or 0


def level_save(*, level: Level) -> Level:
    """Staff add or change a level (admin). Raises InvalidInput for a discount outside 1..100
    or a ``growth_min`` another level has."""
    if not 1 <= (level.discount_percent or 0) <= 100:
        raise InvalidInput("折扣须在 1 到 100 之间。", discount_percent=["折扣须在 1 到 100 之间（95 表示 95 折）"])
    if Level.objects.filter(growth_min=level.growth_min).exclude(pk=level.pk).exists():
        raise InvalidInput("已有等级使用这个成长值。", growth_min=["已有等级使用这个成长值"])
    level.save()
    return level


def card_save(*, card: MemberCard) -> MemberCard:
    """Staff add or change a member card (admin); purchases copy its terms when made."""
    if (card.pay_fen or 0) < 1 or (card.days or 0) < 1:
        raise InvalidInput("售价至少 0.01 元，天数至少 1 天。", pay_fen=["售价至少 0.01 元"])
    card.save()
    return card


def _new_purchase_no(now: dt.datetime) -> str:
    """``M`` + ``yyyyMMddHHmmss`` (Shanghai) + 8 random digits: 23 characters."""
    return PURCHASE_PREFIX + timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"


def is_purchase_no(out_trade_no: str) -> bool:
    """True for a card purchase's out_trade_no (``M`` + digits)."""
    return out_trade_no.startswith(PURCHASE_PREFIX)


def card_purchase_create(*, customer: Customer, card_id: int, api: str, now: dt.datetime | None = None) -> CardPurchase:
    """An unpaid purchase of the active card ``card_id`` (its days and price copied), payable
    until now + ``RECHARGE_PAY_MINUTES`` through the WeChat Pay ``api`` ("v2"/"v3"). Raises
    CardUnavailable. Committed on return (the caller then asks WeChat for the prepay)."""
    now = now or timezone.now()
    card = MemberCard.objects.filter(pk=card_id, active=True).first()
    if card is None:
        raise CardUnavailable(card_id=card_id)
    return CardPurchase.objects.create(
        purchase_no=_new_purchase_no(now),
        customer=customer,
        card=card,
        card_name=card.name,
        days=card.days,
        pay_fen=card.pay_fen,
        api=api,
        expires_at=now + dt.timedelta(minutes=settings.RECHARGE_PAY_MINUTES),
    )


@transaction.atomic(savepoint=False)
def card_purchase_apply_paid(*, purchase: CardPurchase, transaction_id: str, paid_at: dt.datetime) -> bool:
    """A WeChat-confirmed purchase (already verified): ``unpaid/expired -> paid`` and the
    customer's SVIP expiry ``max(now, expiry) + days``, together, once. False for a duplicate
    (already paid or refunded: nothing changes). Joins the caller's transaction."""
    if (
        CardPurchase.objects.filter(
            pk=purchase.pk, status__in=(CardPurchase.Status.UNPAID, CardPurchase.Status.EXPIRED)
        ).update(status=CardPurchase.Status.PAID, transaction_id=transaction_id, paid_at=paid_at)
        != 1
    ):
        return False
    membership = membership_lock(purchase.customer_id)
    now = timezone.now()
    starts = max(now, membership.svip_expires_at or now)
    ends = starts + dt.timedelta(days=purchase.days)
    _expiry_move(membership, ends)
    CardPurchase.objects.filter(pk=purchase.pk).update(starts_at=starts, ends_at=ends)
    return True


@transaction.atomic(savepoint=False)
def card_purchase_refunded(*, purchase: CardPurchase, refund_fen: int, now: dt.datetime | None = None) -> bool:
    """Money of a paid purchase went back (``refund_fen``, fen): ``-> refunded`` with the refunded
    total, and the customer's SVIP expiry moved back by ``days * refund_fen / pay_fen`` (whole
    seconds). False when more than what is left was asked (nothing changes)."""
    now = now or timezone.now()
    if refund_fen < 1:
        raise InvalidInput("退款金额至少 0.01 元。", refund_fen=["退款金额至少 0.01 元"])
    if (
        CardPurchase.objects.filter(
            pk=purchase.pk,
            status__in=(CardPurchase.Status.PAID, CardPurchase.Status.REFUNDED),
            refunded_fen__lte=F("pay_fen") - refund_fen,
        ).update(status=CardPurchase.Status.REFUNDED, refunded_fen=F("refunded_fen") + refund_fen, refunded_at=now)
        != 1
    ):
        return False
    cut = dt.timedelta(seconds=purchase.days * 86400 * refund_fen // purchase.pay_fen)
    membership = membership_lock(purchase.customer_id)
    _expiry_move(membership, (membership.svip_expires_at or now) - cut)
    CardPurchase.objects.filter(pk=purchase.pk).update(ends_at=F("ends_at") - cut)
    return True


def _expiry_move(membership: Membership, expires_at: dt.datetime) -> None:
    """Set the locked member row's SVIP expiry, guarded by the value read under the lock
    (``= None`` is ``IS NULL`` in Django)."""
    if (
        Membership.objects.filter(
            customer_id=membership.customer_id, svip_expires_at=membership.svip_expires_at
        ).update(svip_expires_at=expires_at)
        != 1
    ):
        raise InvalidState("会员到期时间已被改变。", customer_id=membership.customer_id)
    membership.svip_expires_at = expires_at
    address_cards.card_refresh_after_commit(membership.customer_id)  # the 秒杀 gate's copy (free freight)

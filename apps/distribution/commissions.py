"""Commissions: written frozen after a payment, released after completion, reversed by refunds.

- :func:`commission_award` handles the ``commission_award`` follow-up the paying transaction records
  (``apps/orders/followups.py`` outbox, registered in ``DistributionConfig.ready``), in the
  transaction of the follow-up's ``done``: once; UNIQUE (order, level) keeps racing deliveries to one row.
- :func:`commission_reverse_sync` (``refund_succeeded`` in ``apps.payments.hooks``, in the refund's
  transaction, and after an award) brings each commission's reversed part to its share of what was
  refunded, booked once per step. :func:`commissions_release_due` (beat, ``manage.py commissions_release``)
  makes available the frozen commissions of orders completed ``COMMISSION_FREEZE_DAYS`` ago.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from apps.distribution import ledger
from apps.distribution.models import Commission, CommissionSettings, Distributor, LedgerEntry, ProductCommission
from apps.orders.models import Order, OrderStatus

logger = logging.getLogger(__name__)

LIVE = (OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED, OrderStatus.REFUNDING)


def rates() -> CommissionSettings:
    """The shop's rates (the one row; made with the demo defaults 10 % / 5 % when missing)."""
    row, _ = CommissionSettings.objects.get_or_create(pk=1)
    return row


def commission_amounts(order: Order) -> tuple[int, dict[int, int]]:
    """``(base_fen, {level: amount_fen})`` for ``order``.

    Base = ``pay_fen - freight_fen`` (what was paid for the goods), shared out over the lines
    in proportion to their amounts (the last line takes the remainder); each line's share earns
    its product's rates (``ProductCommission``) or the shop's; each level's sum rounds DOWN to
    the fen once.
    """
    base = max(order.pay_fen - order.freight_fen, 0)
    shop = rates()
    lines = list(order.lines.values_list("product_id", "amount_fen").order_by("id"))
    overrides = {row.product_id: row for row in ProductCommission.objects.filter(product_id__in=[p for p, _ in lines])}
    goods = sum(amount for _, amount in lines)
    numerators = {1: 0, 2: 0}
    left = base
    for i, (product_id, amount) in enumerate(lines):
        share = left if i == len(lines) - 1 else (base * amount // goods if goods else 0)
        left -= share
        rate = overrides.get(product_id, shop)
        numerators[1] += share * rate.level1_rate_bp
        numerators[2] += share * rate.level2_rate_bp
    return base, {level: value // 10000 for level, value in numerators.items()}


def paid_kinds(order: Order) -> list[str]:
    """``followups.PAID_KINDS`` entry, in the paying transaction: a buyer bound to a referrer
    gets the ``commission_award`` follow-up (the referrer at payment time earns)."""
    from apps.orders.models import FollowUp

    if Distributor.objects.filter(customer_id=order.customer_id, referrer__isnull=False).exists():
        return [FollowUp.Kind.COMMISSION_AWARD]
    return []


def commission_award(followup) -> None:
    """Outbox handler for ``FollowUp.Kind.COMMISSION_AWARD``: the buyer's referrer (level 1)
    and that referrer's referrer (level 2) each earn once, frozen; nothing for an order that is
    no longer live, a buyer with no referrer, a zero amount or distribution switched off.
    Locks the order (step 1) first, as the refund's reversal does: the two cannot miss each other.
    """
    from apps.orders.services import order_lock

    order = order_lock(order_id=followup.order_id)
    if order.status not in LIVE or not rates().enabled:
        return
    buyer = Distributor.objects.filter(customer_id=order.customer_id).first()
    if buyer is None or buyer.referrer_id is None:
        return
    level1 = Distributor.objects.get(pk=buyer.referrer_id)
    beneficiaries = {1: level1}
    if level1.referrer_id is not None and level1.referrer_id != buyer.pk:
        beneficiaries[2] = Distributor.objects.get(pk=level1.referrer_id)
    base, amounts = commission_amounts(order)
    for level, beneficiary in beneficiaries.items():
        if amounts[level] <= 0 or beneficiary.customer_id == order.customer_id:
            continue  # nobody earns from their own orders
        try:
            with transaction.atomic():
                commission = Commission.objects.create(
                    order=order, level=level, distributor=beneficiary, base_fen=base, amount_fen=amounts[level]
                )
        except IntegrityError:
            continue  # this (order, level) earned already
        ledger.ledger_book(
            distributor_id=beneficiary.pk,
            reason=LedgerEntry.Reason.COMMISSION,
            ref=f"c{commission.pk}",
            frozen=commission.amount_fen,
        )
    commission_reverse_sync(order=order)  # a refund that came first


def _refunded_fen(order: Order) -> int:
    from apps.payments.models import Refund

    return (
        Refund.objects.filter(order_id=order.pk, status=Refund.Status.SUCCESS).aggregate(fen=Sum("refund_fen"))["fen"]
        or 0
    )


def commission_reverse_sync(*, order: Order) -> int:
    """Bring each commission of ``order`` to its reversed share: ``amount * refunded / pay``
    (rounded down; all of it once the whole payment is refunded). Frozen money leaves the
    frozen total, available money the available one (which may go below zero: a debt later
    commissions pay off). The caller holds the order's lock (step 1); each step is booked once
    (``reverse``, ``c<id>:<reversed total>``). Returns the fen reversed now."""
    refunded = min(_refunded_fen(order), order.pay_fen)
    if refunded <= 0:
        return 0
    total = 0
    with transaction.atomic():
        for commission in Commission.objects.select_for_update().filter(order=order).order_by("id"):
            target = (
                commission.amount_fen
                if refunded >= order.pay_fen
                else commission.amount_fen * refunded // order.pay_fen
            )
            delta = target - commission.reversed_fen
            if delta <= 0:
                continue
            status = Commission.Status.REVERSED if target == commission.amount_fen else commission.status
            Commission.objects.filter(pk=commission.pk, reversed_fen=commission.reversed_fen).update(
                reversed_fen=target, status=status
            )
            where = {"frozen": -delta} if commission.status == Commission.Status.FROZEN else {"available": -delta}
            ledger.ledger_book(
                distributor_id=commission.distributor_id,
                reason=LedgerEntry.Reason.REVERSE,
                ref=f"c{commission.pk}:{target}",
                **where,
            )
            total += delta
    return total


def refund_succeeded_hook(*, order: Order) -> None:
    """``apps.payments.hooks.REFUND_SUCCEEDED`` entry: reverse the refunded share."""
    commission_reverse_sync(order=order)


def freeze_days() -> dt.timedelta:
    return dt.timedelta(days=settings.COMMISSION_FREEZE_DAYS)


def commission_release(*, commission_id: int, now: dt.datetime | None = None) -> bool:
    """``frozen -> available`` for one commission (conditional UPDATE), moving what is left of
    it after reversals from the frozen to the available total; False if not frozen any more."""
    now = now or timezone.now()
    with transaction.atomic():
        if (
            Commission.objects.filter(pk=commission_id, status=Commission.Status.FROZEN).update(
                status=Commission.Status.AVAILABLE, available_at=now
            )
            != 1
        ):
            return False
        commission = Commission.objects.get(pk=commission_id)  # row locked by the UPDATE above
        net = commission.amount_fen - commission.reversed_fen
        if net:
            ledger.ledger_book(
                distributor_id=commission.distributor_id,
                reason=LedgerEntry.Reason.RELEASE,
                ref=f"c{commission.pk}",
                frozen=-net,
                available=net,
            )
    return True


def commissions_release_due(*, now: dt.datetime | None = None, limit: int = 1000) -> int:
    """Release every frozen commission whose order completed at least ``COMMISSION_FREEZE_DAYS``
    ago; returns how many. The beat job and ``manage.py commissions_release`` call this."""
    now = now or timezone.now()
    due = (
        Commission.objects.filter(
            status=Commission.Status.FROZEN,
            order__status=OrderStatus.COMPLETED,
            order__completed_at__lte=now - freeze_days(),
        )
        .values_list("pk", flat=True)
        .order_by("id")[:limit]
    )
    return sum(commission_release(commission_id=pk, now=now) for pk in list(due))


def totals_check(*, distributor_id: int) -> dict[str, int]:
    """The ledger's sums beside the totals (the back office and tests compare them)."""
    sums = LedgerEntry.objects.filter(distributor_id=distributor_id).aggregate(
        available=Sum("available_delta_fen"), frozen=Sum("frozen_delta_fen"), withdrawn=Sum("withdrawn_delta_fen")
    )
    row = Distributor.objects.filter(pk=distributor_id).values("available_fen", "frozen_fen", "withdrawn_fen").get()
    return {
        "ledger_available": sums["available"] or 0,
        "ledger_frozen": sums["frozen"] or 0,
        "ledger_withdrawn": sums["withdrawn"] or 0,
        **row,
    }

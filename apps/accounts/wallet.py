"""The customer's wallet: balance (fen), points and coupons, each change with its ledger row.

A counter changes by conditional UPDATE (``... WHERE balance_fen >= n``) beside a ``WalletEvent`` row
whose UNIQUE ``(kind, reason, ref)`` makes a repeat a no-op. The customer's row is step 5 of the lock
order in ``starmall/locking.py`` (order, payment or refund rows, slot and coupon before; flash sale,
SKU and product rows after). Balance and points writers carry ``@transaction.atomic(savepoint=False)``:
they join the caller's transaction (the wallet change commits or rolls back with the business change)
or open one. Earned points stay frozen (:func:`points_award_freeze`) until the order completes plus
``POINTS_FREEZE_DAYS`` (:func:`points_release_due`); a cancel or refund voids them (:func:`points_award_void`).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.accounts.exceptions import InsufficientBalance
from apps.accounts.models import Coupon, Customer, WalletEvent
from starmall.errors import InvalidInput

logger = logging.getLogger(__name__)


def _event(
    customer_id: int,
    kind: str,
    reason: str,
    amount: int,
    ref: str,
    *,
    order_no: str = "",
    state: str = WalletEvent.State.AVAILABLE,
    available_at: dt.datetime | None = None,
) -> bool:
    """Insert a ledger row; False if this (kind, reason, ref) was already recorded.

    ``available_at`` defaults to now for rows that count at once (everything but frozen awards).
    """
    if available_at is None and state == WalletEvent.State.AVAILABLE:
        available_at = timezone.now()
    try:
        with transaction.atomic():  # savepoint: a duplicate must not spoil the caller's transaction
            WalletEvent.objects.create(
                customer_id=customer_id,
                kind=kind,
                reason=reason,
                amount=amount,
                ref=ref,
                order_no=order_no,
                state=state,
                available_at=available_at,
            )
    except IntegrityError:
        return False
    return True


# --- balance (fen) ---------------------------------------------------------------------------


@transaction.atomic(savepoint=False)
def balance_debit(*, customer_id: int, amount_fen: int, ref: str) -> None:
    """Take ``amount_fen`` (fen, > 0) from the balance to pay order ``ref``, with its ledger row.

    Joins the caller's transaction (the paying one) or opens one. Raises InsufficientBalance
    (nothing changed) when the balance is short.
    """
    assert amount_fen > 0
    updated = Customer.objects.filter(pk=customer_id, balance_fen__gte=amount_fen).update(
        balance_fen=F("balance_fen") - amount_fen
    )
    if updated != 1:
        raise InsufficientBalance(amount_fen=amount_fen)
    if not _event(customer_id, WalletEvent.Kind.BALANCE, WalletEvent.Reason.PAY, -amount_fen, ref, order_no=ref):
        raise RuntimeError(f"order {ref} was already paid from the balance")  # rolls back


@transaction.atomic(savepoint=False)
def balance_credit(*, customer_id: int, amount_fen: int, reason: str, ref: str, order_no: str = "") -> bool:
    """Give ``amount_fen`` (fen, > 0) for ``(reason, ref)`` once (a refund: ``ref`` is the
    out_refund_no, ``order_no`` its order), with its ledger row; False if already done."""
    assert amount_fen > 0
    if not _event(customer_id, WalletEvent.Kind.BALANCE, reason, amount_fen, ref, order_no=order_no):
        return False
    Customer.objects.filter(pk=customer_id).update(balance_fen=F("balance_fen") + amount_fen)
    return True


@transaction.atomic(savepoint=False)
def balance_adjust(*, customer_id: int, amount_fen: int, ref: str) -> bool:
    """Staff: add (+) or remove (-) ``amount_fen`` fen once per ``ref`` (a note id); False if
    ``ref`` was used before. Removing more than the balance raises InsufficientBalance."""
    if (
        amount_fen < 0
        and Customer.objects.filter(pk=customer_id, balance_fen__gte=-amount_fen).update(
            balance_fen=F("balance_fen") + amount_fen
        )
        != 1
    ):
        raise InsufficientBalance(amount_fen=-amount_fen)
    if not _event(customer_id, WalletEvent.Kind.BALANCE, WalletEvent.Reason.ADJUST, amount_fen, ref):
        if amount_fen < 0:
            raise RuntimeError(f"adjustment {ref} was already made")  # rolls the decrement back
        return False
    if amount_fen > 0:
        Customer.objects.filter(pk=customer_id).update(balance_fen=F("balance_fen") + amount_fen)
    return True


# --- points ----------------------------------------------------------------------------------


@transaction.atomic(savepoint=False)
def points_spend(*, customer_id: int, points: int, ref: str) -> bool:
    """Spend ``points`` on order ``ref`` (joins the create transaction); False if the customer
    lacks them (nothing changed)."""
    if points <= 0:
        return True
    updated = Customer.objects.filter(pk=customer_id, points__gte=points).update(points=F("points") - points)
    if updated != 1:
        return False
    if not _event(customer_id, WalletEvent.Kind.POINTS, WalletEvent.Reason.SPEND, -points, ref, order_no=ref):
        raise RuntimeError(f"points were already spent on order {ref}")  # rolls back
    return True


@transaction.atomic(savepoint=False)
def points_credit(*, customer_id: int, points: int, reason: str, ref: str, order_no: str = "") -> bool:
    """Add spendable ``points`` for ``(reason, ref)`` once (points an order spent, returned on
    cancel or refund; staff adjustments). False if already credited or ``points`` is 0.

    Points an order *earns* are not credited here: see :func:`points_award_freeze`.
    """
    if points <= 0:
        return False
    if not _event(customer_id, WalletEvent.Kind.POINTS, reason, points, ref, order_no=order_no or ref):
        return False
    Customer.objects.filter(pk=customer_id).update(points=F("points") + points)
    return True


@transaction.atomic(savepoint=False)
def points_reward(*, customer_id: int, points: int, reason: str, ref: str) -> bool:
    """Add spendable ``points`` not tied to an order (daily sign-in: ``reason`` SIGN_IN) once
    per ``(reason, ref)``; joins the caller's transaction. False if already credited or 0."""
    if points <= 0:
        return False
    if not _event(customer_id, WalletEvent.Kind.POINTS, reason, points, ref):
        return False
    Customer.objects.filter(pk=customer_id).update(points=F("points") + points)
    return True


@transaction.atomic(savepoint=False)
def points_exchange_debit(*, customer_id: int, points: int, ref: str, order_no: str = "") -> None:
    """Take ``points`` (> 0) for points-mall exchange ``ref`` (its exchange_no; ``order_no``: the
    goods order it made), with its ledger row (reason EXCHANGE); joins the exchange's
    transaction. Raises InsufficientBalance (409 ``insufficient_balance``, nothing changed)
    when the customer has fewer spendable points."""
    assert points > 0
    if Customer.objects.filter(pk=customer_id, points__gte=points).update(points=F("points") - points) != 1:
        raise InsufficientBalance("积分不足，无法兑换。", points=points)
    if not _event(customer_id, WalletEvent.Kind.POINTS, WalletEvent.Reason.EXCHANGE, -points, ref, order_no=order_no):
        raise RuntimeError(f"points were already taken for exchange {ref}")  # rolls back


def customer_lock(*, customer_id: int) -> None:
    """``SELECT ... FOR UPDATE`` the customer's row: the wallet's serialization point (awards
    and their voiding; the per-customer order caps). Needs a transaction. Step 5 of the lock
    order (``starmall/locking.py``): after the order's rows, slot and coupon, before the
    customer's ledger rows, the flash sale, SKUs and product sales."""
    list(Customer.objects.select_for_update().filter(pk=customer_id).values_list("pk", flat=True))


def points_release_at(completed_at: dt.datetime) -> dt.datetime:
    """When points earned by an order completed at ``completed_at`` become spendable."""
    return completed_at + dt.timedelta(days=settings.POINTS_FREEZE_DAYS)


@transaction.atomic(savepoint=False)
def points_award_freeze(
    *, customer_id: int, points: int, order_no: str, order_live: bool, completed_at: dt.datetime | None
) -> bool:
    """Record the ``points`` an order earned, FROZEN (API.md: until the order completes plus
    ``POINTS_FREEZE_DAYS``); once per order (UNIQUE). Returns False if already recorded.

    ``order_live``: False when the order was cancelled or refunded meanwhile: the row is written
    VOID (it never counts). ``completed_at``: set when the order already completed.
    The customer's row is locked first: :func:`points_award_void` takes the same lock, so an
    award and the void of its order cannot miss each other.
    """
    if points <= 0:
        return False
    customer_lock(customer_id=customer_id)
    state = WalletEvent.State.FROZEN if order_live else WalletEvent.State.VOID
    release = points_release_at(completed_at) if completed_at and order_live else None
    return _event(
        customer_id,
        WalletEvent.Kind.POINTS,
        WalletEvent.Reason.AWARD,
        points,
        order_no,
        order_no=order_no,
        state=state,
        available_at=release,
    )


def points_award_schedule(*, order_no: str, completed_at: dt.datetime) -> int:
    """The order completed: its frozen award becomes due at ``completed_at`` + POINTS_FREEZE_DAYS."""
    return WalletEvent.objects.filter(
        kind=WalletEvent.Kind.POINTS,
        reason=WalletEvent.Reason.AWARD,
        order_no=order_no,
        state=WalletEvent.State.FROZEN,
    ).update(available_at=points_release_at(completed_at))


@transaction.atomic(savepoint=False)
def points_award_void(*, customer_id: int, order_no: str) -> int:
    """The order was cancelled or fully refunded: the points it earned die; returns how many.

    A frozen award becomes VOID (conditional UPDATE). An award already released is taken back
    with a REVOKE row when the customer still has the points (``points >= n``); if they were
    spent, nothing is taken (logged) — the freeze window exists so that this is rare.
    Locks the customer's row first (see :func:`points_award_freeze`).
    """
    customer_lock(customer_id=customer_id)
    awards = WalletEvent.objects.filter(
        kind=WalletEvent.Kind.POINTS, reason=WalletEvent.Reason.AWARD, order_no=order_no
    )
    voided = 0
    for award in awards:
        if award.state == WalletEvent.State.FROZEN:
            voided += (
                awards.filter(pk=award.pk, state=WalletEvent.State.FROZEN).update(state=WalletEvent.State.VOID)
                * award.amount
            )
        elif award.state == WalletEvent.State.AVAILABLE:
            try:
                with transaction.atomic():  # savepoint: a short balance undoes the REVOKE row
                    WalletEvent.objects.create(
                        customer_id=customer_id,
                        kind=WalletEvent.Kind.POINTS,
                        reason=WalletEvent.Reason.REVOKE,
                        amount=-award.amount,
                        ref=order_no,
                        order_no=order_no,
                        available_at=timezone.now(),
                    )
                    if (
                        Customer.objects.filter(pk=customer_id, points__gte=award.amount).update(
                            points=F("points") - award.amount
                        )
                        != 1
                    ):
                        raise _PointsSpent()
            except IntegrityError:
                continue  # revoked before
            except _PointsSpent:
                logger.warning("points of refunded order %s already spent: %s not taken back", order_no, award.amount)
                continue
            voided += award.amount
    return voided


class _PointsSpent(Exception):
    pass


def points_release_due(*, now: dt.datetime | None = None, limit: int = 500) -> int:
    """Beat: frozen awards whose ``available_at`` has passed become spendable; returns points.

    Each row in its own transaction: the customer's row locked, ``UPDATE ... SET state =
    available WHERE id = ? AND state = frozen`` and, only when that changed a row, ``points =
    points + n`` — so running twice (or two beats at once) releases each award once.
    """
    now = now or timezone.now()
    due = WalletEvent.objects.filter(state=WalletEvent.State.FROZEN, available_at__lte=now).values_list(
        "pk", "customer_id", "amount"
    )
    released = 0
    for pk, customer_id, amount in list(due[:limit]):
        with transaction.atomic():
            # The customer before the award row, as points_award_void takes them (step 5 of
            # starmall/locking.py: the customer, then its ledger rows): the void of a refunded
            # order and this release of its award cannot deadlock.
            customer_lock(customer_id=customer_id)
            if (
                WalletEvent.objects.filter(pk=pk, state=WalletEvent.State.FROZEN).update(
                    state=WalletEvent.State.AVAILABLE
                )
                != 1
            ):
                continue
            Customer.objects.filter(pk=customer_id).update(points=F("points") + amount)
            released += amount
    return released


@transaction.atomic(savepoint=False)
def points_adjust(*, customer_id: int, points: int, ref: str) -> bool:
    """Staff: add (+) or remove (-) spendable points once per ``ref``; False if ``ref`` was used.
    Removing more than the customer has raises InvalidInput."""
    if (
        points < 0
        and Customer.objects.filter(pk=customer_id, points__gte=-points).update(points=F("points") + points) != 1
    ):
        raise InvalidInput(
            "积分不足，无法扣减。", points=[f"最多可扣减 {Customer.objects.get(pk=customer_id).points} 积分"]
        )
    if not _event(customer_id, WalletEvent.Kind.POINTS, WalletEvent.Reason.ADJUST, points, ref):
        if points < 0:
            raise RuntimeError(f"adjustment {ref} was already made")
        return False
    if points > 0:
        Customer.objects.filter(pk=customer_id).update(points=F("points") + points)
    return True


# --- coupons ---------------------------------------------------------------------------------


def coupon_take(*, coupon_id: int, customer_id: int, order_no: str) -> bool:
    """Mark the coupon used by ``order_no`` (available -> used); False if it is not available
    (used, expired or not yet valid). The conditional UPDATE makes single use hold under races.
    Step 4 of ``starmall/locking.py``: after the order's slot, before the customer's row."""
    now = timezone.now()
    return (
        Coupon.objects.filter(
            Q(valid_from__isnull=True) | Q(valid_from__lte=now),
            pk=coupon_id,
            customer_id=customer_id,
            status=Coupon.Status.AVAILABLE,
            valid_until__gt=now,
        ).update(status=Coupon.Status.USED, used_order_no=order_no)
        == 1
    )


def coupon_return(*, coupon_id: int, order_no: str) -> bool:
    """Make the coupon available again after ``order_no`` was cancelled or fully refunded, once
    (``used`` by that order -> ``available``) and only while it has not expired (API.md).
    Step 4 of ``starmall/locking.py``, as in :func:`coupon_take`."""
    return (
        Coupon.objects.filter(
            pk=coupon_id, status=Coupon.Status.USED, used_order_no=order_no, valid_until__gt=timezone.now()
        ).update(status=Coupon.Status.AVAILABLE, used_order_no="")
        == 1
    )

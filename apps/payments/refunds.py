"""Refunds: after-sale requests, their approval, the refund worker and its confirmation.

Each refund is a row with its own UNIQUE ``out_refund_no`` (DESIGN.md flow 7). Approval reserves
the amount on the payment by a conditional UPDATE (``refunded_fen + n <= total_fee``): refunds
never add up past what was paid. The worker claims a refund (``pending -> processing``), asks
WeChat through the payment's api (a balance payment: credits the balance), retrying with the SAME
out_refund_no (3 tries with back-off, then FAILED and visible); WeChat's refund notification or
refundquery confirms it (:func:`refund_succeeded`). A full refund returns the stock (unless
shipped), the slot, the points spent and the coupon (if still valid); earned points die at approval.
"""

from __future__ import annotations

import datetime as dt
import logging
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q, Sum
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import WalletEvent
from apps.alerts.models import Alert
from apps.alerts.services import alert_on_failure
from apps.appointments import selectors as booking_selectors
from apps.catalog.models import Kind
from apps.members import services as members
from apps.members.models import CardPurchase
from apps.orders import followups
from apps.orders import services as orders
from apps.orders.models import AfterSale, FollowUp, Order, OrderStatus, PayMethod
from apps.payments import cancellations, gateway, hooks, staff_limits
from apps.payments.models import Payment, PaymentStatus, Refund, RefundBatchItem
from starmall import dispatch
from starmall.admin_money import yuan
from starmall.errors import InvalidInput, InvalidState
from starmall.locking import retry_on_lock_conflict

logger = logging.getLogger(__name__)

REPLAY_WINDOW = dt.timedelta(hours=24)  # the same refund request again within this returns it
LEASE = dt.timedelta(minutes=2)  # a claimed refund is retried if its worker died
CONFIRM_AFTER = dt.timedelta(minutes=5)  # ask refundquery when no notification came by then
_RETRYABLE = {"SYSTEMERROR", "BIZERR_NEED_RETRY", "FREQUENCY_LIMITED"}
REFUNDABLE_ORDER = (OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED)  # a refund may be asked


def paying_payment(order: Order) -> Payment | None:
    """The payment that paid the order: the paid one of the order's ``pay_method`` (a second,
    duplicate WeChat payment is not it; it gets its own refund)."""
    paid = order.payments.filter(status=PaymentStatus.PAID).order_by("id")
    return paid.filter(method=order.pay_method).first() or paid.first()


# --- requests and decisions ----------------------------------------------------------------


def refund_request(*, order_no: str, customer_id: int, reason: str, amount_fen: int | None = None) -> AfterSale:
    """The customer asks for a refund of ``amount_fen`` fen (default: all still refundable).

    The same request again (double click, retry) returns the same open request. Raises
    NotFound, InvalidState (order not paid, another request open with another amount),
    InvalidInput (amount above what is refundable). May approve at once under the shop's
    auto-approval rule (:func:`_auto_approvable`); a paid consultation follows the cancellation
    policy instead (``apps.payments.cancellations``: its amount, approved at once, the booking
    released; InvalidState once started).
    """
    order = orders.order_get(order_no=order_no, customer_id=customer_id)
    with transaction.atomic():
        # Lock the order row: two clicks must see each other's request (check, then insert).
        # Step 1 of starmall/locking.py: the request (2) is inserted after it.
        order = orders.order_lock(order_id=order.pk)
        payment = paying_payment(order)
        refundable = payment.total_fee - payment.refunded_fen if payment else 0
        replay = _same_request(order, reason, amount_fen, refundable)
        if replay is not None:  # a retry of a request already made (perhaps already refunded)
            return replay
        if order.status not in REFUNDABLE_ORDER + (OrderStatus.REFUNDING,):
            raise InvalidState("只有已支付的订单可以申请退款。", status=order.status)
        policy = cancellations.policy_amount(order=order)  # a consultation: the policy decides
        open_request = order.after_sales.filter(status__in=AfterSale.OPEN).first()
        amount = refundable if amount_fen is None else amount_fen
        if policy is not None:
            amount = amount_fen = min(policy, refundable)
        if open_request is not None:
            if open_request.amount_fen == amount or amount_fen is None:
                return open_request
            raise InvalidState("该订单已有处理中的退款申请。", refund_no=open_request.refund_no)
        if amount <= 0 or amount > refundable:
            raise InvalidInput("退款金额不正确。", amount_fen=[f"可退款金额为 1 到 {refundable} 分"])
        request = AfterSale.objects.create(
            order=order,
            refund_no=f"{order.order_no}R{order.after_sales.count() + 1}",
            reason=reason,
            amount_fen=amount,
        )
    if policy is not None:
        with transaction.atomic():
            refund = after_sale_approve(after_sale_id=request.pk, actor=cancellations.POLICY_ACTOR)
            if refund is not None:
                cancellations.booking_cancelled(order=order, refund=refund)
        request.refresh_from_db()
    elif _auto_approvable(order, amount, payment):
        after_sale_approve(after_sale_id=request.pk, actor="system:auto")
        request.refresh_from_db()
    return request


def _same_request(order: Order, reason: str, amount_fen: int | None, refundable: int) -> AfterSale | None:
    """The customer's earlier, not rejected request with the same reason made within
    REPLAY_WINDOW, when this one asks for the same thing: the same ``amount_fen``, or (no
    amount: "everything") the amount still refundable — or it was the request that refunded
    the rest. A retry after a lost answer then returns it, even once refunded. (Two partial
    refunds of one amount need different reasons.)"""
    recent = (
        order.after_sales.filter(reason=reason, created_at__gte=timezone.now() - REPLAY_WINDOW)
        .exclude(status=AfterSale.Status.REJECTED)
        .order_by("-id")
    )
    if amount_fen is not None:
        return recent.filter(amount_fen=amount_fen).first()
    latest = recent.first()
    if latest is None:
        return None
    if latest.amount_fen == refundable or (refundable == 0 and latest == order.after_sales.order_by("-id").first()):
        return latest
    return None


def _auto_approvable(order: Order, amount_fen: int, payment: Payment | None) -> bool:
    """The shop's rule (settings.REFUND_AUTO_APPROVE_HOURS, 0 = off): a full refund of a paid
    consultation whose live booking starts more than that many hours from now is approved at once."""
    hours = settings.REFUND_AUTO_APPROVE_HOURS
    if not hours or order.kind != Kind.CONSULTATION or order.status != OrderStatus.PAID:
        return False
    if payment is None or amount_fen != payment.total_fee - payment.refunded_fen:
        return False
    booking = booking_selectors.booking_of(order.order_no)
    return booking is not None and booking.start - timezone.now() > dt.timedelta(hours=hours)


def after_sale_approve(*, after_sale_id: int, actor: str, returned: bool = False, user=None) -> Refund | None:
    """Approve a requested refund: reserve the amount, create the Refund, dispatch after commit.

    ``user``: the staff user deciding (the back office always passes it): StaffForbidden unless
    they may approve this amount (``staff_limits.refund_approval_check``: 客服 up to
    ``SERVICE_REFUND_LIMIT_FEN``, 财务 any). None: the shop's own rules (auto-approval, failed
    groups, a batch already checked by ``payments.batch_refund``). ``returned=True``: the last
    step of "return first" (``apps.payments.returns``), staff received a ``returning`` request's
    goods. Returns None when it was not ``requested`` (``returning``) any more (double click).
    Raises InvalidState when the amount no longer fits what is refundable (nothing recorded).
    """
    now = timezone.now()
    with transaction.atomic():
        request = AfterSale.objects.filter(pk=after_sale_id).first()
        if request is None:
            return None
        if user is not None:  # the amount never changes once requested: checked before any lock
            staff_limits.refund_approval_check(user=user, amount_fen=request.amount_fen)
        # Lock the order: shipping it now must wait, so "restock" is decided on its real state.
        # It comes before the request's own row (steps 1 and 2 of starmall/locking.py), then the
        # payment's reservation (2) and the customer's points (5, order_mark_refunding).
        order = orders.order_lock(order_id=request.order_id)
        if returned:
            moved = AfterSale.objects.filter(pk=after_sale_id, status=AfterSale.Status.RETURNING).update(
                status=AfterSale.Status.APPROVED, return_received_at=now
            )
        else:
            moved = AfterSale.objects.filter(pk=after_sale_id, status=AfterSale.Status.REQUESTED).update(
                status=AfterSale.Status.APPROVED, decided_by=actor, decided_at=now
            )
        if moved != 1:
            return None
        request.refresh_from_db()
        payment = paying_payment(order)
        if payment is None or not _reserve(payment, request.amount_fen):
            raise InvalidState("退款金额超过了可退款金额。", refund_no=request.refund_no)
        payment.refresh_from_db()
        full = payment.refunded_fen == payment.total_fee
        # A full refund restocks the units of an order not shipped, or the goods returned; a partial
        # one restocks nothing (staff count what came back through the stock service).
        restock = full and (order.status == OrderStatus.PAID or returned)
        if full:
            orders.order_mark_refunding(order=order, actor=actor)
        refund = Refund.objects.create(
            order=order,
            payment=payment,
            after_sale=request,
            out_refund_no=request.refund_no,
            refund_fen=request.amount_fen,
            reason=Refund.Reason.AFTER_SALE,
            restock=restock,
            next_attempt_at=now,
        )
        transaction.on_commit(partial(refund_dispatch, refund.pk))
    return refund


def after_sale_reject(*, after_sale_id: int, actor: str, note: str = "") -> bool:
    """Reject a refund request that is still ``requested`` (or waiting for / on its way back
    as a return: ``approved_return``, ``returning``); False otherwise. ``note`` is the reason
    the customer sees (``reject_reason`` in GET /refunds)."""
    waiting = (AfterSale.Status.REQUESTED, AfterSale.Status.APPROVED_RETURN, AfterSale.Status.RETURNING)
    return (
        AfterSale.objects.filter(pk=after_sale_id, status__in=waiting).update(
            status=AfterSale.Status.REJECTED, decided_by=actor, decided_at=timezone.now(), decision_note=note[:200]
        )
        == 1
    )


def _reserve(payment: Payment, amount_fen: int) -> bool:
    """``refunded_fen += n WHERE refunded_fen + n <= total_fee``; False when it does not fit."""
    return (
        Payment.objects.filter(pk=payment.pk, refunded_fen__lte=F("total_fee") - amount_fen).update(
            refunded_fen=F("refunded_fen") + amount_fen
        )
        == 1
    )


@transaction.atomic(savepoint=False)
def refund_for_unwanted_payment(*, payment: Payment, reason: str) -> Refund | None:
    """Queue the one refund of a payment nobody should keep (late or duplicate), in the
    caller's transaction (the notification's) or its own.

    UNIQUE (payment, reason) makes a second call return None: the notification that revealed it
    can be delivered any number of times.
    """
    try:
        with transaction.atomic():
            if not _reserve(payment, payment.total_fee):
                return None
            refund = Refund.objects.create(
                order_id=payment.order_id,
                payment=payment,
                out_refund_no=f"{payment.out_trade_no}L",
                refund_fen=payment.total_fee,
                reason=reason,
                next_attempt_at=timezone.now(),
            )
    except IntegrityError:
        return None
    transaction.on_commit(partial(refund_dispatch, refund.pk))
    return refund


# --- the worker ------------------------------------------------------------------------------


def refund_dispatch(refund_id: int) -> None:
    """Push the refund onto the ``payments`` queue; the sweep retries if Redis is down."""
    from apps.payments.tasks import refund_run

    dispatch.push(refund_run, refund_id)


def refund_execute(*, refund_id: int, now: dt.datetime | None = None) -> str:
    """Make one attempt at a refund; return its status afterwards. Safe to run twice.

    Claim: ``pending`` (due) or ``processing`` with an expired lease -> ``processing``.
    Balance payments are credited in the same transaction as SUCCESS. WeChat refunds are
    SUBMITTED on acceptance and confirmed by the notification or :func:`refunds_sweep`.
    """
    now = now or timezone.now()
    due = Q(status=Refund.Status.PENDING, next_attempt_at__lte=now) | Q(
        status=Refund.Status.PROCESSING, next_attempt_at__lte=now
    )
    if (
        Refund.objects.filter(due, pk=refund_id).update(
            status=Refund.Status.PROCESSING, attempts=F("attempts") + 1, next_attempt_at=now + LEASE
        )
        != 1
    ):
        return Refund.objects.filter(pk=refund_id).values_list("status", flat=True).first() or "missing"
    refund = Refund.objects.select_related("payment", "order", "card_purchase").get(pk=refund_id)
    if refund.payment_id and refund.payment.method == PayMethod.BALANCE:
        refund_succeeded(refund=refund, credit_balance=True)
        return Refund.Status.SUCCESS
    out_trade_no, total_fee, api = refund.trade  # a payment's, or a card purchase's
    try:  # through the api the trade was made with
        refund_id_wx = gateway.gateway_for(api).refund(
            out_trade_no=out_trade_no,
            out_refund_no=refund.out_refund_no,
            total_fee=total_fee,
            refund_fee=refund.refund_fen,
            reason=refund.get_reason_display(),
        )
    except (gateway.PayUnavailable, gateway.PayRejected) as exc:
        retryable = isinstance(exc, gateway.PayUnavailable) or exc.err_code in _RETRYABLE
        return _attempt_failed(refund, now, f"{type(exc).__name__}: {exc}", retryable)
    Refund.objects.filter(pk=refund.pk, status=Refund.Status.PROCESSING).update(
        status=Refund.Status.SUBMITTED, refund_id=refund_id_wx, last_error="", next_attempt_at=now + CONFIRM_AFTER
    )
    return Refund.Status.SUBMITTED


def _attempt_failed(refund: Refund, now: dt.datetime, error: str, retryable: bool) -> str:
    if retryable and refund.attempts < Refund.MAX_ATTEMPTS:
        wait = dt.timedelta(seconds=Refund.BACKOFF_SECONDS[refund.attempts - 1])
        Refund.objects.filter(pk=refund.pk, status=Refund.Status.PROCESSING).update(
            status=Refund.Status.PENDING, last_error=error[:2000], next_attempt_at=now + wait
        )
        logger.warning(
            "refund %s attempt %s failed, retry in %s: %s", refund.out_refund_no, refund.attempts, wait, error
        )
        return Refund.Status.PENDING
    refund_mark_failed(refund, error)
    return Refund.Status.FAILED


def refund_mark_failed(refund: Refund, error: str) -> None:
    """FAILED, its after-sale request FAILED and one alert (``refund:<out_refund_no>:failed``),
    in one transaction (the caller's, as a savepoint, or its own); a refund that is no longer
    processing/submitted is left alone. ``error``: why, kept in ``last_error`` (2,000 chars).
    Used by the worker (out of tries), the sweep and WeChat's refund notification (CHANGE /
    REFUNDCLOSE)."""

    def mark() -> int:  # the refund's rows only: Refund, AfterSale, RefundBatchItem (starmall/locking.py)
        if (
            Refund.objects.filter(pk=refund.pk, status__in=(Refund.Status.PROCESSING, Refund.Status.SUBMITTED)).update(
                status=Refund.Status.FAILED, last_error=error[:2000], next_attempt_at=None
            )
            != 1
        ):
            return 0
        if refund.after_sale_id:
            AfterSale.objects.filter(pk=refund.after_sale_id).update(status=AfterSale.Status.FAILED)
        RefundBatchItem.follow_refund(refund_id=refund.pk, status=Refund.Status.FAILED, error=error)
        return 1

    def alert() -> dict[str, str]:
        order_no = Order.objects.filter(pk=refund.order_id).values_list("order_no", flat=True).first()
        order_no = order_no or refund.trade[0]  # a member card purchase has no order: its number
        return dict(
            key=f"refund:{refund.out_refund_no}:failed",
            kind=Alert.Kind.REFUND_FAILED,
            title=f"退款 {refund.out_refund_no} 失败（订单 {order_no}）",
            text=(
                f"订单 {order_no} 的退款 {refund.out_refund_no}（{yuan(refund.refund_fen)} 元）"
                f"尝试 {refund.attempts} 次后失败：{error}。钱尚未退给顾客；请在后台「退款」中查看原因，"
                f"可用「重试失败的退款」以同一退款单号重试。"
            ),
        )

    alert_on_failure(mark, alert)
    logger.error("ALERT refund %s FAILED after %s attempts: %s", refund.out_refund_no, refund.attempts, error)


@retry_on_lock_conflict
def refund_succeeded(*, refund: Refund, credit_balance: bool = False) -> bool:
    """Mark the refund SUCCESS once; a full after-sale refund makes the order ``refunded`` and
    returns its stock (unless shipped) and slot. ``credit_balance`` (a refund of a balance
    payment): the amount goes back to the customer's balance in the same transaction, once
    (the SUCCESS transition guards it; the ledger row's UNIQUE out_refund_no as well). False
    when the refund was already SUCCESS (nothing done). Caller may hold a transaction; alone,
    it runs once more after a lock conflict (then DatabaseBusy). Takes its locks in the order of
    ``starmall/locking.py``.
    """
    with transaction.atomic(savepoint=False):  # joins a caller's transaction whole (no savepoint)
        if refund.card_purchase_id:  # no order: the purchase's SVIP days go back instead
            return _card_refund_succeeded(refund)
        # Locks: the order (1), the refund's rows (2), the customer's balance (5), then what the
        # order gives back (slot, coupon, points, flash sale, SKUs: 3-7) and its product sales (8).
        # Crediting the customer before the order deadlocks with a balance payment of the same customer.
        order = orders.order_lock(order_id=refund.order_id)
        if not _mark_success(refund):
            return False
        if refund.after_sale_id:
            AfterSale.objects.filter(pk=refund.after_sale_id).update(status=AfterSale.Status.REFUNDED)
        RefundBatchItem.follow_refund(refund_id=refund.pk, status=Refund.Status.SUCCESS)
        if credit_balance:
            wallet.balance_credit(
                customer_id=order.customer_id,
                amount_fen=refund.refund_fen,
                reason=WalletEvent.Reason.REFUND,
                ref=refund.out_refund_no,
                order_no=order.order_no,
            )
        payment = Payment.objects.get(pk=refund.payment_id)
        returned = (
            Refund.objects.filter(payment=payment, status=Refund.Status.SUCCESS).aggregate(fen=Sum("refund_fen"))["fen"]
            or 0
        )
        # Every approved amount arrived (all of it, or what a late cancel refunds: the order was
        # made ``refunding`` for it; see apps.payments.cancellations).
        if (
            refund.reason == Refund.Reason.AFTER_SALE
            and order.status == OrderStatus.REFUNDING
            and returned == payment.refunded_fen
        ):
            orders.order_mark_refunded(
                order=order, actor="wechat" if payment.method == PayMethod.WECHAT else "system", restock=refund.restock
            )
        followups.followup_record(  # the refund's share of the member growth (apps.payments.member_cards)
            order=order, kind=FollowUp.Kind.GROWTH_REVOKE, key=f"{FollowUp.Kind.GROWTH_REVOKE}:{refund.out_refund_no}"
        )
        hooks.refund_succeeded_run(order=order)  # e.g. commissions reverse their share (distribution)
    return True


def _mark_success(refund: Refund) -> bool:
    """The refund's one ``-> success`` (conditional UPDATE); False when it was already."""
    live = (Refund.Status.PROCESSING, Refund.Status.SUBMITTED, Refund.Status.PENDING)
    return (
        Refund.objects.filter(pk=refund.pk, status__in=live).update(
            status=Refund.Status.SUCCESS, succeeded_at=timezone.now(), last_error=""
        )
        == 1
    )


def _card_refund_succeeded(refund: Refund) -> bool:
    """A member card's refund arrived: SUCCESS once, and in the same transaction the purchase's
    refunded total and the customer's SVIP expiry moved back by its share of the days
    (``members.card_purchase_refunded``; the purchase row, then the member row: steps 2 and 5).
    Caller holds the transaction."""
    if not _mark_success(refund):
        return False
    purchase = CardPurchase.objects.get(pk=refund.card_purchase_id)
    if not members.card_purchase_refunded(purchase=purchase, refund_fen=refund.refund_fen):
        raise InvalidState("会员卡退款超过了已支付金额。", out_refund_no=refund.out_refund_no)
    return True


def refunds_sweep(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Beat: run due refunds (first try lost, back-off over, dead worker) and ask WeChat about
    submitted ones with no notification yet. Returns counts by resulting status."""
    now = now or timezone.now()
    counts: dict[str, int] = {}
    due = Refund.objects.filter(
        status__in=(Refund.Status.PENDING, Refund.Status.PROCESSING), next_attempt_at__lte=now
    ).values_list("pk", flat=True)
    for refund_id in list(due[:200]):
        status = refund_execute(refund_id=refund_id, now=now)
        counts[status] = counts.get(status, 0) + 1
    submitted = Refund.objects.filter(status=Refund.Status.SUBMITTED, next_attempt_at__lte=now)
    for refund in submitted.select_related("payment", "card_purchase")[:200]:
        try:  # through the api its trade was made with (a v2 payment stays v2 after a switch)
            state = gateway.gateway_for(refund.trade[2]).refund_query(out_refund_no=refund.out_refund_no)
        except (gateway.PayUnavailable, gateway.PayRejected, gateway.BadSignature) as exc:
            logger.warning("refundquery %s failed: %s", refund.out_refund_no, exc)
            continue
        if state == "SUCCESS":
            refund_succeeded(refund=refund)
        elif state in ("CHANGE", "REFUNDCLOSE"):
            refund_mark_failed(refund, f"WeChat refund_status {state}")
        else:
            Refund.objects.filter(pk=refund.pk, status=Refund.Status.SUBMITTED).update(
                next_attempt_at=now + CONFIRM_AFTER
            )
        counts[f"query:{state}"] = counts.get(f"query:{state}", 0) + 1
    return counts


def refund_retry(*, refund_id: int, actor: str) -> bool:
    """Staff: try a FAILED refund again with the same out_refund_no (and a fresh try budget)."""
    with transaction.atomic():
        if (
            Refund.objects.filter(pk=refund_id, status=Refund.Status.FAILED).update(
                status=Refund.Status.PENDING,
                attempts=0,
                next_attempt_at=timezone.now(),
                last_error=f"retried by {actor}",
            )
            != 1
        ):
            return False
        refund = Refund.objects.get(pk=refund_id)
        if refund.after_sale_id:
            AfterSale.objects.filter(pk=refund.after_sale_id).update(status=AfterSale.Status.APPROVED)
        RefundBatchItem.follow_refund(refund_id=refund_id, status=Refund.Status.PENDING)
        transaction.on_commit(partial(refund_dispatch, refund_id))
    return True

"""Where an order changes state.

An order is made in two phases elsewhere: ``apps.orders.confirm.order_confirm`` (the draft) and
``apps.orders.create.orders_create`` (the order, in ONE transaction); the per-customer caps are
``apps.orders.caps``. Every status change here is a conditional UPDATE (``WHERE id = ? AND
status = <expected>``) through :func:`order_transition`, whose row count decides what happens
next. The ``order_mark_*`` functions are the bare state changes: cancelling an order is
``apps.payments.order_lifecycle.order_cancel`` (it asks WeChat first), and
:func:`order_mark_cancelled` only its last step.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter

from django.db import transaction
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import WalletEvent
from apps.appointments import bookings, slots
from apps.appointments import selectors as booking_selectors
from apps.catalog import stock
from apps.catalog.models import Kind
from apps.marketing import bargains, flash_sales, group_buys
from apps.orders import events, followups, pickup
from apps.orders.models import AfterSale, Delivery, FollowUp, Order, OrderStatus
from starmall.errors import InvalidState, NotFound
from starmall.locking import retry_on_lock_conflict

logger = logging.getLogger(__name__)


# --- transitions ---------------------------------------------------------------------------


def order_lock_for_handover(order: Order, *, waiting: str) -> bool:
    """Before goods leave the shop (shipped, or collected at a store), in the caller's
    transaction: lock the order's row (step 1 of ``starmall/locking.py``, as ``refund_request``
    and ``after_sale_approve`` take it, so no request slips in between); False unless it is
    paid; InvalidState ``waiting`` (``refund_no`` in detail) while a refund request waits."""
    locked = Order.objects.select_for_update().filter(pk=order.pk).values_list("status", flat=True).first()
    if locked != OrderStatus.PAID:
        return False
    request = AfterSale.objects.filter(order_id=order.pk, status=AfterSale.Status.REQUESTED).first()
    if request is not None:
        raise InvalidState(waiting, refund_no=request.refund_no)
    return True


@transaction.atomic(savepoint=False)
def order_transition(
    order: Order, *, from_statuses: tuple[str, ...], to: str, actor: str, note: str = "", **fields
) -> bool:
    """``UPDATE order SET status = to WHERE id = ? AND status IN from_statuses``; log it.

    Returns False (and changes nothing) when the order was no longer in ``from_statuses``:
    someone else got there first. Joins the caller's transaction or opens one.
    """
    updated = Order.objects.filter(pk=order.pk, status__in=from_statuses).update(status=to, **fields)
    if updated != 1:
        return False
    # The row was in one of from_statuses; the in-memory status says which unless it is stale.
    previous = order.status if order.status in from_statuses else from_statuses[0]
    order.status = to
    for name, value in fields.items():
        setattr(order, name, value)
    events.order_status_changed_event(order=order, from_status=previous, to_status=to, actor=actor, note=note)
    return True


def order_lock(*, order_id: int) -> Order:
    """``SELECT ... FOR UPDATE`` the order's row and return the order as it is now.

    Step 1 of the lock order (``starmall/locking.py``): a transaction that goes on to the
    order's payment or refund rows, its customer or its units takes this first. Needs a
    transaction; raises ``Order.DoesNotExist``.
    """
    return Order.objects.select_for_update().get(pk=order_id)


def order_get(*, order_no: str, customer_id: int | None = None) -> Order:
    """The order; with ``customer_id`` only the customer's own (else NotFound)."""
    qs = Order.objects.filter(order_no=order_no)
    if customer_id is not None:
        qs = qs.filter(customer_id=customer_id)
    order = qs.first()
    if order is None:
        raise NotFound("订单不存在。", order_no=order_no)
    return order


@retry_on_lock_conflict  # the whole give-back, once more after a lock conflict (starmall/locking.py)
@transaction.atomic(savepoint=False)
def order_mark_cancelled(*, order: Order, actor: str, reason: str) -> bool:
    """The bare state change ``unpaid -> cancelled``: give back stock, slot, coupon and points
    — exactly once. NOT the cancel: call ``apps.payments.order_lifecycle.order_cancel``, which first
    makes sure WeChat will not take the money, then calls this.

    The conditional UPDATE is the guard: whoever wins it (customer, timeout task, sweep)
    restores; everyone else gets False and restores nothing. Joins the caller's transaction
    or opens one (then run once more after a lock conflict, else ``DatabaseBusy``).
    """
    if not order_transition(
        order,
        from_statuses=(OrderStatus.UNPAID,),
        to=OrderStatus.CANCELLED,
        actor=actor,
        note=reason,
        cancelled_at=timezone.now(),
        cancel_reason=reason,
    ):
        return False
    _give_back(order, restock=True)
    return True


def _give_back(order: Order, *, restock: bool) -> None:
    """What an order that stops being live returns, once per order (the caller's transition
    guards it; the points' WalletEvent is UNIQUE as well): with ``restock`` its slot and units,
    always its coupon (while valid), the points it spent, the points it earned (voided, once
    paid) and a flash sale's allowance (the sale's quota too with ``restock``).

    In the lock order of ``starmall/locking.py``, after the order row the caller's transition
    holds: slot (3), coupon (4), customer (5), flash sale (6), SKUs in id order (7) — the
    order ``order_create`` took them in, so a cancel and a create of one customer sharing a
    SKU cannot deadlock.
    """
    if restock:
        slots.slot_release(order_no=order.order_no)
    if order.coupon_id:
        wallet.coupon_return(coupon_id=order.coupon_id, order_no=order.order_no)
    wallet.points_credit(
        customer_id=order.customer_id, points=order.points_used, reason=WalletEvent.Reason.RETURN, ref=order.order_no
    )
    if order.paid_at and order.status == OrderStatus.CANCELLED:
        # Only a paid order can have earned points (awards follow a payment); a refunded one
        # lost them when it became refunding (order_mark_refunding).
        wallet.points_award_void(customer_id=order.customer_id, order_no=order.order_no)
    quantities = Counter()
    for sku_id, quantity in order.lines.values_list("sku_id", "quantity"):
        quantities[sku_id] += quantity
    if order.flash_sale_id:  # the customer's allowance; with restock the sale's quota (while not ended)
        flash_sales.flash_sale_give_back(
            sale_id=order.flash_sale_id, customer_id=order.customer_id, units=sum(quantities.values()), restock=restock
        )
    if order.group_id:  # the 拼团 seat; with restock the activity's quota (while it runs)
        group_buys.group_give_back(
            group_id=order.group_id, order_no=order.order_no, units=sum(quantities.values()), restock=restock
        )
    if order.bargain_id:  # a cancelled order reopens the 砍价 record; with restock the campaign's quota
        bargains.bargain_give_back(
            record_id=order.bargain_id, restock=restock, cancelled=order.status == OrderStatus.CANCELLED
        )
    if restock:
        stock.sku_stock_restore(quantities=quantities)


def _product_units(order: Order) -> Counter:
    quantities = Counter()
    for product_id, quantity in order.lines.values_list("product_id", "quantity"):
        quantities[product_id] += quantity
    return quantities


def _status(order: Order) -> str:
    return Order.objects.values_list("status", flat=True).get(pk=order.pk)


@transaction.atomic(savepoint=False)
def order_mark_paid(*, order: Order, method: str, paid_at: dt.datetime, actor: str) -> bool:
    """``unpaid -> paid``, count sales and record the follow-ups (message, SMS, the points award,
    which is frozen: see ``followups._award_points``), in the paying transaction; a
    consultation is delivered as it is paid (``followups.DELIVERED`` hooks, ``"virtual"``).

    Returns False when the order was not unpaid (already paid, or cancelled: the caller decides
    what a late payment means). Follow-ups are rows here and reach Redis after commit.
    """
    if not order_transition(
        order, from_statuses=(OrderStatus.UNPAID,), to=OrderStatus.PAID, actor=actor, pay_method=method, paid_at=paid_at
    ):
        return False
    kinds = [FollowUp.Kind.SUBSCRIBE_MESSAGE, FollowUp.Kind.SMS, FollowUp.Kind.POINTS_AWARD]
    for extra in followups.PAID_KINDS:  # e.g. the referrers' commissions (apps.distribution)
        kinds += extra(order)
    if order.kind == Kind.CONSULTATION:
        kinds.append(FollowUp.Kind.CHAT_OPEN)  # the chat with the teacher (apps.chat registers it)
    followups.followup_record_many(order=order, kinds=kinds)
    if order.kind == Kind.CONSULTATION:  # delivered as it is paid (WeChat: virtual goods)
        bookings.booking_paid(order_no=order.order_no)  # held for good, no deadline
        followups.delivered_run(order=order, how="virtual")
    _pickup_code_assign(order)
    if order.group_id:  # the 拼团 seat is paid; the payment filling the last seat completes the group (step 6)
        group_buys.group_seat_paid(group_id=order.group_id, order_no=order.order_no, paid_at=paid_at)
    # Last (step 8 of starmall/locking.py): a flash sale's orders all count into one product
    # row, locked until commit; a balance payment debits the customer (step 5) before this.
    stock.product_sales_add(quantities=_product_units(order))
    return True


def _pickup_code_assign(order: Order) -> None:
    """A paid pickup order gets its pickup code (unique among live pickup orders)."""
    if order.delivery == Delivery.PICKUP:
        pickup.pickup_code_assign(order)


@transaction.atomic(savepoint=False)
def order_mark_refunding(*, order: Order, actor: str) -> bool:
    """A full refund was approved: ``paid/shipped/completed -> refunding``, in the approving
    transaction. The points the order earned die now (frozen: void; released: taken back)."""
    if not order_transition(
        order,
        from_statuses=(OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED),
        to=OrderStatus.REFUNDING,
        actor=actor,
        note="同意全额退款",
    ):
        return False
    wallet.points_award_void(customer_id=order.customer_id, order_no=order.order_no)
    return True


@transaction.atomic(savepoint=False)
def order_mark_refunded(*, order: Order, actor: str, restock: bool) -> bool:
    """The full refund arrived: ``refunding -> refunded``, once, under the transition.

    The points the order spent come back, its coupon too while still valid (API.md), and its
    units leave ``Product.sales`` (sales count live orders only); with ``restock`` (goods not
    shipped, or a consultation not held) the stock and the slot come back as well. (The points
    it earned died at ``refunding``.)
    """
    if not order_transition(
        order, from_statuses=(OrderStatus.REFUNDING,), to=OrderStatus.REFUNDED, actor=actor, note="已全额退款"
    ):
        return False
    _give_back(order, restock=restock)  # not live any more: without restock the units stay out
    # Last, step 8 of starmall/locking.py: the product rows every paying order counts into.
    stock.product_sales_remove(quantities=_product_units(order))
    return True


def order_complete(*, order: Order, actor: str) -> bool:
    """``shipped -> completed`` (goods received) or ``paid -> completed`` (consultation held).

    The points the order earned become due ``POINTS_FREEZE_DAYS`` after this moment; its
    member growth is a follow-up (``GROWTH_AWARD``) of the same transaction.
    """
    allowed = (OrderStatus.SHIPPED,) if order.kind == Kind.GOODS else (OrderStatus.PAID,)
    now = timezone.now()
    with transaction.atomic():
        if not order_transition(order, from_statuses=allowed, to=OrderStatus.COMPLETED, actor=actor, completed_at=now):
            return False
        wallet.points_award_schedule(order_no=order.order_no, completed_at=now)
        if order.kind == Kind.CONSULTATION:  # held: unmarked counts as attended (API.md "Booking")
            bookings.booking_attended_if_unmarked(order_no=order.order_no)
        followups.followup_record(order=order, kind=FollowUp.Kind.GROWTH_AWARD)  # member growth (apps.members)
    return True


def orders_complete_held_consultations(*, now: dt.datetime | None = None) -> int:
    """Beat: paid consultation orders whose live booking has ended (``end <= now``) become
    ``completed``, an unmarked attendance counting as attended; returns how many."""
    now = now or timezone.now()
    due = Order.objects.filter(
        status=OrderStatus.PAID, kind=Kind.CONSULTATION, order_no__in=booking_selectors.ended_order_nos(now=now)
    ).order_by("pk")
    return sum(order_complete(order=order, actor="system:slot-passed") for order in due[:500])


def order_receive(*, order_no: str, customer_id: int) -> Order:
    """The customer confirms receipt: ``shipped -> completed``, else InvalidState."""
    order = order_get(order_no=order_no, customer_id=customer_id)
    if order.kind != Kind.GOODS or not order_complete(order=order, actor="customer"):
        raise InvalidState("只有已发货的订单可以确认收货。", status=_status(order))
    order.refresh_from_db()
    return order


def order_mark_picked_up(*, order: Order, actor: str, verifier: str) -> bool:
    """A store's staff handed a paid pickup order over (自提核销): ``paid -> completed``, with
    the verification's time and ``verifier`` (a staff username) written by the same
    conditional UPDATE; whoever wins it completes the order, everyone else gets False and
    changes nothing. The points become due ``POINTS_FREEZE_DAYS`` from now, and the
    ``followups.DELIVERED`` hooks hear ``"pickup"``. A refund request waiting for staff raises
    InvalidState (``refund_no`` in detail). Called by ``apps.stores.services.pickup_verify``
    (permissions, the store, the log); joins the caller's transaction or opens one.
    """
    if order.delivery != Delivery.PICKUP:
        return False
    with transaction.atomic():
        # The order row first (step 1 of starmall/locking.py), as order_ship does: a refund
        # request cannot slip in between the check and the hand-over.
        if not order_lock_for_handover(order, waiting="该订单有进行中的退款申请，请先处理。"):
            return False
        now = timezone.now()
        if not order_transition(
            order,
            from_statuses=(OrderStatus.PAID,),
            to=OrderStatus.COMPLETED,
            actor=actor,
            note="到店自提核销",
            completed_at=now,
            pickup_verified_at=now,
            pickup_verified_by=verifier[:150],
        ):
            return False
        wallet.points_award_schedule(order_no=order.order_no, completed_at=now)
        if order.kind == Kind.CONSULTATION:  # held: unmarked counts as attended (API.md "Booking")
            bookings.booking_attended_if_unmarked(order_no=order.order_no)
        followups.followup_record(order=order, kind=FollowUp.Kind.GROWTH_AWARD)  # member growth (apps.members)
        followups.delivered_run(order=order, how="pickup")
    return True

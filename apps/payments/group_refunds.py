"""What an ended 拼团 group owes its members, asked at payments' level (marketing, where groups
live, sits below orders and payments): a cancel for each unpaid seat and, when the group failed,
a full refund for each paid one.

:func:`group_end` ends a group (marketing's conditional ``forming -> failed``, or ``-> done`` by
模拟成团) and :func:`group_settle` asks what each seat still owes; the group leaves the sweep
(``settled_at``) once every seat's order is cancelled, refunding or refunded. :func:`groups_end_due`
(beat, every ``BEAT_SWEEP_SECONDS``) ends the groups past their deadline and settles ended ones.
Safe to run twice and on two machines: each step is a conditional UPDATE or holds the order's row.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.contrib.auth import get_user_model
from django.utils import timezone

from apps.marketing import group_buys
from apps.marketing.models import Group
from apps.orders.models import AfterSale, Order, OrderStatus
from apps.payments import order_lifecycle, refunds
from apps.payments.exceptions import CancelUnconfirmed, OrderNotCancelled
from starmall.errors import InvalidState, NotFound, ShopError

logger = logging.getLogger(__name__)

GROUP_FAILED_REASON = "拼团未成团，自动全额退款"
MANAGE = "marketing.manage_groupbuy"


def group_end(*, group_id: int, actor: str, now: dt.datetime | None = None, force: bool = False) -> str | None:
    """End one forming group (``force``: now, staff; else only past its deadline) and settle it.

    Returns ``"failed"``, ``"done"`` (模拟成团) or None when it was not forming or not due (nothing
    changed by this call; a second run or another machine got there first)."""
    outcome = group_buys.group_fail(group_id=group_id, actor=actor, now=now, force=force)
    if outcome is not None:
        group_settle(group_id=group_id)
    return outcome


def group_end_by_staff(*, group_id: int, username: str) -> str:
    """``manage.py group_end`` and the back office's action: end a forming group now, as its
    deadline would. Raises NotFound (no such group, no such active staff user), InvalidState
    (the user lacks ``marketing.manage_groupbuy``; the group is not forming). Returns the outcome."""
    user = get_user_model().objects.filter(username=username, is_active=True, is_staff=True).first()
    if user is None:
        raise NotFound("没有这个员工账号。", username=username)
    if not user.has_perm(MANAGE):
        raise InvalidState("该员工没有结束拼团的权限。", username=username)
    if not Group.objects.filter(pk=group_id).exists():
        raise NotFound("没有这个拼团。", group_id=group_id)
    outcome = group_end(group_id=group_id, actor=f"staff:{username}", force=True)
    if outcome is None:
        status = Group.objects.values_list("status", flat=True).get(pk=group_id)
        raise InvalidState("该拼团已结束。", group_id=group_id, status=status)
    return outcome


def group_settle(*, group_id: int) -> dict[str, int]:
    """Ask every cancel and refund an ended group owes (a cancel per unpaid seat; a full refund
    per paid seat of a failed group); returns ``{"cancelled", "refunds", "pending"}``. Marks the
    group settled when nothing is pending."""
    counts = {"cancelled": 0, "refunds": 0, "pending": 0}
    failed = Group.objects.values_list("status", flat=True).get(pk=group_id) == Group.Status.FAILED
    for seat in group_buys.group_seats_to_settle(group_id=group_id):
        order = Order.objects.filter(order_no=seat.order_no).first()
        if order is None:
            continue
        if order.status == OrderStatus.UNPAID:
            # THE cancel: WeChat first; the order's give-back releases the seat and returns the units.
            try:
                order_lifecycle.order_cancel(order=order, actor="system:group-ended", reason="拼团已结束")
                counts["cancelled"] += 1
                continue
            except CancelUnconfirmed:
                counts["pending"] += 1
                continue
            except OrderNotCancelled:  # paid meanwhile (WeChat said so and it is applied now)
                order.refresh_from_db()
        if failed and order.status == OrderStatus.PAID:
            # A full refund through the refund queue: the order's row lock and the request's replay
            # rule make it one request and one Refund (UNIQUE out_refund_no) per order, however often
            # this runs. The refund's arrival gives the units back (activity while it runs, SKU).
            if _refund_member(order):
                counts["refunds"] += 1
            else:
                counts["pending"] += 1
        elif order.status in (OrderStatus.UNPAID, OrderStatus.PAID) and failed:
            counts["pending"] += 1
    if counts["pending"] == 0:
        group_buys.group_mark_settled(group_id=group_id)
    return counts


def _refund_member(order: Order) -> bool:
    """The full refund of a paid member of a failed group, once: True when it is approved (now or
    before). The same reason again is the same request (``refund_request``'s replay)."""
    try:
        request = refunds.refund_request(
            order_no=order.order_no, customer_id=order.customer_id, reason=GROUP_FAILED_REASON
        )
        if request.status == AfterSale.Status.REQUESTED:
            refunds.after_sale_approve(after_sale_id=request.pk, actor="system:group-failed")
    except ShopError as exc:  # another request of the customer is open: staff decide it first
        logger.warning("group refund of %s not requested: %s", order.order_no, exc.message)
        return False
    return Order.objects.filter(pk=order.pk, status__in=(OrderStatus.REFUNDING, OrderStatus.REFUNDED)).exists()


def groups_end_due(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Beat: end the forming groups past their deadline, then settle ended groups not settled
    yet (a crash between the two steps is finished here). Returns counts."""
    now = now or timezone.now()
    counts = {"failed": 0, "done": 0, "settled": 0}
    for group_id in group_buys.groups_due(now=now):
        outcome = group_end(group_id=group_id, actor="system:deadline", now=now)
        if outcome:
            counts[outcome] += 1
    for group_id in group_buys.groups_unsettled():
        if group_settle(group_id=group_id)["pending"] == 0:
            counts["settled"] += 1
    return counts

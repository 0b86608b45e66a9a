"""Moving a paid consultation to another slot of the same teacher (API and admin alike)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.appointments import bookings, slots
from apps.appointments.exceptions import SlotUnavailable
from apps.catalog.models import Kind
from apps.orders import events
from apps.orders.models import Order, OrderStatus
from starmall.errors import InvalidState, LimitExceeded, NotFound


@transaction.atomic
def order_reschedule(
    *,
    order_no: str,
    slot_id: int | None = None,
    actor: str,
    customer_id: int | None = None,
    now: dt.datetime | None = None,
    start: dt.datetime | None = None,
) -> Order:
    """Move the paid consultation ``order_no`` to ``start`` (one availability lists for its service,
    its own booking not counting) or the legacy slot ``slot_id`` (read as its start); returns the order.

    Rules (API.md): the old slot at least ``RESCHEDULE_MIN_NOTICE_HOURS`` away, at most
    ``RESCHEDULE_MAX`` moves (the booking's ``reschedules``). One transaction, the order row
    locked (a refund or a second move waits); the booking moves with ``slots.slot_move_start``
    (availability asked again, the database refusing an overlap). ``customer_id`` limits the
    search to the caller's orders (API); staff pass None. Raises NotFound, InvalidState (not
    paid, not a consultation, too late), LimitExceeded, SlotUnavailable.
    """
    now = now or timezone.now()
    lookup = {"customer_id": customer_id} if customer_id is not None else {}
    order = Order.objects.select_for_update().filter(order_no=order_no, **lookup).first()
    if order is None:
        raise NotFound("订单不存在。", order_no=order_no)
    if order.kind != Kind.CONSULTATION or order.status != OrderStatus.PAID or order.slot_id is None:
        raise InvalidState("只有已支付、尚未进行的咨询订单可以改约。", status=order.status)
    old = order.slot
    hours = settings.RESCHEDULE_MIN_NOTICE_HOURS
    if old.start - now < dt.timedelta(hours=hours):
        raise InvalidState(f"距离预约开始不足 {hours} 小时，不能改约。", hours=hours)
    if bookings.booking_reschedules(order_no=order.order_no) >= settings.RESCHEDULE_MAX:
        limit = settings.RESCHEDULE_MAX
        raise LimitExceeded(f"每个预约最多改约 {limit} 次。", reschedule_max=limit)
    if start is None:  # the legacy slot id: moved as its start is
        start = slots.slot_start_of(slot_id=slot_id, teacher_id=old.teacher_id)
        if slot_id == old.pk:
            raise SlotUnavailable("已经预约了这个时段，请选择其他时段。", slot_id=slot_id)
    new = slots.slot_move_start(order_no=order.order_no, start=start)
    # The order's slot changes under its status guard; the status log records the move.
    moved = Order.objects.filter(pk=order.pk, status=OrderStatus.PAID, slot_id=old.pk).update(slot_id=new.pk)
    if moved != 1:  # cannot happen under the row lock; refuse rather than leave a half move
        raise InvalidState("订单状态已变化，请刷新后重试。")
    events.order_rescheduled_event(order=order, from_slot=old, to_slot=new, actor=actor)
    order.refresh_from_db()
    return order  # reminders follow: beat's next sweep writes the new time's (apps.chat.reminders)

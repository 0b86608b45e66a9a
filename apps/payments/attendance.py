"""Attendance of a consultation (API.md "Booking"), at payments' level: ``teacher_absent``
refunds in full.

:func:`attendance_mark` sets a live booking's ``attendance`` once its start has passed, by a
conditional UPDATE (live, started, not ``teacher_absent``, its order still ``paid``): it may
change until the consultation completes; ``no_show`` keeps the money; ``teacher_absent`` asks
and approves the full refund at once as the shop (no staff limit) in the same transaction, and
is then final (the order is ``refunding``). The teacher's API, ``manage.py
consultation_attendance`` and the booking admin's actions all come here.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from apps.appointments.models import Attendance, Booking
from apps.orders import services as orders
from apps.orders.models import AfterSale, Order, OrderStatus
from apps.payments import refunds
from starmall.errors import InvalidInput, InvalidState, NotFound

PERMISSION = "appointments.mark_attendance"
MARKS = (Attendance.ATTENDED, Attendance.NO_SHOW, Attendance.TEACHER_ABSENT)
ABSENT_REASON = "老师缺席，全额退款"


def attendance_mark(
    *, order_no: str, attendance: str, actor: str, teacher_id: int | None = None, now: dt.datetime | None = None
) -> Booking:
    """Mark the order's booking ``attended``/``no_show``/``teacher_absent``; returns it.

    ``teacher_id``: the teacher asking (someone else's booking is NotFound). InvalidInput: an
    unknown mark; NotFound: no such booking; InvalidState: not started yet, the order not
    ``paid`` any more (completed, refunded) or the booking released or ``teacher_absent``.
    """
    if attendance not in MARKS:
        raise InvalidInput("到场状态不正确。", attendance=[f"可选：{', '.join(MARKS)}"])
    now = now or timezone.now()
    booking = Booking.objects.filter(order_no=order_no).first()
    if booking is None or (teacher_id is not None and booking.teacher_id != teacher_id):
        raise NotFound("预约不存在。", order_no=order_no)
    if now < booking.start:
        raise InvalidState("预约尚未开始，不能标记到场。", start=timezone.localtime(booking.start).isoformat())
    with transaction.atomic():
        order = orders.order_lock(order_id=Order.objects.values_list("pk", flat=True).get(order_no=order_no))
        marked = 0
        if order.status == OrderStatus.PAID:
            marked = (
                Booking.objects.filter(pk=booking.pk, live=True, start__lte=now)
                .exclude(attendance=Attendance.TEACHER_ABSENT)
                .update(attendance=attendance)
            )
        if marked != 1:
            raise InvalidState("该预约已不能标记到场。", status=order.status, attendance=booking.attendance)
        if attendance == Attendance.TEACHER_ABSENT:
            _refund_in_full(order, actor)
    booking.refresh_from_db()
    return booking


def _refund_in_full(order: Order, actor: str) -> None:
    """Ask and approve the refund of everything still refundable, as the shop."""
    if order.after_sales.filter(status__in=AfterSale.OPEN).exists():
        raise InvalidState("该订单已有处理中的退款申请。", order_no=order.order_no)
    payment = refunds.paying_payment(order)
    refundable = payment.total_fee - payment.refunded_fen if payment else 0
    if refundable <= 0:
        raise InvalidState("该订单没有可退的金额。", order_no=order.order_no)
    request = AfterSale.objects.create(
        order=order,
        refund_no=f"{order.order_no}R{order.after_sales.count() + 1}",
        reason=ABSENT_REASON,
        amount_fen=refundable,
    )
    if refunds.after_sale_approve(after_sale_id=request.pk, actor=f"system:teacher-absent:{actor}") is None:
        raise InvalidState("退款未能批准。", order_no=order.order_no)


def attendance_mark_by_staff(*, order_no: str, attendance: str, username: str) -> Booking:
    """``manage.py consultation_attendance`` and the booking admin: as :func:`attendance_mark`,
    by an active staff user with ``appointments.mark_attendance`` (else NotFound / InvalidState)."""
    user = get_user_model().objects.filter(username=username, is_active=True, is_staff=True).first()
    if user is None:
        raise NotFound("没有这个员工账号。", username=username)
    if not user.has_perm(PERMISSION):
        raise InvalidState("该员工没有标记到场的权限。", username=username)
    return attendance_mark(order_no=order_no, attendance=attendance, actor=f"staff:{username}")

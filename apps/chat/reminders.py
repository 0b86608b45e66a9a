"""Consultation reminders: subscription messages ``REMINDER_HOURS`` before each booking's start.

Beat runs :func:`reminders_schedule` every sweep: it writes the reminders that became due
(UNIQUE rows: a second scan writes nothing) and pushes every pending one to a worker, which
runs :func:`reminder_send`. Only paid consultations get reminders; a cancelled, refunded or
moved booking's pending rows are skipped when sent (the order's live booking no longer starts then).
Times come from the order's ``Booking`` (``apps.appointments``), never from the legacy slot grid.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_on_failure
from apps.appointments import selectors as booking_selectors
from apps.catalog.models import Kind
from apps.chat.models import ConsultationReminder
from apps.orders.models import Order, OrderStatus
from starmall import dispatch

logger = logging.getLogger(__name__)

Status = ConsultationReminder.Status


def reminders_schedule(*, now: dt.datetime | None = None) -> dict:
    """Write the reminders due at ``now`` and push the pending ones; returns counts.

    A paid consultation whose live booking starts within ``h`` hours is due for the ``h`` reminder; when
    several are due at once (a booking made 30 minutes before, or beat down for a day) only the
    nearest one is written — a "24 hours to go" message an hour before helps nobody.
    """
    now = now or timezone.now()
    hours = sorted(settings.REMINDER_HOURS)
    if not hours:
        return {"created": 0, "pushed": 0}
    starting = dict(booking_selectors.live_starting(after=now, until=now + dt.timedelta(hours=hours[-1])))
    paid = Order.objects.filter(kind=Kind.CONSULTATION, status=OrderStatus.PAID, order_no__in=list(starting))
    rows = []
    for order_id, order_no in paid.values_list("pk", "order_no"):
        start = starting[order_no]
        nearest = next(h for h in hours if start <= now + dt.timedelta(hours=h))
        rows.append(ConsultationReminder(order_id=order_id, hours=nearest, slot_start=start))
    with transaction.atomic():
        before = ConsultationReminder.objects.count()
        ConsultationReminder.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        created = ConsultationReminder.objects.count() - before
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    pending = list(ConsultationReminder.objects.filter(free, status=Status.PENDING).values_list("pk", flat=True)[:500])
    for pk in pending:
        _push(pk)
    return {"created": created, "pushed": len(pending)}


def _push(reminder_id: int) -> None:
    from apps.chat.tasks import consultation_reminder_send

    dispatch.push(consultation_reminder_send, reminder_id)


def reminder_send(*, reminder_id: int, now: dt.datetime | None = None) -> str:
    """Send one reminder; returns its status afterwards.

    Claimed first (pending and not leased -> leased for LEASE_SECONDS, attempts + 1), so two
    deliveries of the task cannot both send; a sent or skipped row is left alone. Skipped when
    the order is no longer paid or its live booking no longer starts at ``slot_start`` (moved).
    """
    now = now or timezone.now()
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    claimed = ConsultationReminder.objects.filter(free, pk=reminder_id, status=Status.PENDING).update(
        locked_until=now + dt.timedelta(seconds=ConsultationReminder.LEASE_SECONDS), attempts=F("attempts") + 1
    )
    reminder = ConsultationReminder.objects.select_related("order__customer").filter(pk=reminder_id).first()
    if reminder is None:
        return "missing"
    if claimed != 1:
        return reminder.status
    order = reminder.order
    booking = booking_selectors.booking_of(order.order_no)
    if order.status != OrderStatus.PAID or booking is None or booking.start != reminder.slot_start:
        _finish(reminder_id, Status.SKIPPED, f"order {order.status}, booking moved or gone")
        return Status.SKIPPED
    from apps.accounts import subscriptions

    try:
        outcome = _subscribe_send(reminder, booking)
    except Exception as exc:  # noqa: BLE001 - recorded; the next scan retries until MAX_ATTEMPTS
        return _send_failed(reminder, booking, exc)
    if outcome != subscriptions.SENT:  # switched off, or the customer refused it (43101): not retried
        _finish(reminder_id, Status.SKIPPED, f"subscription message {outcome}")
        return Status.SKIPPED
    ConsultationReminder.objects.filter(pk=reminder_id, status=Status.PENDING).update(
        status=Status.SENT, sent_at=timezone.now(), locked_until=None, last_error=""
    )
    return Status.SENT


def _subscribe_send(reminder: ConsultationReminder, booking) -> str:
    """Send the reminder's subscription message (``booking``: the order's live one) to the
    order's customer; returns the outcome of ``subscriptions.subscribe_send`` (raises whatever it raises)."""
    from apps.accounts import subscriptions

    order = reminder.order
    return subscriptions.subscribe_send(
        customer=order.customer,
        kind=subscriptions.Kind.CONSULTATION_REMINDER,
        page=f"pages/order/detail?order_no={order.order_no}",
        values={
            "teacher": booking.teacher.name[:20],
            "start": timezone.localtime(booking.start).strftime("%Y-%m-%d %H:%M"),
            "note": f"咨询将在{reminder.hours}小时内开始",
            "order_no": order.order_no,
        },
    )


def _send_failed(reminder: ConsultationReminder, booking, exc: Exception) -> str:
    """Record a failed send: back to PENDING (lease released) for the next scan, or FAILED with
    its one alert once ``MAX_ATTEMPTS`` are used. Returns the status written."""
    order, reminder_id = reminder.order, reminder.pk
    start = timezone.localtime(booking.start)
    failed, error = reminder.attempts >= ConsultationReminder.MAX_ATTEMPTS, f"{type(exc).__name__}: {exc}"
    alert_on_failure(  # FAILED and its one alert together
        lambda: _finish(reminder_id, Status.FAILED if failed else Status.PENDING, error),
        (
            lambda: dict(
                key=f"reminder:{reminder_id}:failed",
                kind=Alert.Kind.REMINDER_FAILED,
                title=f"订单 {order.order_no} 的咨询提醒发送失败",
                text=(
                    f"订单 {order.order_no}（{booking.teacher.name}，{start:%Y-%m-%d %H:%M}）的"
                    f"{reminder.hours}小时前咨询提醒尝试 {reminder.attempts} 次后仍发送失败："
                    f"{error}。请联系顾客确认咨询时间。"
                ),
            )
        )
        if failed
        else None,
    )
    if failed:
        logger.error("ALERT consultation reminder %s FAILED: %s", reminder_id, exc)
    return Status.FAILED if failed else Status.PENDING


def _finish(reminder_id: int, status: str, error: str) -> int:
    """Leave PENDING for ``status`` (or stay PENDING, lease released); the UPDATE's row count."""
    return ConsultationReminder.objects.filter(pk=reminder_id, status=Status.PENDING).update(
        status=status, last_error=error[:500], locked_until=None
    )

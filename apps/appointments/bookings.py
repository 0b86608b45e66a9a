"""Bookings of a teacher's time: create, release, move, confirm (in the caller's transaction).

Two live bookings of one teacher never overlap, buffers included: the stored range is
``[start, blocked_until)`` with ``blocked_until = end + buffer_minutes``, so two ranges that do
not overlap are ``buffer_minutes`` apart. Every write first takes the teacher's booking lock
(:func:`teacher_lock`: racing writers queue), checks, then inserts; on PostgreSQL the exclusion
constraint ``booking_no_overlap`` (migration 0009) refuses an overlapping live row whatever
gets past the check. Either way the loser gets SlotUnavailable and its transaction writes
nothing.
"""

from __future__ import annotations

import datetime as dt

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, Service, Slot, TeacherRules
from apps.catalog.models import Teacher


def teacher_rules(teacher_id: int) -> TeacherRules:
    """The teacher's rules row, or (none saved) an unsaved one with the defaults."""
    return TeacherRules.objects.filter(teacher_id=teacher_id).first() or TeacherRules(teacher_id=teacher_id)


def first_service(teacher_id: int) -> Service | None:
    """The teacher's first service (lowest ``sort``, then id), the legacy slots' one."""
    return Service.objects.filter(teacher_id=teacher_id).order_by("sort", "pk").first()


def live_q(now: dt.datetime) -> Q:
    """Live bookings: not released, and not an unpaid hold past its deadline."""
    return Q(live=True) & (Q(hold_until__isnull=True) | Q(hold_until__gt=now))


def live_between(*, teacher_id: int, lo: dt.datetime, hi: dt.datetime, now: dt.datetime | None = None) -> QuerySet:
    """The teacher's live bookings whose ``[start, blocked_until)`` meets ``[lo, hi)``."""
    return Booking.objects.filter(
        live_q(now or timezone.now()), teacher_id=teacher_id, start__lt=hi, blocked_until__gt=lo
    )


def teacher_lock(teacher_id: int) -> None:
    """Take the teacher's booking lock before the check, so racing writers queue instead of
    both passing it: on PostgreSQL the teacher's row FOR UPDATE (without it, concurrent inserts
    checking the exclusion constraint against each other's uncommitted rows deadlock; the
    constraint still refuses whatever gets past), on SQLite an UPDATE, which makes this
    transaction the database's writer (even when it matches no row)."""
    if connection.vendor == "postgresql":
        list(Teacher.objects.select_for_update().filter(pk=teacher_id).values_list("pk", flat=True))
    else:
        TeacherRules.objects.filter(teacher_id=teacher_id).update(version=F("version") + 1)


def _clear_range(*, teacher_id: int, start: dt.datetime, blocked_until: dt.datetime, exclude_pk=None) -> None:
    """Refuse (SlotUnavailable) when a booking still holding its time meets the range. An
    unpaid hold past its deadline keeps it until the unpaid timeout cancels its order (which
    asks WeChat first: a payment may still be on its way), so the database agrees."""
    meeting = Booking.objects.filter(teacher_id=teacher_id, live=True, start__lt=blocked_until, blocked_until__gt=start)
    if exclude_pk is not None:
        meeting = meeting.exclude(pk=exclude_pk)
    if meeting.exists():
        raise SlotUnavailable()


def _day_room(*, rules: TeacherRules, start: dt.datetime, exclude_pk=None) -> None:
    """Refuse (SlotUnavailable) when the teacher's ``daily_max`` live bookings of ``start``'s
    Shanghai date are already taken (counted as :func:`_clear_range` counts: a booking holding
    its time). Called under :func:`teacher_lock`, so racing writers count one after another."""
    if rules.daily_max is None:
        return
    day = timezone.localtime(start).date()
    tz = timezone.get_current_timezone()
    lo = dt.datetime.combine(day, dt.time.min, tzinfo=tz)
    taken = Booking.objects.filter(
        teacher_id=rules.teacher_id, live=True, start__gte=lo, start__lt=lo + dt.timedelta(days=1)
    )
    if exclude_pk is not None:
        taken = taken.exclude(pk=exclude_pk)
    if taken.count() >= rules.daily_max:
        raise SlotUnavailable("该老师当天的预约已满，请选择其他日期。", date=day.isoformat())


@transaction.atomic(savepoint=False)
def booking_create(
    *,
    teacher_id: int,
    product_id: int | None,
    start: dt.datetime,
    end: dt.datetime,
    order_no: str,
    customer_id: int,
    hold_until: dt.datetime | None = None,
    slot_id: int | None = None,
) -> Booking:
    """Book ``[start, end)`` of the teacher for ``order_no`` (unpaid: held until ``hold_until``).

    Raises SlotUnavailable when a live booking is within the teacher's ``buffer_minutes``
    (checked, and on PostgreSQL refused by the database under a race) or the date already has
    ``daily_max`` live bookings (checked under the teacher's lock). UNIQUE ``order_no``.
    """
    teacher_lock(teacher_id)
    rules = teacher_rules(teacher_id)
    blocked_until = end + dt.timedelta(minutes=rules.buffer_minutes)
    _clear_range(teacher_id=teacher_id, start=start, blocked_until=blocked_until)
    _day_room(rules=rules, start=start)
    try:
        with transaction.atomic():  # a savepoint: the exclusion constraint's refusal is an answer
            return Booking.objects.create(
                teacher_id=teacher_id,
                product_id=product_id,
                start=start,
                end=end,
                blocked_until=blocked_until,
                order_no=order_no,
                customer_id=customer_id,
                hold_until=hold_until,
                slot_id=slot_id,
            )
    except IntegrityError:
        raise SlotUnavailable() from None


def booking_release(*, order_no: str) -> Booking | None:
    """Free the order's booking (cancel, expiry, refund): one conditional UPDATE of ``live``.
    Returns the booking released now, None if it held none or was already released."""
    released = Booking.objects.filter(order_no=order_no, live=True).update(live=False, released_at=timezone.now())
    if released != 1:
        return None
    return Booking.objects.get(order_no=order_no)


def booking_attended_if_unmarked(*, order_no: str) -> int:
    """The consultation completed: an unmarked booking counts as ``attended`` (API.md).
    Returns rows changed (0: marked already, or no booking)."""
    return Booking.objects.filter(order_no=order_no, attendance="").update(attendance="attended")


def booking_reschedules(*, order_no: str) -> int:
    """How many times the order's booking has been moved (0 without one)."""
    return Booking.objects.filter(order_no=order_no).values_list("reschedules", flat=True).first() or 0


def booking_paid(*, order_no: str) -> int:
    """The order is paid: its booking is held for good (no deadline). Returns rows changed."""
    return Booking.objects.filter(order_no=order_no, live=True).update(hold_until=None)


@transaction.atomic(savepoint=False)
def booking_move(*, order_no: str, start: dt.datetime, end: dt.datetime, slot_id: int | None = None) -> Booking:
    """Move the order's live booking to ``[start, end)`` and count the reschedule.

    The same refusals as :func:`booking_create` (SlotUnavailable: overlap, ``daily_max``), the
    booking itself not counting; the UPDATE is conditional on the booking still live and on its
    old start.
    """
    booking = Booking.objects.filter(order_no=order_no, live=True).first()
    if booking is None:
        raise SlotUnavailable("该订单没有有效的预约。")
    teacher_lock(booking.teacher_id)
    rules = teacher_rules(booking.teacher_id)
    blocked_until = end + dt.timedelta(minutes=rules.buffer_minutes)
    _clear_range(teacher_id=booking.teacher_id, start=start, blocked_until=blocked_until, exclude_pk=booking.pk)
    _day_room(rules=rules, start=start, exclude_pk=booking.pk)
    try:
        with transaction.atomic():
            moved = Booking.objects.filter(pk=booking.pk, live=True, start=booking.start).update(
                start=start, end=end, blocked_until=blocked_until, slot_id=slot_id, reschedules=F("reschedules") + 1
            )
    except IntegrityError:
        raise SlotUnavailable() from None
    if moved != 1:
        raise SlotUnavailable("预约已变化，请刷新后重试。")
    return Booking.objects.get(pk=booking.pk)


def slot_for(*, teacher_id: int, start: dt.datetime, end: dt.datetime) -> Slot:
    """The legacy grid row at ``start`` (made if missing), so orders keep pointing at a slot."""
    slot, _ = Slot.objects.get_or_create(teacher_id=teacher_id, start=start, defaults={"end": end})
    return slot

"""Slot generation, booking and release.

Booking and release run inside the order's transaction, so an order never exists without the
slot it paid for and a rolled-back order never holds a slot.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.appointments import availability, bookings
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, DayOff, Slot
from apps.catalog.models import Teacher
from starmall.errors import InvalidInput, InvalidState, NotFound


def booking_closes_at(start: dt.datetime) -> dt.datetime:
    """The last moment a slot starting at ``start`` can be booked or paid: ``start`` minus
    ``BOOKING_MIN_NOTICE_MINUTES`` (API.md Additions)."""
    return start - dt.timedelta(minutes=settings.BOOKING_MIN_NOTICE_MINUTES)


def booking_open_after() -> dt.datetime:
    """Slots starting after this moment can still be booked (now + the minimum notice)."""
    return timezone.now() + dt.timedelta(minutes=settings.BOOKING_MIN_NOTICE_MINUTES)


def slot_start_of(*, slot_id: int, teacher_id: int | None) -> dt.datetime:
    """The start (aware) of the legacy slot ``slot_id`` of the teacher: the legacy ``slot_id``
    books and moves as this start does (availability decides, not the stored row's counts).
    Raises SlotUnavailable when the teacher has no such slot."""
    start = Slot.objects.filter(pk=slot_id, teacher_id=teacher_id).values_list("start", flat=True).first()
    if start is None:
        raise SlotUnavailable("该时段不属于此咨询服务。", slot_id=slot_id)
    return start


@transaction.atomic(savepoint=False)
def slot_book_start(
    *,
    product_id: int,
    start: dt.datetime,
    order_no: str,
    customer_id: int,
    hold_until: dt.datetime | None = None,
) -> Slot:
    """Book the consultation ``product_id`` at ``start`` for ``order_no``, in the caller's
    transaction; returns the legacy grid row of that start (made if missing), which the order
    points at. Availability is asked again (``availability.start_check``), then the Booking row
    is written (the database refuses an overlap under a race) and the grid row must be open
    (:func:`_grid_row_open`). SlotUnavailable when any of it refuses.
    """
    wanted = availability.start_check(product_id=product_id, start=start)  # a read; booking_create locks
    booking = bookings.booking_create(
        teacher_id=wanted["teacher_id"],
        product_id=product_id,
        start=start,
        end=wanted["end"],
        order_no=order_no,
        customer_id=customer_id,
        hold_until=hold_until,
    )
    slot = _grid_row_open(teacher_id=wanted["teacher_id"], start=start, end=wanted["end"])
    Booking.objects.filter(pk=booking.pk).update(slot_id=slot.pk)
    return Slot.objects.select_related("teacher").get(pk=slot.pk)


@transaction.atomic(savepoint=False)
def slot_move_start(*, order_no: str, start: dt.datetime) -> Slot:
    """Move the order's live booking to ``start`` (its own service, listed by availability with
    its own booking not counting), in the caller's transaction; returns the new grid row.
    The new grid row must be open (:func:`_grid_row_open`), then the booking moves
    (``bookings.booking_move``: refused on an overlap, ``reschedules + 1``).
    Raises SlotUnavailable, InvalidState (no live booking)."""
    booking = Booking.objects.filter(order_no=order_no, live=True).first()
    product_id = booking and (booking.product_id or _first_product(booking.teacher_id))
    if not product_id:
        raise InvalidState("该订单没有预约时段。", order_no=order_no)
    bookings.teacher_lock(booking.teacher_id)
    wanted = availability.start_check(product_id=product_id, start=start, moving=order_no)
    slot = _grid_row_open(teacher_id=booking.teacher_id, start=start, end=wanted["end"])
    bookings.booking_move(order_no=order_no, start=start, end=wanted["end"], slot_id=slot.pk)
    return Slot.objects.select_related("teacher").get(pk=slot.pk)


def _first_product(teacher_id: int) -> int | None:
    """The consultation of the teacher's first service (a booking made before bookings named theirs)."""
    teacher = Teacher.objects.select_related("product").filter(pk=teacher_id).first()
    services = availability.services_of(teacher) if teacher is not None else []
    return services[0].product_id if services else None


def _grid_row_open(*, teacher_id: int, start: dt.datetime, end: dt.datetime) -> Slot:
    """The legacy grid row at ``start`` (made if missing; ``end`` set to the service's), if staff
    have not closed it (``is_open``, ``capacity`` above 0): read under the teacher's booking lock,
    so a block racing the booking is seen. Raises SlotUnavailable. Its ``booked`` is not written:
    the bookings are the count (:func:`slot_live_bookings`)."""
    slot = bookings.slot_for(teacher_id=teacher_id, start=start, end=end)
    if Slot.objects.filter(pk=slot.pk, is_open=True, capacity__gt=0).update(end=end) != 1:
        raise SlotUnavailable(slot_id=slot.pk)
    return slot


@transaction.atomic(savepoint=False)
def slot_release(*, order_no: str) -> bool:
    """Give the order's place back; True if released now, False if it held none (or already did).

    Clearing the booking's ``live`` flag (``bookings.booking_release``, a conditional UPDATE) is
    the once-only guard; the bookings are the count, so nothing else changes.
    Joins the caller's transaction (cancel, refund) or opens one. Step 3 of ``starmall/locking.py``.
    """
    return bookings.booking_release(order_no=order_no) is not None


@dataclass(frozen=True)
class GenerateResult:
    created: int  # slots inserted
    removed: int  # past slots nobody booked, deleted


def slots_generate(*, now: dt.datetime | None = None, days: int | None = None) -> GenerateResult:
    """Make sure every active teacher has slots for the next ``days`` days (DESIGN.md flow 9).

    Slots start at ``settings.SLOT_HOURS`` o'clock Shanghai time (9, 11, 13, 15, 17, 19), last
    ``SLOT_LENGTH_MINUTES``; today's slots that already started are skipped. UNIQUE
    (teacher, start) with ``ignore_conflicts`` makes a rerun insert nothing. Past slots with
    no booking and no order pointing at them are removed.
    """
    now = timezone.localtime(now or timezone.now())
    days = days or settings.SLOT_DAYS_AHEAD
    tz = timezone.get_current_timezone()
    length = dt.timedelta(minutes=settings.SLOT_LENGTH_MINUTES)
    wanted = []
    # Teachers with weekly hours have their grid derived from availability (selectors.slot_list).
    teachers = list(
        Teacher.objects.filter(is_active=True).exclude(weekly_hours__isnull=False).values_list("pk", flat=True)
    )
    for offset in range(days):
        day = now.date() + dt.timedelta(days=offset)
        for hour in settings.SLOT_HOURS:
            start = dt.datetime(day.year, day.month, day.day, hour, tzinfo=tz)
            if start <= now:
                continue
            wanted.extend(Slot(teacher_id=t, start=start, end=start + length) for t in teachers)
    days_off = set(DayOff.objects.filter(date__gte=now.date()).values_list("teacher_id", "date"))
    for slot in wanted:
        if (slot.teacher_id, timezone.localtime(slot.start).date()) in days_off:
            slot.is_open = False  # the teacher's day off (day_block)
    with transaction.atomic():
        before = Slot.objects.count()
        Slot.objects.bulk_create(wanted, ignore_conflicts=True, batch_size=500)
        created = Slot.objects.count() - before
        removed, _ = Slot.objects.filter(start__lt=now, bookings__isnull=True, orders__isnull=True).delete()
    return GenerateResult(created=created, removed=removed)


def slot_live_bookings(slot: Slot) -> int:
    """Live bookings (``live``: holding their time, as the overlap check counts them) of the
    slot's teacher whose ``[start, end)`` meets the slot's: the customers' appointments in it."""
    return Booking.objects.filter(teacher_id=slot.teacher_id, live=True, start__lt=slot.end, end__gt=slot.start).count()


def with_live_bookings(slots_qs: QuerySet) -> QuerySet:
    """``slots_qs`` annotated with ``live_bookings`` (:func:`slot_live_bookings`), one query."""
    meeting = Booking.objects.filter(
        teacher_id=OuterRef("teacher_id"), live=True, start__lt=OuterRef("end"), end__gt=OuterRef("start")
    )
    counted = meeting.order_by().values("teacher_id").annotate(n=Count("pk")).values("n")
    return slots_qs.annotate(live_bookings=Coalesce(Subquery(counted), 0))


def slot_update(
    *,
    slot_id: int,
    capacity: int | None = None,
    is_open: bool | None = None,
    teacher_id: int | None = None,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
) -> Slot:
    """Staff change a slot (the admin's only way to write one); returns the slot as stored.

    Arguments left None are not touched. Under the teacher's booking lock (``bookings.teacher_lock``:
    a booking made while the page was open is counted, not overridden), the live bookings in the
    slot's time (:func:`slot_live_bookings`) refuse ``capacity`` below their number and any change
    of ``teacher_id``, ``start`` or ``end`` (aware, Shanghai wall time in the admin) — a booked
    time is the customer's appointment. ``is_open`` may always change (closing keeps bookings).
    Raises InvalidInput (end not after start, teacher already has a slot at that start) or
    InvalidState (booked; capacity below bookings) with a Chinese reason; nothing is written.
    """
    values = {name: value for name, value in (("capacity", capacity), ("is_open", is_open)) if value is not None}
    moves = {n: v for n, v in (("teacher_id", teacher_id), ("start", start), ("end", end)) if v is not None}
    current = Slot.objects.get(pk=slot_id)
    if (start or current.start) >= (end or current.end):
        raise InvalidInput(end=["结束时间必须晚于开始时间"])
    if not values and not moves:
        return current
    with transaction.atomic():  # savepoint: a refusal or UNIQUE (teacher, start) clash spoils nothing of the caller's
        bookings.teacher_lock(current.teacher_id)
        current = Slot.objects.get(pk=slot_id)
        booked = slot_live_bookings(current)
        if capacity is not None and booked > capacity:
            raise InvalidState(f"容量不能小于已预约人数（{booked}）", slot_id=slot_id, booked=booked)
        if booked and moves:
            raise InvalidState("该时段已有预约，不能修改老师或时间", slot_id=slot_id, booked=booked)
        try:
            with transaction.atomic():
                Slot.objects.filter(pk=slot_id).update(**values, **moves)
        except IntegrityError:
            raise InvalidInput(start=["该老师在这个开始时间已有时段"]) from None
    return Slot.objects.get(pk=slot_id)


# --- the teacher blocks time (admin) ---------------------------------------------------------


@transaction.atomic
def slot_block(*, slot_id: int, blocked: bool) -> Slot:
    """Close (``blocked``) or reopen a slot for bookings; returns the slot as stored.

    Blocking happens under the teacher's booking lock (``bookings.teacher_lock``, so a racing
    booking is either counted here or sees the slot closed) and only while no live booking meets
    the slot's time (:func:`slot_live_bookings`): a booked slot is the customer's appointment and
    is refused with InvalidState (the reason in Chinese) — move or refund the booking first.
    Reopening always succeeds (a day off of the slot's day is the teacher's to lift with
    :func:`day_block`). Raises NotFound for no such slot.
    """
    slot = Slot.objects.filter(pk=slot_id).first()
    if slot is None:
        raise NotFound("时段不存在。", slot_id=slot_id)
    if blocked:
        bookings.teacher_lock(slot.teacher_id)
        booked = slot_live_bookings(slot)
        if booked:
            raise InvalidState(
                f"该时段已有 {booked} 个预约，不能停约（请先改约或退款）", slot_id=slot_id, booked=booked
            )
        Slot.objects.filter(pk=slot_id).update(is_open=False)
    else:
        Slot.objects.filter(pk=slot_id).update(is_open=True)
    return Slot.objects.get(pk=slot_id)


@dataclass(frozen=True)
class DayBlockResult:
    changed: list[int]  # slots closed (or reopened)
    refused: list[tuple[int, str]]  # (slot id, reason): booked slots stay open


@transaction.atomic
def day_block(*, teacher_id: int, date: dt.date, blocked: bool) -> DayBlockResult:
    """Make ``date`` (Shanghai) a day off for the teacher, or a working day again.

    Blocking records the DayOff row (UNIQUE; a repeat is harmless), so slots generated later for
    that day are closed too, and closes the day's slots no live booking meets (as
    :func:`slot_block`, under the teacher's booking lock); booked slots are left open and listed in ``refused`` with
    the reason. Unblocking deletes the row and reopens the day's slots. One transaction.
    """
    tz = timezone.get_current_timezone()
    lo = dt.datetime.combine(date, dt.time.min, tzinfo=tz)
    day_slots = Slot.objects.filter(teacher_id=teacher_id, start__gte=lo, start__lt=lo + dt.timedelta(days=1))
    if not blocked:
        DayOff.objects.filter(teacher_id=teacher_id, date=date).delete()
        ids = list(day_slots.filter(is_open=False).values_list("pk", flat=True))
        Slot.objects.filter(pk__in=ids).update(is_open=True)
        return DayBlockResult(changed=ids, refused=[])
    DayOff.objects.get_or_create(teacher_id=teacher_id, date=date)
    changed, refused = [], []
    bookings.teacher_lock(teacher_id)  # a racing booking is counted or sees the slots closed
    starts = dict(day_slots.values_list("pk", "start"))
    for slot_id in sorted(starts):
        try:
            slot_block(slot_id=slot_id, blocked=True)
            changed.append(slot_id)
        except InvalidState as exc:
            refused.append((slot_id, exc.message))
    changed.sort(key=lambda pk: (starts[pk], pk))
    refused.sort(key=lambda item: (starts[item[0]], item[0]))
    return DayBlockResult(changed=changed, refused=refused)

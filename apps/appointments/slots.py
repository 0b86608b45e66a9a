"""Slot generation, booking and release.

Booking and release run inside the order's transaction, so an order never exists without the
slot it paid for and a rolled-back order never holds a slot.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
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


@transaction.atomic(savepoint=False)
def slot_book(
    *,
    slot_id: int,
    teacher_id: int,
    order_no: str,
    customer_id: int,
    start: dt.datetime | None = None,
    product_id: int | None = None,
    hold_until: dt.datetime | None = None,
) -> Slot:
    """Book one place of the slot for ``order_no``, in the caller's transaction (the order's).
    The slot is step 3 of the lock order (``starmall/locking.py``): after the order, before
    the coupon and the customer.

    ``UPDATE slot SET booked = booked + 1 WHERE id = ? AND booked < capacity AND is_open AND
    start > now + BOOKING_MIN_NOTICE_MINUTES AND teacher = ? [AND start = ?]``: 0 rows raises
    SlotUnavailable. ``start`` (the time the customer confirmed) refuses a slot moved since.
    The Booking row (``bookings.booking_create``: the slot's range, ``product_id``, held until
    ``hold_until``) refuses an overlap with another live booking of the teacher and, by its
    UNIQUE ``order_no``, a second booking for the same order.
    """
    bookings.teacher_lock(teacher_id)  # first: racing bookings of the teacher queue here
    same_time = {"start": start} if start is not None else {}
    updated = Slot.objects.filter(
        pk=slot_id,
        teacher_id=teacher_id,
        is_open=True,
        booked__lt=F("capacity"),
        start__gt=booking_open_after(),
        **same_time,
    ).update(booked=F("booked") + 1)
    if updated != 1:
        raise SlotUnavailable(slot_id=slot_id)
    slot = Slot.objects.get(pk=slot_id)
    bookings.booking_create(
        teacher_id=teacher_id,
        product_id=product_id,
        start=slot.start,
        end=slot.end,
        order_no=order_no,
        customer_id=customer_id,
        hold_until=hold_until,
        slot_id=slot_id,
    )
    return slot


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
    is written (the database refuses an overlap under a race) and the grid row takes the place
    (``booked + 1`` WHERE open and with room, ``end`` set to the service's). SlotUnavailable when
    any of it refuses.
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
    slot = bookings.slot_for(teacher_id=wanted["teacher_id"], start=start, end=wanted["end"])
    taken = Slot.objects.filter(pk=slot.pk, is_open=True, booked__lt=F("capacity")).update(
        booked=F("booked") + 1, end=wanted["end"]
    )
    if taken != 1:
        raise SlotUnavailable(slot_id=slot.pk)
    Booking.objects.filter(pk=booking.pk).update(slot_id=slot.pk)
    return Slot.objects.select_related("teacher").get(pk=slot.pk)


@transaction.atomic(savepoint=False)
def slot_move_start(*, order_no: str, start: dt.datetime) -> Slot:
    """Move the order's live booking to ``start`` (its own service, listed by availability with
    its own booking not counting), in the caller's transaction; returns the new grid row.
    The booking moves (``bookings.booking_move``: refused on an overlap, ``reschedules + 1``),
    the new grid row takes the place (open, with room) and the old one gives it back.
    Raises SlotUnavailable, InvalidState (no live booking)."""
    booking = Booking.objects.filter(order_no=order_no, live=True).first()
    if booking is None or booking.product_id is None:
        raise InvalidState("该订单没有预约时段。", order_no=order_no)
    bookings.teacher_lock(booking.teacher_id)
    wanted = availability.start_check(product_id=booking.product_id, start=start, moving=order_no)
    slot = bookings.slot_for(teacher_id=booking.teacher_id, start=start, end=wanted["end"])
    bookings.booking_move(order_no=order_no, start=start, end=wanted["end"], slot_id=slot.pk)
    taken = Slot.objects.filter(pk=slot.pk, is_open=True, booked__lt=F("capacity")).update(
        booked=F("booked") + 1, end=wanted["end"]
    )
    if taken != 1:
        raise SlotUnavailable(slot_id=slot.pk)
    if booking.slot_id is not None:
        Slot.objects.filter(pk=booking.slot_id, booked__gt=0).update(booked=F("booked") - 1)
    return Slot.objects.select_related("teacher").get(pk=slot.pk)


@transaction.atomic(savepoint=False)
def slot_release(*, order_no: str) -> bool:
    """Give the order's place back; True if released now, False if it held none (or already did).

    Clearing the booking's ``live`` flag (``bookings.booking_release``, a conditional UPDATE) is
    the once-only guard: only the caller that clears it decrements its legacy slot's ``booked``.
    Joins the caller's transaction (cancel, refund) or opens one. Step 3 of ``starmall/locking.py``.
    """
    booking = bookings.booking_release(order_no=order_no)
    if booking is None:
        return False
    if booking.slot_id is not None:
        Slot.objects.filter(pk=booking.slot_id, booked__gt=0).update(booked=F("booked") - 1)
    return True


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
        removed, _ = Slot.objects.filter(start__lt=now, booked=0, bookings__isnull=True, orders__isnull=True).delete()
    return GenerateResult(created=created, removed=removed)


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

    Arguments left None are not touched. One conditional UPDATE whose guard is repeated in its
    WHERE, so a booking made while the page was open is never overridden:
    ``capacity`` only if ``booked <= capacity``; ``teacher_id``, ``start`` and ``end`` (aware,
    Shanghai wall time in the admin) only while ``booked = 0`` — a booked slot's time is the
    customer's appointment. ``is_open`` may always change (closing keeps existing bookings).
    Raises InvalidInput (end not after start, teacher already has a slot at that start) or
    InvalidState (booked; capacity below bookings) with a Chinese reason; nothing is written.
    """
    values: dict = {}
    guards: dict = {}
    if capacity is not None:
        values["capacity"] = capacity
        guards["booked__lte"] = capacity
    if is_open is not None:
        values["is_open"] = is_open
    for name, value in (("teacher_id", teacher_id), ("start", start), ("end", end)):
        if value is not None:
            values[name] = value
            guards["booked"] = 0
    current = Slot.objects.get(pk=slot_id)
    if (start or current.start) >= (end or current.end):
        raise InvalidInput(end=["结束时间必须晚于开始时间"])
    if not values:
        return current
    try:
        with transaction.atomic():  # savepoint: a UNIQUE (teacher, start) clash must not spoil the caller's
            updated = Slot.objects.filter(pk=slot_id, **guards).update(**values)
    except IntegrityError:
        raise InvalidInput(start=["该老师在这个开始时间已有时段"]) from None
    if updated != 1:
        booked = Slot.objects.values_list("booked", flat=True).get(pk=slot_id)
        if capacity is not None and booked > capacity:
            raise InvalidState(f"容量不能小于已预约人数（{booked}）", slot_id=slot_id, booked=booked)
        raise InvalidState("该时段已有预约，不能修改老师或时间", slot_id=slot_id, booked=booked)
    return Slot.objects.get(pk=slot_id)


# --- the teacher blocks time (admin) ---------------------------------------------------------


def slot_block(*, slot_id: int, blocked: bool) -> Slot:
    """Close (``blocked``) or reopen a slot for bookings; returns the slot as stored.

    Blocking is one conditional UPDATE ``WHERE id = ? AND booked = 0``: a slot somebody booked
    is the customer's appointment and is refused with InvalidState (the reason in Chinese) —
    move or refund the booking first. Reopening always succeeds (a day off of the slot's day
    is the teacher's to lift with :func:`day_block`). Raises NotFound for no such slot.
    """
    if not Slot.objects.filter(pk=slot_id).exists():
        raise NotFound("时段不存在。", slot_id=slot_id)
    if blocked:
        if Slot.objects.filter(pk=slot_id, booked=0).update(is_open=False) != 1:
            booked = Slot.objects.values_list("booked", flat=True).get(pk=slot_id)
            raise InvalidState(
                f"该时段已有 {booked} 个预约，不能停约（请先改约或退款）", slot_id=slot_id, booked=booked
            )
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
    that day are closed too, and closes the day's slots that nobody booked (conditional UPDATE
    per slot, as :func:`slot_block`); booked slots are left open and listed in ``refused`` with
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
    # The day's slots are locked in id order, as slot_move locks two of them (step 3 of
    # starmall/locking.py); the answer lists them by start.
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


@transaction.atomic(savepoint=False)
def slot_move(*, order_no: str, to_slot_id: int, teacher_id: int) -> Slot:
    """Move the order's booking to ``to_slot_id`` (same teacher), in the caller's transaction.

    Both slot rows are locked first, in id order, so two movers going opposite ways cannot
    deadlock (step 3 of ``starmall/locking.py``: the Booking, then slots in id order, after
    the order row the caller locked). Then the new place is taken with the same capacity-checked conditional UPDATE as
    :func:`slot_book` (open, ``booked < capacity``, the teacher's, bookable: starts after now +
    BOOKING_MIN_NOTICE_MINUTES) — 0 rows raises SlotUnavailable and the caller rolls back —
    and the old place is given back (``booked - 1``); the Booking row follows
    (``bookings.booking_move``: refused when it would overlap another live booking). Racing movers
    for the last place: one UPDATE wins, the other sees 0 rows.
    """
    bookings.teacher_lock(teacher_id)  # first, as every booking write
    booking = Booking.objects.select_for_update().filter(order_no=order_no, live=True).first()
    if booking is None:
        raise InvalidState("该订单没有预约时段。", order_no=order_no)
    if booking.slot_id == to_slot_id:
        raise SlotUnavailable("已经预约了这个时段，请选择其他时段。", slot_id=to_slot_id)
    list(Slot.objects.select_for_update().filter(pk__in=[booking.slot_id, to_slot_id]).order_by("pk"))
    taken = Slot.objects.filter(
        pk=to_slot_id,
        teacher_id=teacher_id,
        is_open=True,
        booked__lt=F("capacity"),
        start__gt=booking_open_after(),
    ).update(booked=F("booked") + 1)
    if taken != 1:
        raise SlotUnavailable(slot_id=to_slot_id)
    Slot.objects.filter(pk=booking.slot_id, booked__gt=0).update(booked=F("booked") - 1)
    new = Slot.objects.select_related("teacher").get(pk=to_slot_id)
    bookings.booking_move(order_no=order_no, start=new.start, end=new.end, slot_id=new.pk)
    return new

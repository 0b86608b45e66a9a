"""Reads for bookings, the legacy slot list, the teacher card's services and hours."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet
from django.utils import timezone

from apps.almanac.selectors import good_dates
from apps.appointments import availability
from apps.appointments.bookings import live_q
from apps.appointments.models import Booking, DateOverride, Slot
from apps.catalog.models import Teacher


def day_bounds(start: dt.date, end: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """Shanghai midnight of ``start`` and of the day after ``end`` (aware datetimes)."""
    tz = timezone.get_current_timezone()
    lo = dt.datetime.combine(start, dt.time.min, tzinfo=tz)
    hi = dt.datetime.combine(end + dt.timedelta(days=1), dt.time.min, tzinfo=tz)
    return lo, hi


def slot_list(*, teacher_id: int, start: dt.date, end: dt.date, good_for: str | None = None) -> list[Slot]:
    """The legacy slot list from ``start`` to ``end`` (Shanghai dates, inclusive), derived from
    availability of the teacher's first service (API.md "Booking"): each listed start (free:
    ``booked`` 0) and each live booking's start (``booked`` 1, not available), ``capacity`` 1,
    by start. The rows carry the legacy ids only (made once per start, UNIQUE (teacher, start));
    their stored counts are not read.

    ``good_for``: an activity (everyday word or almanac term, e.g. 开业); only starts on days
    that are 宜 and not 忌 for it are kept (``apps.almanac.selectors.good_dates``). Raises
    the almanac's errors for an unknown activity or dates outside the loaded almanac.
    """
    good = good_dates(activity=good_for, start=start, end=end) if good_for else None
    teacher = Teacher.objects.select_related("product").filter(pk=teacher_id, is_active=True).first()
    services = availability.services_of(teacher) if teacher is not None else []
    if not services:  # an inactive teacher, or one who sells nothing: no slots
        return []
    length = dt.timedelta(minutes=services[0].duration_minutes)
    free = {s: s + length for s in available_starts(teacher=teacher, service=services[0], start=start, end=end)}
    lo, hi = day_bounds(start, end)
    taken = dict(
        Booking.objects.filter(live_q(timezone.now()), teacher_id=teacher_id, start__gte=lo, start__lt=hi).values_list(
            "start", "end"
        )
    )
    wanted = {s: e for s, e in (free | taken).items() if good is None or timezone.localtime(s).date() in good}
    Slot.objects.bulk_create(
        [Slot(teacher_id=teacher_id, start=s, end=e) for s, e in wanted.items()], ignore_conflicts=True
    )
    rows = list(Slot.objects.filter(teacher_id=teacher_id, start__in=list(wanted)).order_by("start"))
    for row in rows:  # as derived now, never as stored
        row.end, row.capacity, row.is_open = wanted[row.start], 1, True
        row.booked = 1 if row.start in taken else 0
    return rows


def available_starts(*, teacher, service, start: dt.date, end: dt.date, now: dt.datetime | None = None) -> list:
    """The bookable starts of ``service`` from ``start`` to ``end`` (any length: asked in
    ``availability.MAX_DAYS`` chunks), in order."""
    listed: list[dt.datetime] = []
    day = start
    while day <= end:
        last = min(end, day + dt.timedelta(days=availability.MAX_DAYS - 1))
        days = availability.availability(teacher=teacher, service=service, start=day, end=last, now=now)
        listed += [s for _, starts in days for s in starts]
        day = last + dt.timedelta(days=1)
    return listed


def slot_next_available(
    *, teacher_id: int, limit: int = 5, good_for: str | None = None, horizon_days: int = 31
) -> list[Slot]:
    """The next ``limit`` bookable legacy slots of the teacher (:func:`slot_list`: availability
    of the first service), optionally on days good for ``good_for``."""
    today = timezone.localdate()
    found = slot_list(
        teacher_id=teacher_id, start=today, end=today + dt.timedelta(days=horizon_days), good_for=good_for
    )
    return [s for s in found if s.available][:limit]


def teacher_services(teacher) -> list[dict]:
    """API.md ``services``: ``[{"product_id", "sku_id", "name", "duration_minutes", "price_fen"}]``,
    the first service first; ``sku_id``/``price_fen`` of the product's first active SKU (or None)."""
    rows = []
    for service in availability.services_of(teacher):
        sku = service.product.skus.filter(is_active=True).order_by("pk").first()
        rows.append(
            {
                "product_id": service.product_id,
                "sku_id": sku.pk if sku else None,
                "name": service.product.name,
                "duration_minutes": service.duration_minutes,
                "price_fen": sku.price_fen if sku else None,
            }
        )
    return rows


def teacher_hours(teacher, *, today: dt.date | None = None) -> dict:
    """API.md ``hours``: weekly windows by weekday ("1" = Monday .. "7"), the overrides of the
    next ``horizon_days`` days, and the rules."""
    rules = availability.rules_of(teacher.pk)
    today = today or timezone.localdate()
    overrides = DateOverride.objects.filter(
        teacher_id=teacher.pk, date__gte=today, date__lt=today + dt.timedelta(days=rules.horizon_days)
    ).order_by("date")
    weekly = availability.weekly_of(teacher.pk)
    return {
        "weekly": {str(day): [list(w) for w in weekly.get(day, [])] for day in range(1, 8)},
        "overrides": [
            {"date": o.date.isoformat(), "off": o.off, "hours": [] if o.off else [list(w) for w in o.windows]}
            for o in overrides
        ],
        "buffer_minutes": rules.buffer_minutes,
        "min_notice_minutes": rules.min_notice_minutes,
        "horizon_days": rules.horizon_days,
        "step_minutes": rules.step_minutes,
        "daily_max": rules.daily_max,
    }


def booking_of(order_no: str, *, live: bool = True) -> Booking | None:
    """The order's booking with its teacher (``live``: only while it holds its time), or None."""
    qs = Booking.objects.select_related("teacher").filter(order_no=order_no)
    return (qs.filter(live=True) if live else qs).first()


def bookings_of(order_nos) -> dict[str, Booking]:
    """``order_no -> booking`` (with its teacher) for those of ``order_nos`` that booked; one query."""
    return {b.order_no: b for b in Booking.objects.select_related("teacher").filter(order_no__in=list(order_nos))}


def live_starting(*, after: dt.datetime, until: dt.datetime) -> list[tuple[str, dt.datetime]]:
    """``(order_no, start)`` of live bookings starting in ``(after, until]``, by start."""
    return list(
        Booking.objects.filter(live=True, start__gt=after, start__lte=until)
        .order_by("start", "pk")
        .values_list("order_no", "start")
    )


def ended_order_nos(*, now: dt.datetime) -> QuerySet:
    """A subquery (``order_no`` values) of live bookings whose ``end`` is at or before ``now``."""
    return Booking.objects.filter(live=True, end__lte=now).values("order_no")


def slot_json(row) -> dict:
    """The legacy ``slot`` object of drafts and orders from a slot or a booking (``teacher``
    selected): ``{"id", "teacher_id", "teacher_name", "start", "end"}`` (ISO 8601, +08:00);
    ``id`` the legacy slot id (None for a booking without one)."""
    return {
        "id": row.slot_id if isinstance(row, Booking) else row.pk,
        "teacher_id": row.teacher_id,
        "teacher_name": row.teacher.name,
        "start": timezone.localtime(row.start).isoformat(),
        "end": timezone.localtime(row.end).isoformat(),
    }


def booking_json(*, order_no: str, booking: Booking | None = None) -> dict | None:
    """API.md: an order's ``"booking": {"teacher_id", "product_id", "start", "end", "attendance",
    "reschedules"}`` (times ISO 8601, +08:00), or None when the order booked nothing.
    ``booking``: the order's, already read."""
    booking = booking or Booking.objects.filter(order_no=order_no).first()
    if booking is None:
        return None
    return {
        "teacher_id": booking.teacher_id,
        "product_id": booking.product_id,
        "start": timezone.localtime(booking.start).isoformat(),
        "end": timezone.localtime(booking.end).isoformat(),
        "attendance": booking.attendance,
        "reschedules": booking.reschedules,
    }

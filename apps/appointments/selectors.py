"""Reads for slots."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from apps.almanac.selectors import good_dates
from apps.appointments.models import Slot


def day_bounds(start: dt.date, end: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """Shanghai midnight of ``start`` and of the day after ``end`` (aware datetimes)."""
    tz = timezone.get_current_timezone()
    lo = dt.datetime.combine(start, dt.time.min, tzinfo=tz)
    hi = dt.datetime.combine(end + dt.timedelta(days=1), dt.time.min, tzinfo=tz)
    return lo, hi


def slot_list(*, teacher_id: int, start: dt.date, end: dt.date, good_for: str | None = None) -> list[Slot]:
    """The teacher's slots from ``start`` to ``end`` (dates in Shanghai time, inclusive).

    ``good_for``: an activity (everyday word or almanac term, e.g. 开业); only slots on days
    that are 宜 and not 忌 for it are kept (``apps.almanac.selectors.good_dates``). Raises
    the almanac's errors for an unknown activity or dates outside the loaded almanac.
    """
    lo, hi = day_bounds(start, end)
    slots = list(Slot.objects.filter(teacher_id=teacher_id, start__gte=lo, start__lt=hi).order_by("start"))
    if good_for:
        good = good_dates(activity=good_for, start=start, end=end)
        slots = [s for s in slots if timezone.localtime(s.start).date() in good]
    return slots


def slot_next_available(
    *, teacher_id: int, limit: int = 5, good_for: str | None = None, horizon_days: int = 31
) -> list[Slot]:
    """The next ``limit`` bookable slots of the teacher, optionally on days good for ``good_for``."""
    now = timezone.now() + dt.timedelta(minutes=settings.BOOKING_MIN_NOTICE_MINUTES)  # booking closes then
    qs = Slot.objects.filter(teacher_id=teacher_id, is_open=True, booked__lt=F("capacity"), start__gt=now).order_by(
        "start"
    )
    if not good_for:
        return list(qs[:limit])
    today = timezone.localdate()
    good = good_dates(activity=good_for, start=today, end=today + dt.timedelta(days=horizon_days))
    _, hi = day_bounds(today, today + dt.timedelta(days=horizon_days))
    return [s for s in qs.filter(start__lt=hi) if timezone.localtime(s.start).date() in good][:limit]

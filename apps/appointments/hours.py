"""Staff set a teacher's weekly hours and date overrides (``manage.py teacher_hours``).

Bookings already made are never touched: a change that leaves live bookings outside the new
hours is written, and those bookings are returned so the caller can name them.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from apps.appointments.availability import parse_windows, weekly_of
from apps.appointments.bookings import live_q
from apps.appointments.models import Booking, DateOverride, WeeklyHours
from apps.catalog.models import Teacher
from starmall.errors import InvalidInput, NotFound


def windows_parse(text: str) -> list[list[str]]:
    """``"09:00-12:00,14:00-18:00"`` -> ``[["09:00", "12:00"], ["14:00", "18:00"]]``; sorted,
    not overlapping. Raises InvalidInput."""
    try:
        raw = [part.strip().split("-") for part in text.split(",") if part.strip()]
        windows = parse_windows([[lo, hi] for lo, hi in raw])
    except ValueError:
        raise InvalidInput("时段格式应为 09:00-12:00,14:00-18:00。", hours=[text]) from None
    for (_, end), (start, _) in zip(windows, windows[1:], strict=False):
        if end is None or end > start:
            raise InvalidInput("时段不能重叠。", hours=[text])
    return [[lo.strftime("%H:%M"), "24:00" if hi is None else hi.strftime("%H:%M")] for lo, hi in windows]


def _outside(teacher_id: int, dates: set[dt.date] | None, weekday: int | None, windows: list | None) -> list[Booking]:
    """The teacher's live future bookings on those dates (or that weekday, not overridden) that
    do not fit inside ``windows`` (None: the day is off)."""
    now = timezone.now()
    overridden = set(DateOverride.objects.filter(teacher_id=teacher_id).values_list("date", flat=True))
    fits = parse_windows(windows or [])
    outside = []
    for booking in Booking.objects.filter(live_q(now), teacher_id=teacher_id, start__gte=now).order_by("start"):
        start, end = timezone.localtime(booking.start), timezone.localtime(booking.end)
        day = start.date()
        if (dates is not None and day not in dates) or (
            weekday is not None and (day.isoweekday() != weekday or day in overridden)
        ):
            continue
        inside = any(lo <= start.time() and (hi is None or end.time() <= hi) and end.date() == day for lo, hi in fits)
        if not inside:
            outside.append(booking)
    return outside


@transaction.atomic
def hours_set(
    *,
    teacher_id: int,
    weekday: int | None = None,
    date: dt.date | None = None,
    hours: str | None = None,
    off: bool = False,
    clear: bool = False,
) -> list[Booking]:
    """Set the weekday's windows (``weekday`` 1..7 with ``hours``), or a date's override
    (``hours``, ``off``, or ``clear`` to drop it); returns live bookings now outside the hours
    (kept as they are). Raises NotFound, InvalidInput."""
    if not Teacher.objects.filter(pk=teacher_id).exists():
        raise NotFound("老师不存在。", teacher_id=teacher_id)
    windows = windows_parse(hours) if hours is not None else None
    if weekday is not None:
        if not 1 <= weekday <= 7 or windows is None or date is not None:
            raise InvalidInput("--weekday 1..7 须与 --hours 一起使用。", weekday=[str(weekday)])
        WeeklyHours.objects.update_or_create(teacher_id=teacher_id, weekday=weekday, defaults={"windows": windows})
        return _outside(teacher_id, None, weekday, windows)
    if date is None or [windows is not None, off, clear].count(True) != 1:
        raise InvalidInput("--date 须与 --hours、--off 或 --clear 之一一起使用。", date=[str(date)])
    if clear:
        DateOverride.objects.filter(teacher_id=teacher_id, date=date).delete()
        return _outside(teacher_id, {date}, None, weekly_of(teacher_id).get(date.isoweekday(), []))
    DateOverride.objects.update_or_create(
        teacher_id=teacher_id, date=date, defaults={"off": off, "windows": [] if off else windows}
    )
    return _outside(teacher_id, {date}, None, None if off else windows)

"""Setting a teacher's hours: weekly windows and date overrides (off, other windows, cleared).

The one path the back office's calendar, the inline on the teacher page and the
``teacher_hours`` command share. Windows are ``[["09:00", "12:00"], ["14:00", "18:00"]]``
(Beijing time, ``"24:00"`` ends at midnight): each start before its end, sorted, not
overlapping; anything else raises InvalidInput and writes nothing. Bookings already made are
kept: each setter returns the live bookings of the changed day(s) that now fall outside the
hours, so the caller can name them.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from apps.appointments.availability import parse_windows, weekly_of, windows_text
from apps.appointments.bookings import live_q
from apps.appointments.models import Booking, DateOverride, WeeklyHours
from apps.appointments.selectors import day_bounds
from apps.catalog.models import Teacher
from starmall.errors import InvalidInput, NotFound


def windows_clean(windows) -> list[list[str]]:
    """Validated, sorted windows (``"HH:MM"`` pairs; :func:`availability.parse_windows`).
    Raises InvalidInput."""
    return windows_text(parse_windows(windows))


def windows_parse(text: str) -> list[list[str]]:
    """``"09:00-12:00,14:00-18:00"`` -> validated windows (empty text: none). Raises InvalidInput."""
    parts = [p.strip() for p in (text or "").replace("，", ",").split(",") if p.strip()]
    pairs = []
    for part in parts:
        begin, sep, end = part.partition("-")
        if not sep:
            raise InvalidInput(f"时段格式应为 09:00-12:00：{part}")
        pairs.append([begin.strip(), end.strip()])
    return windows_clean(pairs)


def _outside(teacher_id: int, date: dt.date, windows: list[list[str]]) -> list[Booking]:
    """The date's live bookings not inside one of ``windows``."""
    lo, hi = day_bounds(date, date)
    found = Booking.objects.filter(live_q(timezone.now()), teacher_id=teacher_id, start__gte=lo, start__lt=hi)
    spans = parse_windows(windows)
    kept = []
    for booking in found.order_by("start"):
        start, end = timezone.localtime(booking.start), timezone.localtime(booking.end)
        begin = start.hour * 60 + start.minute
        finish = begin + int((end - start).total_seconds() // 60)
        if not any(b <= begin and finish <= e for b, e in spans):
            kept.append(booking)
    return kept


@transaction.atomic
def weekly_hours_set(*, teacher_id: int, weekday: int, windows) -> list[Booking]:
    """The teacher's windows on ``weekday`` (1 = Monday .. 7); [] = not working that day.
    Returns the live bookings of the next 60 days on that weekday now outside the hours."""
    if weekday not in range(1, 8):
        raise InvalidInput("星期应为 1..7。")
    clean = windows_clean(windows)
    WeeklyHours.objects.update_or_create(teacher_id=teacher_id, weekday=weekday, defaults={"windows": clean})
    today = timezone.localdate()
    days = [today + dt.timedelta(days=i) for i in range(60)]
    overridden = set(DateOverride.objects.filter(teacher_id=teacher_id, date__in=days).values_list("date", flat=True))
    return [
        b
        for day in days
        if day.isoweekday() == weekday and day not in overridden
        for b in _outside(teacher_id, day, clean)
    ]


@transaction.atomic
def override_set(*, teacher_id: int, date: dt.date, off: bool = False, windows=()) -> list[Booking]:
    """``date``'s hours instead of the weekly ones: ``off`` or ``windows``. Returns the live
    bookings of that date now outside the hours (kept). A date before today (Shanghai): InvalidInput."""
    _not_past(date)
    clean = [] if off else windows_clean(list(windows))
    if not off and not clean:
        raise InvalidInput("请给出时段，或设为休息。")
    DateOverride.objects.update_or_create(teacher_id=teacher_id, date=date, defaults={"off": off, "windows": clean})
    return _outside(teacher_id, date, clean)


@transaction.atomic
def override_clear(*, teacher_id: int, date: dt.date) -> list[Booking]:
    """``date`` back to the weekly hours. Returns the live bookings outside them (kept).
    A date before today (Shanghai): InvalidInput."""
    _not_past(date)
    DateOverride.objects.filter(teacher_id=teacher_id, date=date).delete()
    return _outside(teacher_id, date, weekly_of(teacher_id).get(date.isoweekday(), []))


def _not_past(date: dt.date) -> None:
    """A past day's hours are history (its bookings happened under them): InvalidInput."""
    if date < timezone.localdate():
        raise InvalidInput("不能修改已经过去的日期。", date=[date.isoformat()])


def hours_set(
    *,
    teacher_id: int,
    weekday: int | None = None,
    date: dt.date | None = None,
    hours: str | None = None,
    off: bool = False,
    clear: bool = False,
) -> list[Booking]:
    """``manage.py teacher_hours``: ``weekday`` (1..7) with ``hours`` (``"09:00-12:00,14:00-18:00"``),
    or ``date`` with exactly one of ``hours``, ``off``, ``clear``. Returns the live bookings now
    outside the hours (kept). Raises NotFound (no such teacher), InvalidInput."""
    if not Teacher.objects.filter(pk=teacher_id).exists():
        raise NotFound("老师不存在。", teacher_id=teacher_id)
    if weekday is not None:
        if hours is None or date is not None or off or clear:
            raise InvalidInput("--weekday 1..7 须与 --hours 一起使用。", weekday=[str(weekday)])
        return weekly_hours_set(teacher_id=teacher_id, weekday=weekday, windows=windows_parse(hours))
    if date is None or [hours is not None, off, clear].count(True) != 1:
        raise InvalidInput("--date 须与 --hours、--off 或 --clear 之一一起使用。", date=[str(date)])
    if clear:
        return override_clear(teacher_id=teacher_id, date=date)
    if off:
        return override_set(teacher_id=teacher_id, date=date, off=True)
    return override_set(teacher_id=teacher_id, date=date, windows=windows_parse(hours))

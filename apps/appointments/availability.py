"""When a teacher can be booked: computed from hours, overrides, rules and live bookings.

:func:`day_starts` is the pure rule (API.md "Booking"); :func:`availability` reads what it
needs and applies it to each date of a range. Nothing here writes; free time is never stored.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from apps.appointments.bookings import live_q, teacher_rules
from apps.appointments.models import Booking, DateOverride, Service, Slot, WeeklyHours
from apps.catalog.models import Teacher
from starmall.errors import InvalidInput, NotFound

Window = tuple[dt.time, dt.time | None]  # None end: midnight at the end of the day ("24:00")
MAX_DAYS = 31


@dataclass(frozen=True)
class Rules:
    buffer_minutes: int = 0
    min_notice_minutes: int = 0
    horizon_days: int = 30
    step_minutes: int = 30
    daily_max: int | None = None


def parse_windows(raw: list) -> list[Window]:
    """``[["09:00", "12:00"], ...]`` -> times; "24:00" ends at midnight. Raises ValueError."""
    windows = []
    for start, end in raw:
        lo = dt.time.fromisoformat(start)
        hi = None if end == "24:00" else dt.time.fromisoformat(end)
        if hi is not None and hi <= lo:
            raise ValueError(f"{start}-{end}")
        windows.append((lo, hi))
    return sorted(windows, key=lambda w: w[0])


def day_starts(
    *,
    date: dt.date,
    windows: list[Window],
    duration_minutes: int,
    rules: Rules,
    busy: list[tuple[dt.datetime, dt.datetime]],
    live_that_day: int,
    now: dt.datetime,
) -> list[dt.datetime]:
    """The bookable starts of ``date`` (aware, Shanghai), in order.

    A start is on the ``step_minutes`` grid from its window's start, the whole service fits in
    that window, it is at least ``min_notice_minutes`` after ``now`` and at most
    ``horizon_days`` days after it, the day has fewer than ``daily_max`` live bookings, and
    ``[start, end + buffer_minutes)`` meets no ``busy`` range (a live booking's
    ``[start, blocked_until)``), so the buffer is kept on both sides of every booking.
    """
    if rules.daily_max is not None and live_that_day >= rules.daily_max:
        return []
    tz = timezone.get_current_timezone()
    duration = dt.timedelta(minutes=duration_minutes)
    buffer = dt.timedelta(minutes=rules.buffer_minutes)
    step = dt.timedelta(minutes=rules.step_minutes)
    earliest = now + dt.timedelta(minutes=rules.min_notice_minutes)
    latest = now + dt.timedelta(days=rules.horizon_days)
    starts = []
    for lo, hi in windows:
        start = dt.datetime.combine(date, lo, tzinfo=tz)
        close = dt.datetime.combine(date + dt.timedelta(days=1) if hi is None else date, hi or dt.time.min, tzinfo=tz)
        while start + duration <= close and start <= latest:
            end = start + duration + buffer
            if start >= earliest and not any(b_start < end and start < b_end for b_start, b_end in busy):
                starts.append(start)
            start += step
    return starts


def rules_of(teacher_id: int) -> Rules:
    r = teacher_rules(teacher_id)
    return Rules(r.buffer_minutes, r.min_notice_minutes, r.horizon_days, r.step_minutes, r.daily_max)


def default_weekly() -> dict[int, list]:
    """A teacher with no weekly hours set works the legacy grid: one-hour windows at
    ``SLOT_HOURS`` o'clock every day."""
    grid = [[f"{h:02d}:00", f"{h + 1:02d}:00" if h < 23 else "24:00"] for h in settings.SLOT_HOURS]
    return {weekday: grid for weekday in range(1, 8)}


def weekly_of(teacher_id: int) -> dict[int, list]:
    """Weekday (1 = Monday) -> windows as stored (``[["09:00", "12:00"], ...]``)."""
    rows = dict(WeeklyHours.objects.filter(teacher_id=teacher_id).values_list("weekday", "windows"))
    if not rows:
        return default_weekly()
    return {weekday: rows.get(weekday, []) for weekday in range(1, 8)}


def services_of(teacher: Teacher) -> list[Service]:
    """The teacher's services, first first; a teacher with a product but no service row sells
    it as one service of ``SLOT_LENGTH_MINUTES`` (unsaved)."""
    services = list(Service.objects.filter(teacher_id=teacher.pk).select_related("product").order_by("sort", "pk"))
    if not services and teacher.product_id:
        services = [Service(teacher=teacher, product=teacher.product, duration_minutes=settings.SLOT_LENGTH_MINUTES)]
    return services


def service_for(*, teacher: Teacher, product_id: int | None) -> Service:
    """The teacher's service of ``product_id`` (None: the first). Raises InvalidInput."""
    services = services_of(teacher)
    if product_id is None and services:
        return services[0]
    for service in services:
        if service.product_id == product_id:
            return service
    raise InvalidInput("该老师没有这个咨询服务。", product_id=["不是该老师的咨询服务"])


def availability(
    *, teacher: Teacher, service: Service, start: dt.date, end: dt.date, now: dt.datetime | None = None
) -> list[tuple[dt.date, list[dt.datetime]]]:
    """Every date from ``start`` to ``end`` (inclusive, Shanghai) with its bookable starts of
    ``service`` (:func:`day_starts`). Raises InvalidInput for a reversed or too long range."""
    if end < start:
        raise InvalidInput("结束日期不能早于开始日期。", to=["不能早于 from"])
    if (end - start).days + 1 > MAX_DAYS:
        raise InvalidInput(f"最多查询 {MAX_DAYS} 天。", to=[f"最多 {MAX_DAYS} 天"])
    now = now or timezone.now()
    tz = timezone.get_current_timezone()
    lo = dt.datetime.combine(start, dt.time.min, tzinfo=tz)
    hi = dt.datetime.combine(end + dt.timedelta(days=2), dt.time.min, tzinfo=tz)
    rules = rules_of(teacher.pk)
    buffer = dt.timedelta(minutes=rules.buffer_minutes)
    weekly = weekly_of(teacher.pk)
    overrides = {o.date: o for o in DateOverride.objects.filter(teacher_id=teacher.pk, date__gte=start, date__lte=end)}
    live = list(
        Booking.objects.filter(
            live_q(now), teacher_id=teacher.pk, start__lt=hi, blocked_until__gt=lo - dt.timedelta(days=1)
        ).values_list("start", "end", "blocked_until")
    )
    # The buffer after a booking as stored, or the teacher's current one if that is longer.
    live = [(s, max(until, end + buffer)) for s, end, until in live]
    closed = set(
        Slot.objects.filter(teacher_id=teacher.pk, is_open=False, start__gte=lo, start__lt=hi).values_list(
            "start", flat=True
        )
    )
    days = []
    for offset in range((end - start).days + 1):
        date = start + dt.timedelta(days=offset)
        override = overrides.get(date)
        raw = ([] if override.off else override.windows) if override else weekly.get(date.isoweekday(), [])
        starts = day_starts(
            date=date,
            windows=parse_windows(raw),
            duration_minutes=service.duration_minutes,
            rules=rules,
            busy=live,
            live_that_day=sum(1 for s, _ in live if timezone.localtime(s).date() == date),
            now=now,
        )
        days.append((date, [s for s in starts if s not in closed]))  # staff closed that legacy slot
    return days


def is_available(*, teacher: Teacher, service: Service, start: dt.datetime, now: dt.datetime | None = None) -> bool:
    """Whether ``start`` is listed by :func:`availability` for ``service`` right now."""
    date = timezone.localtime(start).date()
    listed = availability(teacher=teacher, service=service, start=date, end=date, now=now)[0][1]
    return start in listed


def teacher_or_404(teacher_id: int) -> Teacher:
    teacher = Teacher.objects.select_related("product").filter(pk=teacher_id, is_active=True).first()
    if teacher is None:
        raise NotFound("老师不存在。", teacher_id=teacher_id)
    return teacher

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
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, DateOverride, Service, Slot, WeeklyHours
from apps.catalog.models import Teacher
from starmall.errors import InvalidInput, NotFound

Window = tuple[int, int]  # minutes of the day, [begin, end); 1440 = midnight at its end ("24:00")
MAX_DAYS = 31


@dataclass(frozen=True)
class Rules:
    buffer_minutes: int = 0
    min_notice_minutes: int = 0
    horizon_days: int = 30
    step_minutes: int = 30
    daily_max: int | None = None


def _minute_of(text) -> int:
    hours, _, minutes = str(text).partition(":")
    if not (hours.isdigit() and minutes.isdigit() and len(minutes) == 2):
        raise InvalidInput(f"时间格式应为 HH:MM：{text}")
    value = int(hours) * 60 + int(minutes)
    if int(minutes) > 59 or value > 24 * 60:
        raise InvalidInput(f"时间不存在：{text}")
    return value


def parse_windows(raw) -> list[Window]:
    """``[["09:00", "12:00"], ...]`` -> sorted ``(begin, end)`` minutes of the day ("24:00" is
    1440, midnight at the day's end). The one reading of windows, stored or typed: each time
    ``HH:MM``, each begin before its end, none overlapping; else InvalidInput (Chinese message)."""
    if not isinstance(raw, list | tuple):
        raise InvalidInput("时段应为 [[开始, 结束], ...]。")
    pairs = []
    for window in raw:
        if not isinstance(window, list | tuple) or len(window) != 2:
            raise InvalidInput("每个时段应为 [开始, 结束]。")
        begin, end = _minute_of(window[0]), _minute_of(window[1])
        if begin >= end:
            raise InvalidInput(f"时段开始应早于结束：{window[0]}-{window[1]}")
        pairs.append((begin, end))
    pairs.sort()
    if any(a[1] > b[0] for a, b in zip(pairs, pairs[1:])):
        raise InvalidInput("时段不能重叠。")
    return pairs


def windows_text(windows: list[Window]) -> list[list[str]]:
    """``(begin, end)`` minutes -> ``[["09:00", "12:00"], ...]`` as stored and shown."""
    return [[f"{b // 60:02d}:{b % 60:02d}", f"{e // 60:02d}:{e % 60:02d}"] for b, e in windows]


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
    midnight = dt.datetime.combine(date, dt.time.min, tzinfo=tz)
    starts = []
    for lo, hi in windows:
        start, close = midnight + dt.timedelta(minutes=lo), midnight + dt.timedelta(minutes=hi)
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
    return weekly_of_many([teacher_id])[teacher_id]


def weekly_of_many(teacher_ids: list[int]) -> dict[int, dict[int, list]]:
    """:func:`weekly_of` of each teacher in one query: ``{teacher_id: {weekday: windows}}``."""
    stored: dict[int, dict[int, list]] = {pk: {} for pk in teacher_ids}
    rows = WeeklyHours.objects.filter(teacher_id__in=teacher_ids).values_list("teacher_id", "weekday", "windows")
    for teacher_id, weekday, windows in rows:
        stored[teacher_id][weekday] = windows
    return {
        pk: {weekday: rows.get(weekday, []) for weekday in range(1, 8)} if rows else default_weekly()
        for pk, rows in stored.items()
    }


def windows_by_date(*, teacher_id: int, start: dt.date, end: dt.date) -> dict[dt.date, list[Window]]:
    """Each date from ``start`` to ``end`` (inclusive) -> the teacher's windows that day: the
    date's override (off: none) or else the weekly ones (:func:`weekly_of`). Two queries."""
    return windows_by_date_many(teacher_ids=[teacher_id], start=start, end=end)[teacher_id]


def windows_by_date_many(
    *, teacher_ids: list[int], start: dt.date, end: dt.date
) -> dict[int, dict[dt.date, list[Window]]]:
    """:func:`windows_by_date` of each teacher, ``{teacher_id: {date: windows}}``: two queries
    whatever the number of teachers."""
    weekly = {
        pk: {day: parse_windows(raw) for day, raw in days.items()} for pk, days in weekly_of_many(teacher_ids).items()
    }
    found: dict[int, dict[dt.date, list[Window]]] = {pk: {} for pk in teacher_ids}
    for o in DateOverride.objects.filter(teacher_id__in=teacher_ids, date__gte=start, date__lte=end):
        found[o.teacher_id][o.date] = [] if o.off else parse_windows(o.windows)
    dates = [start + dt.timedelta(days=i) for i in range(max((end - start).days + 1, 0))]
    return {
        pk: {date: found[pk][date] if date in found[pk] else weekly[pk].get(date.isoweekday(), []) for date in dates}
        for pk in teacher_ids
    }


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
    *,
    teacher: Teacher,
    service: Service,
    start: dt.date,
    end: dt.date,
    now: dt.datetime | None = None,
    moving: str | None = None,
) -> list[tuple[dt.date, list[dt.datetime]]]:
    """Every date from ``start`` to ``end`` (inclusive, Shanghai) with its bookable starts of
    ``service`` (:func:`day_starts`); ``moving``: an order_no whose own booking does not count
    (a reschedule). Raises InvalidInput for a reversed or too long range."""
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
    windows = windows_by_date(teacher_id=teacher.pk, start=start, end=end)
    live = list(
        Booking.objects.exclude(order_no=moving or "")
        .filter(live_q(now), teacher_id=teacher.pk, start__lt=hi, blocked_until__gt=lo - dt.timedelta(days=1))
        .values_list("start", "end", "blocked_until")
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
        starts = day_starts(
            date=date,
            windows=windows[date],
            duration_minutes=service.duration_minutes,
            rules=rules,
            busy=live,
            live_that_day=sum(1 for s, _ in live if timezone.localtime(s).date() == date),
            now=now,
        )
        days.append((date, [s for s in starts if s not in closed]))  # staff closed that legacy slot
    return days


def is_available(
    *, teacher: Teacher, service: Service, start: dt.datetime, now: dt.datetime | None = None, moving: str | None = None
) -> bool:
    """Whether ``start`` is listed by :func:`availability` for ``service`` right now."""
    date = timezone.localtime(start).date()
    listed = availability(teacher=teacher, service=service, start=date, end=date, now=now, moving=moving)[0][1]
    return start in listed


def teacher_or_404(teacher_id: int) -> Teacher:
    teacher = Teacher.objects.select_related("product").filter(pk=teacher_id, is_active=True).first()
    if teacher is None:
        raise NotFound("老师不存在。", teacher_id=teacher_id)
    return teacher


def has_hours(teacher_id: int) -> bool:
    """Whether the teacher's weekly hours are set (else the legacy grid's default hours)."""
    return WeeklyHours.objects.filter(teacher_id=teacher_id).exists()


def teacher_of_product(product_id: int) -> Teacher | None:
    """The teacher whose service ``product_id`` is (a Service row, else ``Teacher.product``)."""
    service = Service.objects.select_related("teacher").filter(product_id=product_id).first()
    if service is not None:
        return service.teacher
    return Teacher.objects.filter(product_id=product_id).first()


def start_check(
    *, product_id: int, start: dt.datetime, now: dt.datetime | None = None, moving: str | None = None
) -> dict:
    """``start`` of the consultation ``product_id``, if availability lists it right now:
    ``{"teacher_id", "teacher_name", "product_id", "start", "end"}`` (aware datetimes).
    Raises SlotUnavailable (not listed, saying so when within the teacher's minimum notice; or
    not a teacher's service)."""
    teacher = teacher_of_product(product_id)
    if teacher is None or not teacher.is_active:
        raise SlotUnavailable("该咨询服务暂时不能预约。")
    service = service_for(teacher=teacher, product_id=product_id)
    if not is_available(teacher=teacher, service=service, start=start, now=now, moving=moving):
        at = timezone.localtime(start).isoformat()
        notice = rules_of(teacher.pk).min_notice_minutes
        if start < (now or timezone.now()) + dt.timedelta(minutes=notice):
            raise SlotUnavailable(f"该时段已截止预约（需提前 {notice} 分钟预约）。", start=at)
        raise SlotUnavailable("这个时间已不能预约，请选择其他时间。", start=at)
    end = start + dt.timedelta(minutes=service.duration_minutes)
    return {
        "teacher_id": teacher.pk,
        "teacher_name": teacher.name,
        "product_id": product_id,
        "start": start,
        "end": end,
    }

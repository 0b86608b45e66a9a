"""Reads for slots."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from apps.almanac.selectors import good_dates
from apps.appointments import availability
from apps.appointments.models import DateOverride, Slot


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

"""The teacher week's hours and bookings: working time shaded (weekly hours, date overrides),
live bookings placed by time with their attendance, and the day form that sets an override
(off / other windows / back to weekly) through ``apps.appointments.hours``, the service the
``teacher_hours`` command uses. Setting needs ``appointments.manage_slot``; a teacher's staff
login sets only their own days."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from apps.appointments import hours
from apps.appointments.availability import parse_windows
from apps.appointments.models import Booking, DateOverride, WeeklyHours
from apps.backoffice.dates import DateRefused, parse_day
from apps.backoffice.selectors import SHANGHAI
from apps.catalog.models import Teacher
from apps.catalog.selectors import teacher_for_user
from starmall.errors import ShopError

MANAGE = "appointments.manage_slot"
STEP = 30  # minutes per row


def day_windows(teacher: Teacher, days: list[dt.date]) -> dict[dt.date, dict]:
    """Per date: ``{"windows": [[..]], "override": "off"/"windows"/""}`` (override first)."""
    weekly = {w.weekday: w.windows or [] for w in WeeklyHours.objects.filter(teacher=teacher)}
    overrides = {o.date: o for o in DateOverride.objects.filter(teacher=teacher, date__in=days)}
    found = {}
    for day in days:
        o = overrides.get(day)
        if o is None:
            found[day] = {"windows": weekly.get(day.isoweekday(), []), "override": ""}
        else:
            found[day] = {"windows": [] if o.off else o.windows or [], "override": "off" if o.off else "windows"}
    return found


def hours_grid(teacher: Teacher | None, days: list[dt.date]) -> dict:
    """``{"heads": [{date, windows_text, override}], "rows": [{time, cells: [{working, booking, first}]}]}``:
    30-minute rows covering the week's hours and bookings (Beijing time)."""
    if teacher is None:
        return {"heads": [], "rows": []}
    windows = day_windows(teacher, days)
    lo = dt.datetime.combine(days[0], dt.time.min, tzinfo=SHANGHAI)
    placed: dict[dt.date, list[tuple[int, int, Booking]]] = {d: [] for d in days}
    for b in Booking.objects.filter(teacher=teacher, live=True, start__gte=lo, start__lt=lo + dt.timedelta(days=7)):
        start = timezone.localtime(b.start, SHANGHAI)
        begin = start.hour * 60 + start.minute
        placed[start.date()].append((begin, begin + int((b.end - b.start).total_seconds() // 60), b))
    spans = {day: parse_windows(w["windows"]) for day, w in windows.items()}
    edges = [m for pairs in spans.values() for pair in pairs for m in pair]
    edges += [m for items in placed.values() for begin, end, _ in items for m in (begin, end)]
    first = min(edges, default=8 * 60) // STEP * STEP
    last = max(edges, default=20 * 60)
    rows = []
    for minute in range(first, last, STEP):
        cells = []
        for day in days:
            working = any(b <= minute < e for b, e in spans[day])
            hit = next(((begin, b) for begin, end, b in placed[day] if begin <= minute < end), None)
            cells.append(
                {
                    "date": day,
                    "working": working,
                    "booking": _booking(hit[1]) if hit else None,
                    "first": bool(hit) and minute <= hit[0] < minute + STEP,
                }
            )
        rows.append({"time": f"{minute // 60:02d}:{minute % 60:02d}", "cells": cells})
    heads = [
        {"date": d, "override": windows[d]["override"], "text": ",".join("-".join(w) for w in windows[d]["windows"])}
        for d in days
    ]
    return {"heads": heads, "rows": rows}


def _booking(b: Booking) -> dict:
    start, end = timezone.localtime(b.start, SHANGHAI), timezone.localtime(b.end, SHANGHAI)
    return {
        "order_no": b.order_no,
        "time": f"{start:%H:%M}-{end:%H:%M}",
        "attendance": b.attendance or "unmarked",
        "attendance_label": b.get_attendance_display(),
        "url": reverse("admin:appointments_booking_change", args=[b.pk]),
    }


def day_hours_post(request, site):
    """POST ``teacher``, ``date``, ``action`` (off / windows / clear), ``hours``
    ("09:00-12:00,14:00-18:00"): sets the date's override, then back to the week."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not request.user.has_perm(MANAGE):
        raise PermissionDenied(f"需要权限 {MANAGE}")
    own = teacher_for_user(request.user)
    asked = request.POST.get("teacher", "")
    if own is not None and asked != str(own.pk):
        raise PermissionDenied("老师只能设置自己的时间")
    teacher = own or Teacher.objects.filter(pk=int(asked) if asked.isdigit() else 0).first()
    week = reverse("admin:backoffice_week")
    try:
        date = parse_day(request.POST.get("date"), None)
        if teacher is None or date is None:
            raise DateRefused("请选择老师和日期。")
        kept = _apply(teacher, date, request.POST.get("action"), request.POST.get("hours", ""))
    except (DateRefused, ShopError) as exc:
        messages.error(request, f"未设置：{getattr(exc, 'message', exc)}")
        return HttpResponseRedirect(f"{week}?teacher={asked}")
    messages.success(request, f"{date:%Y-%m-%d} 已设置。")
    for b in kept:
        messages.warning(request, f"已有预约保留：{b.order_no} {timezone.localtime(b.start):%H:%M}")
    monday = date - dt.timedelta(days=date.weekday())
    return HttpResponseRedirect(f"{week}?teacher={teacher.pk}&start={monday:%Y-%m-%d}")


def _apply(teacher: Teacher, date: dt.date, action: str | None, text: str) -> list[Booking]:
    if action == "off":
        return hours.override_set(teacher_id=teacher.pk, date=date, off=True)
    if action == "windows":
        return hours.override_set(teacher_id=teacher.pk, date=date, windows=hours.windows_parse(text))
    if action == "clear":
        return hours.override_clear(teacher_id=teacher.pk, date=date)
    raise DateRefused("未知操作。")

"""Calendars: a teacher's week of slots (free / full = booked / blocked), their hours and
bookings by time (``views_hours``), and the almanac month
(lunar dates, solar terms, 宜/忌). Read-only pages; each slot links to its admin page, which lists
its bookings. Permissions: ``appointments.view_slot`` / ``almanac.view_almanacday``."""

from __future__ import annotations

import calendar
import datetime as dt

from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from apps.almanac.models import AlmanacDay
from apps.appointments import selectors as slot_selectors
from apps.appointments.models import Slot
from apps.backoffice.dates import DateRefused, parse_day, refusal_page
from apps.backoffice.selectors import SHANGHAI
from apps.backoffice.views_hours import hours_grid
from apps.catalog.models import Teacher
from apps.catalog.selectors import teacher_for_user


def week_grid(teacher: Teacher | None, start: dt.date) -> dict[str, dict[dt.date, dict]]:
    """``"HH:MM" -> date -> {"state", "booked", "capacity", "url"}`` for seven days from ``start``:
    the legacy slots as derived (``selectors.slot_list``: a live booking's start is "full", a start
    availability lists is "free") and the starts staff closed ("blocked", ``Slot.is_open``)."""
    if teacher is None:
        return {}
    lo = dt.datetime.combine(start, dt.time.min, tzinfo=SHANGHAI)
    derived = slot_selectors.slot_list(teacher_id=teacher.pk, start=start, end=start + dt.timedelta(days=6))
    closed = Slot.objects.filter(teacher=teacher, is_open=False, start__gte=lo, start__lt=lo + dt.timedelta(days=7))
    cells = [(s, "full" if s.booked else "free") for s in derived] + [(s, "blocked") for s in closed]
    grid: dict[str, dict[dt.date, dict]] = {}
    for slot, state in sorted(cells, key=lambda cell: cell[0].start):
        local = timezone.localtime(slot.start, SHANGHAI)
        grid.setdefault(local.strftime("%H:%M"), {}).setdefault(
            local.date(),
            {
                "state": state,
                "booked": slot.booked if state != "blocked" else 0,
                "capacity": 1,
                "url": reverse("admin:appointments_slot_change", args=[slot.pk]),
            },
        )
    return grid


def week_view(request, site):
    """``?teacher=<id>&start=YYYY-MM-DD``: seven Beijing-time days from ``start`` (default: this Monday);
    a staff user linked to a teacher sees only that teacher (another's id: 403);
    a ``start`` that is not a date of the shop's calendar is a 400 page (``apps.backoffice.dates``)."""
    if not request.user.has_perm("appointments.view_slot"):
        raise PermissionDenied("需要权限 appointments.view_slot")
    own = teacher_for_user(request.user)  # a teacher's login: their own week only
    teachers = [own] if own is not None else list(Teacher.objects.order_by("id"))
    asked = request.GET.get("teacher")
    if own is not None and asked not in (None, "", str(own.pk)):
        raise PermissionDenied("老师只能查看自己的周历")
    teacher = next((t for t in teachers if str(t.pk) == asked), teachers[0] if teachers else None)
    today = timezone.localdate()
    try:  # a date outside the shop's calendar (9999-12-31 overflowed the week's end) or garbage: 400
        start = parse_day(request.GET.get("start"), today - dt.timedelta(days=today.weekday()))
    except DateRefused as exc:
        return refusal_page(request, site, str(exc), back_url=request.path)
    days = [start + dt.timedelta(days=i) for i in range(7)]
    labels = [f"{d:%m-%d} 周{'一二三四五六日'[d.weekday()]}" for d in days]
    grid = week_grid(teacher, start)
    rows = [{"time": time, "cells": [grid[time].get(day) for day in days]} for time in sorted(grid)]
    context = {
        **site.each_context(request),
        "title": f"老师周历 · {teacher.name if teacher else '-'}",
        "teachers": teachers,
        "teacher": teacher,
        "days": days,
        "heads": list(zip(days, labels)),
        "rows": rows,
        "hours": hours_grid(teacher, days),
        "can_set_hours": request.user.has_perm("appointments.manage_slot"),
        "today": today,
        "prev": start - dt.timedelta(days=7),
        "next": start + dt.timedelta(days=7),
    }
    return TemplateResponse(request, "admin/backoffice/week.html", context)


def almanac_month(request, site):
    """``?month=YYYY-MM``: the almanac as a month calendar (Monday first); a month outside the
    shop's calendar, or not ``YYYY-MM``, is a 400 page."""
    if not request.user.has_perm("almanac.view_almanacday"):
        raise PermissionDenied("需要权限 almanac.view_almanacday")
    today = timezone.localdate()
    month = request.GET.get("month")
    try:  # as week_view: 9999-12 overflowed the next month's link, 0001-01 the previous one
        first = parse_day(f"{month}-01" if month else None, today.replace(day=1))
    except DateRefused as exc:
        return refusal_page(request, site, str(exc), back_url=request.path)
    weeks_dates = calendar.Calendar(firstweekday=0).monthdatescalendar(first.year, first.month)
    found = {d.date: d for d in AlmanacDay.objects.filter(date__gte=weeks_dates[0][0], date__lte=weeks_dates[-1][-1])}
    weeks = [
        [{"date": d, "in_month": d.month == first.month, "day": found.get(d)} for d in week] for week in weeks_dates
    ]
    prev_month = (first - dt.timedelta(days=1)).replace(day=1)
    next_month = (first + dt.timedelta(days=32)).replace(day=1)
    context = {
        **site.each_context(request),
        "title": f"黄历 · {first:%Y年%m月}",
        "weeks": weeks,
        "today": today,
        "prev": prev_month.strftime("%Y-%m"),
        "next": next_month.strftime("%Y-%m"),
    }
    return TemplateResponse(request, "admin/backoffice/almanac_month.html", context)

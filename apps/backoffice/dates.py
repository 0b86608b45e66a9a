"""Dates typed into the back office: the export range, the calendars and the admin's date filters.

Only days of the shop's calendar are taken: :data:`FIRST_DATE` .. :data:`LAST_DATE`, the
almanac's range (``apps.almanac.compute``, 1901-01-01 .. 2100-12-31). Python's dates stop at
9999-12-31 and 0001-01-01, so a range "to 9999-12-31" (one day added for the end bound) or
"from 0001-01-01" (turned into UTC for the query) raised OverflowError — a 500 — in the export,
the teacher week, the almanac month and every change list with a date filter or
``date_hierarchy``. Out-of-range and unreadable dates now get a Chinese form error (the export
form) or a 400 page saying so (:func:`refusal_page`).
"""

from __future__ import annotations

import datetime as dt

from django.contrib.admin.utils import NotRelationField, get_fields_from_path
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.template.response import TemplateResponse

from apps.almanac.compute import FIRST_DATE, LAST_DATE

OUT_OF_RANGE = f"日期须在 {FIRST_DATE:%Y-%m-%d} 至 {LAST_DATE:%Y-%m-%d} 之间。"
UNREADABLE = "日期格式应为 YYYY-MM-DD。"


class DateRefused(ValueError):
    """A date the back office does not take; ``str()`` is the Chinese reason."""


def in_range(day: dt.date) -> bool:
    """True for a date (or datetime: its date) from FIRST_DATE to LAST_DATE, both included."""
    if isinstance(day, dt.datetime):
        day = day.date()
    return FIRST_DATE <= day <= LAST_DATE


def validate_in_range(day: dt.date | None) -> None:
    """Form-field validator: ValidationError(:data:`OUT_OF_RANGE`) for a date outside the range."""
    if day is not None and not in_range(day):
        raise ValidationError(OUT_OF_RANGE, code="date_out_of_range")


def parse_day(value: str | None, default: dt.date) -> dt.date:
    """``YYYY-MM-DD`` (a query parameter) -> date; ``default`` when missing or empty. Raises
    DateRefused for text that is not a date or a date outside the range."""
    if not value:
        return default
    try:
        day = dt.date.fromisoformat(value)
    except ValueError as exc:
        raise DateRefused(UNREADABLE) from exc
    if not in_range(day):
        raise DateRefused(OUT_OF_RANGE)
    return day


def refusal_page(request, site, message: str, *, back_url: str) -> TemplateResponse:
    """The 400 page of a back-office view given a date it does not take: the reason and a
    link back (``back_url``), in the admin's frame."""
    context = {**site.each_context(request), "title": "日期无效", "message": message, "back_url": back_url}
    return TemplateResponse(request, "admin/backoffice/bad_date.html", context, status=400)


_NOT_DATES = {"isnull", "month", "day", "week", "week_day", "iso_week_day", "quarter", "hour", "minute", "second"}


def filter_refusal(model: type[models.Model], params) -> str | None:
    """The reason to refuse a change list's query string (``request.GET``), or None.

    Every parameter that filters a date or datetime field of ``model`` (directly or across
    relations: ``created_at__gte``, ``order__paid_at__date``, ``date_hierarchy``'s
    ``created_at__year``) must name dates in the range; values Django cannot read as dates are
    left to Django (it answers them with its own "incorrect lookup" page).
    """
    for key, values in params.lists():
        found = _date_field(model, key)
        if found is None:
            continue
        field, lookup = found
        if lookup in _NOT_DATES:
            continue
        for value in values:
            if lookup in ("year", "iso_year"):
                if value.strip().lstrip("-").isdigit() and not FIRST_DATE.year <= int(value) <= LAST_DATE.year:
                    return OUT_OF_RANGE
                continue
            for piece in value.split(",") if lookup in ("range", "in") else [value]:
                try:
                    day = field.to_python(piece.strip())
                except ValidationError:
                    continue
                if isinstance(day, dt.date) and not in_range(day):
                    return OUT_OF_RANGE
    return None


def _date_field(model, key: str) -> tuple[models.DateField, str] | None:
    """``(field, lookup)`` when ``key`` filters a DateField / DateTimeField of ``model``."""
    parts = key.split("__")
    for cut in range(len(parts), 0, -1):
        try:
            fields = get_fields_from_path(model, "__".join(parts[:cut]))
        except (FieldDoesNotExist, NotRelationField):
            continue
        field = fields[-1]
        if isinstance(field, models.DateField):  # DateTimeField is one too
            return field, parts[cut] if cut < len(parts) else "exact"
        return None
    return None


class DateFilterBoundsMixin:
    """For every ModelAdmin (given by ``apps.backoffice.site``): a change list whose date
    filters name a date outside the range is a 400 page (:func:`filter_refusal`), not a 500."""

    def changelist_view(self, request, extra_context=None):
        message = filter_refusal(self.model, request.GET)
        if message:
            return refusal_page(request, self.admin_site, message, back_url=request.path)
        return super().changelist_view(request, extra_context)

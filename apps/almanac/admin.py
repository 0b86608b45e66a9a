"""Back office: the almanac is read-only (rows come from ``load_almanac`` only)."""

from __future__ import annotations

import datetime as dt

from django.contrib import admin

from apps.almanac.models import AlmanacDay, AlmanacRange
from starmall.admin import ReadOnlyModelAdmin


@admin.register(AlmanacDay)
class AlmanacDayAdmin(ReadOnlyModelAdmin):
    list_display = [
        "date",
        "lunar_text",
        "year_ganzhi",
        "month_ganzhi",
        "day_ganzhi",
        "zodiac",
        "solar_term",
        "solar_term_at",
        "jianchu",
        "zhishen",
        "source_version",
    ]
    list_filter = ["solar_term", "zodiac", "is_leap", "zhishen_type", "jianchu"]
    search_fields = ["lunar_text", "day_ganzhi"]
    date_hierarchy = "date"
    show_full_result_count = False  # 73,000 rows: skip the extra COUNT(*)

    def get_search_results(self, request, queryset, search_term):
        """A date (2024-02-09), month (2024-02) or year (2024) searches by date; else by text."""
        term = search_term.strip()
        for fmt, span in (("%Y-%m-%d", "day"), ("%Y-%m", "month"), ("%Y", "year")):
            try:
                first = dt.datetime.strptime(term, fmt).date()
            except ValueError:
                continue
            if span == "day":
                return queryset.filter(date=first), False
            if span == "month":
                return queryset.filter(date__year=first.year, date__month=first.month), False
            return queryset.filter(date__year=first.year), False
        return super().get_search_results(request, queryset, search_term)


@admin.register(AlmanacRange)
class AlmanacRangeAdmin(ReadOnlyModelAdmin):
    list_display = ["start", "end", "source", "source_version", "sect", "loaded_at"]

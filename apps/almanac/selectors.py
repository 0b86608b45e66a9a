"""Reads of the almanac: day, month, loaded ranges, and search by activity.

Search and the booking filter (:func:`good_dates`) share one rule and one query (:func:`good_days`):
resolve the word through the synonym table (``synonyms.resolve``), then keep the dates where at
least one term is 宜 and none is 忌 (``synonyms.RULE``), reading only the ``AlmanacActivity`` index
inside the database (no day is scanned in Python). Dates are civil dates in China (Beijing); "today"
is ``timezone.localdate()`` (Asia/Shanghai). Every read of dates first checks they are loaded, else
raises ``DateOutOfRange`` (404, naming the loaded ranges): "nothing good" is never "no data".
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, QuerySet

from apps.almanac import synonyms
from apps.almanac.exceptions import DateOutOfRange
from apps.almanac.models import AlmanacActivity, AlmanacDay, AlmanacRange

YI = AlmanacActivity.Kind.YI
JI = AlmanacActivity.Kind.JI


def resolve_activity(word: str) -> list[str]:
    """The almanac terms for an everyday word or a term: 搬家 -> ["移徙", "入宅"], 移徙 -> ["移徙"].

    Raises UnknownActivity (400 ``invalid``; ``detail.suggestions`` lists close known words and
    terms) or ActivityNeverAuspicious (400 ``invalid``; a term only ever listed under 忌).
    """
    return synonyms.resolve(word)


def loaded_ranges() -> list[tuple[dt.date, dt.date]]:
    """The loaded dates as sorted, merged ``(start, end)`` runs (inclusive), any version."""
    merged: list[tuple[dt.date, dt.date]] = []
    for start, end in AlmanacRange.objects.order_by("start").values_list("start", "end"):
        if merged and start <= merged[-1][1] + dt.timedelta(days=1):
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def ensure_loaded(start: dt.date, end: dt.date) -> None:
    """Raise DateOutOfRange (404) unless every date from ``start`` to ``end`` is loaded."""
    ranges = loaded_ranges()
    if not any(a <= start and end <= b for a, b in ranges):
        raise DateOutOfRange(start, end, ranges)


def day_get(date: dt.date) -> AlmanacDay:
    """The almanac day of ``date``; DateOutOfRange (404) if it is not loaded."""
    day = AlmanacDay.objects.filter(pk=date).first()
    if day is None:
        raise DateOutOfRange(date, date, loaded_ranges())
    return day


def month_days(*, year: int, month: int) -> list[AlmanacDay]:
    """All days of a Gregorian month, in order; DateOutOfRange (404) unless all are loaded."""
    start = dt.date(year, month, 1)
    end = dt.date(year, month, calendar.monthrange(year, month)[1])
    ensure_loaded(start, end)
    return list(AlmanacDay.objects.filter(date__range=(start, end)).order_by("date"))


def good_days(*, terms: list[str], start: dt.date, end: dt.date) -> QuerySet[AlmanacDay]:
    """Days from ``start`` to ``end`` (inclusive) where some term is 宜 and none is 忌, by date; the
    caller checks the range is loaded (:func:`ensure_loaded`). One SQL statement over the index::

        SELECT ... FROM almanacday WHERE date IN (
            SELECT a.date FROM almanacactivity a
            WHERE a.term IN (terms) AND a.kind = 'yi' AND a.date BETWEEN start AND end
              AND NOT EXISTS (SELECT 1 FROM almanacactivity j
                              WHERE j.date = a.date AND j.kind = 'ji' AND j.term IN (terms)))
        ORDER BY date
    """
    ji = AlmanacActivity.objects.filter(day_id=OuterRef("day_id"), kind=JI, term__in=terms)
    dates = (
        AlmanacActivity.objects.filter(term__in=terms, kind=YI, day__gte=start, day__lte=end)
        .filter(~Exists(ji))
        .values("day_id")
    )
    return AlmanacDay.objects.filter(date__in=dates).order_by("date")


def good_dates(*, activity: str, start: dt.date, end: dt.date) -> set[dt.date]:
    """The dates from ``start`` to ``end`` (inclusive, Beijing civil dates) good for ``activity``.

    ``activity`` is an everyday word (开业, 搬家) or an almanac term (开市); the rule is the
    search's: at least one of its terms 宜 and none 忌 (``synonyms.RULE``). An empty range
    (``end < start``) gives an empty set. Raises UnknownActivity / ActivityNeverAuspicious
    (400 ``invalid``) and DateOutOfRange (404) when any date of the range is not loaded.
    This is the function the slot list and the product detail call (item 5).
    """
    terms = resolve_activity(activity)
    if end < start:
        return set()
    ensure_loaded(start, end)
    return set(good_days(terms=terms, start=start, end=end).values_list("date", flat=True))


@dataclass(frozen=True)
class SearchResult:
    activity: str  # the word as asked
    terms: list[str]  # what it resolved to
    start: dt.date
    end: dt.date  # inclusive
    days: list[AlmanacDay]  # the good days, by date, at most ``limit``


def search(*, activity: str, start: dt.date, days: int, limit: int | None = None) -> SearchResult:
    """Good days for ``activity`` among the ``days`` days from ``start`` (the search API).

    ``limit`` keeps only the first N good days ("the next 30 good days": ``days=366, limit=30``).
    Raises as :func:`good_dates`; the whole window must be loaded.
    """
    terms = resolve_activity(activity)
    try:
        end = start + dt.timedelta(days=days - 1)
    except OverflowError:  # a start near 9999-12-31: not loaded anyway
        end = dt.date.max
    ensure_loaded(start, end)
    qs = good_days(terms=terms, start=start, end=end).only("date", "lunar_text", "yi", "ji")
    if limit is not None:
        qs = qs[:limit]
    return SearchResult(activity=activity, terms=terms, start=start, end=end, days=list(qs))

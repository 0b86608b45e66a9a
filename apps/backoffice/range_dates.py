"""The order list's date drill-down (``date_hierarchy``) without reading every order.

Django's drill-down lists the years (months, days) that have orders with
``SELECT DISTINCT DATE_TRUNC(...)`` over the whole filtered list: a scan of every order (1.7 s
at a million). :func:`range_dates` makes ``datetimes()`` list every period between the first
and the last order instead — two index lookups (``MIN``/``MAX`` of the indexed column). A period
with no orders at all between two that have some is listed too (it opens an empty list).
"""

from __future__ import annotations

import datetime as dt
from functools import cache

from django.db import connections
from django.db.models import Max, Min, QuerySet
from django.utils import timezone

from apps.backoffice.estimated_count import planner_rows


def _periods(first: dt.datetime, last: dt.datetime, kind: str) -> list[dt.datetime]:
    """The starts of the ``kind`` periods from ``first``'s to ``last``'s (aware, their zone)."""
    start = first.replace(hour=0, minute=0, second=0, microsecond=0)
    start = start.replace(month=1, day=1) if kind == "year" else start.replace(day=1) if kind == "month" else start
    out = []
    while start <= last:
        out.append(start)
        if kind == "year":
            start = start.replace(year=start.year + 1)
        elif kind == "month":
            start = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
        else:
            start = (start + dt.timedelta(days=1, hours=2)).replace(hour=0)
    return out


#: a filtered list estimated at most this many rows takes its bounds from its own rows
FENCE_ROWS = 50_000


def _bounds(queryset: QuerySet, field_name: str) -> tuple:
    """``(MIN, MAX)`` of ``field_name`` over ``queryset``. Plain MIN/MAX walks the column's index
    from either end until a row passes the filter: immediate for the whole list or a common
    status, but a walk over nearly every order when the filtered rows all sit at one end (the
    unpaid ones are all recent). On PostgreSQL a filtered list the planner puts at most
    ``FENCE_ROWS`` rows takes the bounds from its own rows instead (``OFFSET 0``: found by the
    filter's index first)."""
    connection = connections[queryset.db]
    if connection.vendor == "postgresql" and queryset.query.where and planner_rows(queryset) <= FENCE_ROWS:
        sql, params = queryset.values(field_name).query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT MIN(v), MAX(v) FROM ({sql} OFFSET 0) AS fenced(v)", params)  # noqa: S608
            return cursor.fetchone()
    bounds = QuerySet.aggregate(queryset, lo=Min(field_name), hi=Max(field_name))
    return bounds["lo"], bounds["hi"]


class RangeDatesMixin:
    def _range(self, field_name: str) -> tuple:
        """:func:`_bounds` of this queryset, read once: the drill-down asks for them twice (its
        ``aggregate`` and its ``datetimes``) on the same queryset. A filtered or sorted copy is a
        new queryset and reads its own."""
        memo = self.__dict__.setdefault("_range_memo", {})
        if field_name not in memo:
            memo[field_name] = _bounds(self.order_by(), field_name)
        return memo[field_name]

    def aggregate(self, *args, **kwargs):
        """The drill-down's own ``aggregate(first=Min(f), last=Max(f))`` through :func:`_bounds`."""
        first, last = kwargs.get("first"), kwargs.get("last")
        if not args and len(kwargs) == 2 and isinstance(first, Min) and isinstance(last, Max):
            name = getattr(first.source_expressions[0], "name", None)
            if name and name == getattr(last.source_expressions[0], "name", None):
                lo, hi = self._range(name)
                return {"first": lo, "last": hi}
        return super().aggregate(*args, **kwargs)

    def datetimes(self, field_name, kind, order="ASC", tzinfo=None, is_dst=None):
        if kind not in ("year", "month", "day") or not isinstance(self, QuerySet):
            return super().datetimes(field_name, kind, order, tzinfo)
        first, last = self._range(field_name)
        if first is None:
            return []
        zone = tzinfo or timezone.get_current_timezone()
        found = _periods(timezone.localtime(first, zone), timezone.localtime(last, zone), kind)
        return found[::-1] if order == "DESC" else found


@cache
def _with_mixin(cls: type) -> type:
    return type(f"RangeDates{cls.__name__}", (RangeDatesMixin, cls), {})


def range_dates(queryset: QuerySet) -> QuerySet:
    """``queryset`` (a copy) whose ``datetimes()`` come from the first and last value (above)."""
    clone = queryset.all()
    clone.__class__ = _with_mixin(queryset.__class__)
    return clone

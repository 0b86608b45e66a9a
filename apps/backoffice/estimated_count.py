"""Counts for long lists that stay fast with a million orders.

:func:`count` is exact for small results and PostgreSQL's planner estimate (``EXPLAIN``: the
table's ``pg_class.reltuples`` times the filter's selectivity from ``pg_stats``) once that
estimate is above ``ESTIMATE_ABOVE`` rows — where an exact ``COUNT(*)`` would read every row
and a figure off by a few per cent changes nothing on the page. The estimate is as fresh as the
table's last ANALYZE (autovacuum analyzes after 10 % of the rows changed, PostgreSQL's default;
docs/DEPLOY.md). SQLite has no estimate: always exact.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

#: below this many (estimated) rows the count is exact
ESTIMATE_ABOVE = 10_000


def planner_rows(queryset: QuerySet) -> int:
    """PostgreSQL's estimate of how many rows ``queryset`` has (no rows are read)."""
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):  # a driver that does not decode json
        import json

        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


def count(queryset: QuerySet) -> int:
    """``queryset.count()``, or the planner's estimate when that is above ``ESTIMATE_ABOVE`` (PostgreSQL)."""
    if connections[queryset.db].vendor == "postgresql":
        estimate = planner_rows(queryset)
        if estimate > ESTIMATE_ABOVE:
            return estimate
    return queryset.count()


class EstimatedCountPaginator(Paginator):
    """The admin's paginator with :func:`count`: page links of a million-row list without
    counting it (with ``show_full_result_count = False``)."""

    @cached_property
    def count(self) -> int:
        return count(self.object_list)

"""The closed days of the dashboard's figures, read from the daily rows (``day_figures``).

A day the rows lack (no beat yet since a deploy or a restore) is summed and stored on the spot;
a day not closed yet by the clock (a ``now`` in the future) is summed without being stored.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Sum
from django.utils import timezone

from apps.backoffice import day_figures
from apps.backoffice.models import DailyFigure, DailyProductSales
from apps.catalog.models import Product


def closed_days(first: dt.date, last: dt.date) -> dict[dt.date, dict]:
    """``{day: {figure: value}}`` (``day_figures.FIGURES``) of every day ``first .. last``, oldest
    first. One query when every day has its row."""
    if last < first:
        return {}
    rows = {row.pop("day"): row for row in _rows(first, last)}
    if len(rows) <= (last - first).days:
        for a, b in day_figures.days_missing(first, last):
            day_figures.days_refresh(a, b)
        rows = {row.pop("day"): row for row in _rows(first, last)}
        if len(rows) <= (last - first).days:  # days from today on: summed, not stored
            rows.update(day_figures.days_values(max(first, timezone.localdate()), last)[0])
    return dict(sorted(rows.items()))


def _rows(first: dt.date, last: dt.date):
    return DailyFigure.objects.filter(day__gte=first, day__lte=last).values("day", *day_figures.FIGURES)


def best_sellers(first: dt.date, last: dt.date, today: list[dict], limit: int = 10) -> list[dict]:
    """The best sellers of the closed days ``first .. last`` (their product rows, one GROUP BY)
    and of ``today`` (``selectors.top_products`` of today, unlimited): ``[{"product_id",
    "product_name", "units", "amount_fen"}]`` by units, then amount, then product id."""
    totals: dict[int, list[int]] = {}
    closed = (
        DailyProductSales.objects.filter(day__gte=first, day__lte=last)
        .values("product_id")
        .annotate(units=Sum("units"), amount_fen=Sum("amount_fen"))
        .order_by()
    )
    if last >= timezone.localdate():  # days not closed by the clock have no rows
        closed = [*closed, *_future_products(max(first, timezone.localdate()), last)]
    for row in [*closed, *today]:
        units, fen = totals.setdefault(row["product_id"], [0, 0])
        totals[row["product_id"]] = [units + row["units"], fen + row["amount_fen"]]
    ranked = sorted(totals.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))[:limit]
    names = dict(Product.objects.filter(pk__in=[pk for pk, _ in ranked]).values_list("pk", "name"))
    return [
        {"product_id": pk, "product_name": names.get(pk), "units": units, "amount_fen": fen}
        for pk, (units, fen) in ranked
    ]


def _future_products(first: dt.date, last: dt.date) -> list[dict]:
    sales = day_figures.days_values(first, last)[1] if first <= last else []
    return [{"product_id": row.product_id, "units": row.units, "amount_fen": row.amount_fen} for row in sales]

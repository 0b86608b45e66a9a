"""The order list with many orders: no query per row, the date drill-down from MIN/MAX (no
scan), counts estimated above ESTIMATE_ABOVE on PostgreSQL and exact below."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.backoffice import estimated_count, order_workbench
from apps.backoffice.range_dates import _periods
from apps.orders.models import Order, OrderStatus

pytestmark = pytest.mark.django_db
URL = "/admin/orders/order/"


@pytest.fixture
def boss(client, django_user_model):
    user = django_user_model.objects.create_superuser("boss-volume", password="x")
    client.force_login(user)
    return client


def _seed(orders: int) -> None:
    call_command("seed_volume", orders=orders, customers=max(1, orders // 4), stdout=StringIO())


def _page(boss, **params) -> tuple[str, list[str]]:
    with CaptureQueriesContext(connection) as seen:
        response = boss.get(URL, params)
    assert response.status_code == 200
    return response.content.decode(), [q["sql"] for q in seen.captured_queries]


def test_order_list_queries_do_not_grow_with_the_page(boss):
    _seed(20)
    _, few = _page(boss)
    _seed(120)
    html, many = _page(boss)
    assert Order.objects.count() == 140
    assert len(many) == len(few)  # 100 rows on the page, as many queries as for 20
    # The drill-down's years come from MIN/MAX: the seeded year spans two calendar years.
    years = {o.created_at.astimezone(connection.timezone).year for o in Order.objects.all()}
    for year in years:
        assert f"created_at__year={year}" in html
    assert not [q for q in many if "DISTINCT" in q and ("DATE_TRUNC" in q or "datetime_trunc" in q)]
    # A small tab takes its bounds from its own rows on PostgreSQL (the unpaid ones sit at one end).
    html, unpaid = _page(boss, tab="unpaid")
    unpaid_year = Order.objects.get(status="unpaid", order_no__startswith="V002").created_at
    assert f"created_at__year={unpaid_year.astimezone(connection.timezone).year}" in html
    fenced = [q for q in unpaid if "OFFSET 0" in q]
    assert bool(fenced) == (connection.vendor == "postgresql")


def test_month_and_day_periods_cover_the_range():
    import datetime as dt
    from zoneinfo import ZoneInfo

    z = ZoneInfo("Asia/Shanghai")
    first, last = dt.datetime(2025, 11, 30, 23, 59, tzinfo=z), dt.datetime(2026, 2, 1, 0, 1, tzinfo=z)
    assert [p.strftime("%Y-%m") for p in _periods(first, last, "month")] == ["2025-11", "2025-12", "2026-01", "2026-02"]
    assert [p.year for p in _periods(first, last, "year")] == [2025, 2026]
    days = _periods(first, last, "day")
    assert len(days) == 64 and days[0].day == 30 and days[-1] == dt.datetime(2026, 2, 1, tzinfo=z)


def test_tab_counts_exact_below_the_threshold():
    _seed(300)
    counts = order_workbench.tab_counts()
    assert counts["completed"] == Order.objects.filter(status=OrderStatus.COMPLETED).count() > 0
    assert counts["unpaid"] == Order.objects.filter(status=OrderStatus.UNPAID).count() == 1
    assert (
        counts["refunding"] == Order.objects.filter(status=OrderStatus.REFUNDING).count()
    )  # their requests are approved (open) but counted once


def test_estimate_above_the_threshold_on_postgresql(monkeypatch):
    _seed(200)
    if connection.vendor != "postgresql":
        assert estimated_count.count(Order.objects.all()) == 200
        return
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE orders_order")
    monkeypatch.setattr(estimated_count, "ESTIMATE_ABOVE", 10)
    with CaptureQueriesContext(connection) as seen:
        assert estimated_count.count(Order.objects.all()) == 200  # reltuples after ANALYZE
    assert not [q for q in seen.captured_queries if "COUNT(" in q["sql"].upper()]
    monkeypatch.setattr(estimated_count, "ESTIMATE_ABOVE", 10_000)
    assert estimated_count.count(Order.objects.filter(status=OrderStatus.UNPAID)) == 1  # exact below


def test_dashboard_figures_cached_to_do_counts_live():
    from apps.backoffice import selectors

    _seed(50)
    first = selectors.dashboard()
    to_ship = first["todo"]["to_ship"]
    Order.objects.filter(status=OrderStatus.PAID, kind="goods", delivery="express").update(status="shipped")
    with CaptureQueriesContext(connection) as seen:
        again = selectors.dashboard()
    assert again["month"] == first["month"] and again["top_products"] == first["top_products"]
    assert to_ship > 0 and again["todo"]["to_ship"] == 0  # live
    assert not [q for q in seen.captured_queries if "orders_orderline" in q["sql"]]  # figures from the cache
    assert selectors.dashboard(now=None)["month"] == first["month"]
    fresh = selectors.period_figures()
    assert fresh["month"]["orders"] == first["month"]["orders"]

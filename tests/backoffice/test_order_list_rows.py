"""The order list's table made once per page (apps/backoffice/templatetags/result_rows.py): the
same HTML as unfold's tag, a fixed number of queries for 100 rows, and the page size chosen with
``?per=`` (apps/backoffice/per_page.py)."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.db import connection

from apps.backoffice import per_page
from apps.orders.models import Order

pytestmark = pytest.mark.django_db
URL = "/admin/orders/order/"
ROW = 'name="_selected_action"'
#: every query of the list page with 100 rows, as many as with 20 (session, user, the tab counts,
#: the shop profile, the rows, the drill-down's bounds once); PostgreSQL adds the planner's
#: estimates (page links, big tabs, a tab's fenced bounds: apps/backoffice/estimated_count.py)
MAX_QUERIES = {"postgresql": 19, "sqlite": 14}


@pytest.fixture
def seeded(boss):
    call_command("seed_volume", orders=130, customers=30, stdout=StringIO())
    return boss


def _html(client, **params) -> str:
    response = client.get(URL, params)
    assert response.status_code == 200
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", response.content.decode())


@pytest.mark.parametrize(
    "params", [{}, {"tab": "shipped", "per": "50"}, {"q": "<a refunded order's number>", "o": "-3"}, {"per": "100"}]
)
def test_the_table_is_unfolds_to_the_byte(seeded, monkeypatch, params):
    if "q" in params:
        params["q"] = Order.objects.filter(status="refunded").first().order_no
    fast = _html(seeded, **params)
    monkeypatch.setattr(admin.site._registry[Order], "change_list_template", None)  # unfold's own tag
    assert fast == _html(seeded, **params)
    shown = Order.objects.filter(status="shipped").count() if "tab" in params else 1 if "q" in params else 130
    assert fast.count(ROW) == min(int(params.get("per", 20)), shown)


def test_list_of_100_rows_runs_a_fixed_number_of_queries(seeded, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_QUERIES[connection.vendor]):
        html = _html(seeded, per="100")
    assert html.count(ROW) == 100
    with django_assert_max_num_queries(MAX_QUERIES[connection.vendor]):
        assert _html(seeded, per="100", tab="completed").count(ROW) > 20


def test_per_page_choice_stays_in_the_links_and_is_no_filter(seeded):
    assert _html(seeded).count(ROW) == 20  # the default
    assert _html(seeded, per="7").count(ROW) == 20  # not a choice: the default, never a 400 or ?e=1
    html = _html(seeded, per="50", o="-3")
    assert html.count(ROW) == 50
    assert "per=50" in re.search(r'href="(\?[^"]*p=2[^"]*)"', html)[1]  # the next page keeps the choice
    choices = re.findall(r'data-per="(\d+)"', html)
    assert choices == [str(n) for n in per_page.CHOICES]
    active = re.search(r'bo-per-page-active"[^>]*data-per="(\d+)"', html)
    assert active[1] == "50"
    first, second = _keys(_html(seeded)), _keys(_html(seeded, per="20", p="2"))
    assert len(first) == len(second) == 20 and not first & second


def _keys(html: str) -> set[str]:
    return set(re.findall(r'name="_selected_action" value="(\d+)"', html))

"""``manage.py seed_volume``: bulk data in every status, ledgers that add up, a second run beside
the first, refused under production settings (on whichever database the suite runs)."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count, Q, Sum
from django.utils import timezone

from apps.accounts.models import Customer, WalletEvent
from apps.distribution.models import Commission, Distributor, LedgerEntry
from apps.orders.models import AfterSale, FollowUp, Order, OrderLine, OrderStatus, Shipment
from apps.payments.models import Payment, Refund

pytestmark = pytest.mark.django_db


def _seed(orders: int, customers: int) -> str:
    out = StringIO()
    call_command("seed_volume", orders=orders, customers=customers, stdout=out)
    return out.getvalue()


def test_seed_writes_every_status_with_consistent_rows():
    printed = _seed(800, 100)
    assert "800 / 800 orders" in printed and "done in" in printed
    orders = Order.objects.filter(order_no__startswith="V001")
    assert orders.count() == 800
    assert Customer.objects.filter(openid__startswith="vol-1-").count() == 100
    spread = dict(orders.values_list("status").annotate(n=Count("id")))
    assert set(spread) == set(OrderStatus.values)
    assert spread[OrderStatus.COMPLETED] > spread[OrderStatus.PAID] > spread[OrderStatus.REFUNDING] > 0
    assert spread[OrderStatus.UNPAID] == 1  # order 0 of 800
    # Shanghai times over the last year; unpaid ones are the last day's (one in UNPAID_EVERY).
    now = timezone.now()
    oldest = orders.order_by("created_at").values_list("created_at", flat=True)[0]
    assert now - dt.timedelta(days=366) < oldest < now - dt.timedelta(days=300)
    assert not orders.filter(status="unpaid", created_at__lt=now - dt.timedelta(days=1, minutes=1)).exists()
    # Lines add up to the goods amount; the sum rule of pay_fen holds (a CHECK constraint).
    line_sum = OrderLine.objects.filter(order__in=orders).aggregate(s=Sum("amount_fen"))["s"]
    assert line_sum == orders.aggregate(s=Sum("goods_fen"))["s"]
    paid = orders.filter(paid_at__isnull=False)
    assert Payment.objects.filter(order__in=paid, status="paid").count() == paid.count()
    refunded = orders.filter(status__in=["refunding", "refunded"]).count()
    assert (
        AfterSale.objects.filter(order__in=orders).count()
        == Refund.objects.filter(order__in=orders).count()
        == refunded
    )
    assert Shipment.objects.filter(order__in=orders).count() == orders.filter(shipped_at__isnull=False).count()
    assert FollowUp.objects.filter(order__in=orders, status="done").exists()
    # Receiver columns generated from the address snapshot (the back office searches them).
    first = orders.order_by("id").first()
    assert first.receiver_phone == first.address["phone"] and first.receiver_name == first.address["name"]
    _assert_ledgers_add_up()


def _assert_ledgers_add_up():
    for customer in Customer.objects.filter(openid__startswith="vol-").annotate(
        bal=Sum("wallet_events__amount", filter=Q(wallet_events__kind="balance")),
        pts=Sum("wallet_events__amount", filter=Q(wallet_events__kind="points", wallet_events__state="available")),
    ):
        assert (customer.balance_fen, customer.points) == (customer.bal or 0, customer.pts or 0)
    assert WalletEvent.objects.filter(kind="points", state="frozen").exists()
    for d in Distributor.objects.annotate(a=Sum("ledger__available_delta_fen"), f=Sum("ledger__frozen_delta_fen")):
        assert (d.available_fen, d.frozen_fen) == (d.a or 0, d.f or 0)
    assert (
        Commission.objects.filter(status="available").exists() and Commission.objects.filter(status="frozen").exists()
    )
    assert LedgerEntry.objects.count() >= Commission.objects.count()


def test_second_run_adds_a_disjoint_set():
    _seed(300, 40)
    printed = _seed(200, 30)
    assert "run 2" in printed
    assert Order.objects.filter(order_no__startswith="V001").count() == 300
    assert Order.objects.filter(order_no__startswith="V002").count() == 200
    assert Customer.objects.filter(openid__startswith="vol-2-").count() == 30
    # The second run's orders belong to its own customers.
    assert not Order.objects.filter(order_no__startswith="V002", customer__openid__startswith="vol-1-").exists()
    _assert_ledgers_add_up()
    _assert_dashboard_figures_stored()


def _assert_dashboard_figures_stored():
    """Seeding leaves the dashboard's daily rows of every closed day it wrote, equal to the orders."""
    from apps.backoffice import selectors
    from apps.backoffice.models import DailyFigure

    yesterday = timezone.localdate() - dt.timedelta(days=1)
    assert DailyFigure.objects.filter(day__gte=yesterday - dt.timedelta(days=364), day__lte=yesterday).count() == 365
    assert (
        sum(DailyFigure.objects.values_list("orders", flat=True))
        == Order.objects.filter(created_at__lt=selectors.periods()[0].start).count()
    )
    today, month = selectors.periods()
    figures = selectors.period_figures()
    assert figures["month"] == selectors.summary(month) and figures["today"] == selectors.summary(today)
    assert figures["revenue_by_day"] == selectors.revenue_by_day(month)
    assert figures["top_products"] == selectors.top_products(month)


def test_refused_under_production_settings(settings):
    settings.DEMO_SHOP_ALLOWED = False
    with pytest.raises(CommandError, match="生产环境"):
        _seed(10, 5)
    assert not Order.objects.exists() and not Customer.objects.filter(openid__startswith="vol-").exists()

"""``manage.py seed_volume``: bulk data in every status, ledgers that add up, a second run beside
the first, refused under production settings (on whichever database the suite runs)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Count, Q, Sum
from django.utils import timezone

from apps.accounts.models import Customer, WalletEvent
from apps.appointments.models import Booking
from apps.catalog.models import Teacher
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
    assert ("statistics gathered (ANALYZE)" in printed) == (connection.vendor == "postgresql")
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


def test_consultations_have_their_bookings_without_overlap():
    _seed(3000, 300)
    orders = Order.objects.filter(order_no__startswith="V001")
    consultations = orders.filter(kind="consultation")
    bookings = Booking.objects.filter(order_no__startswith="V001")
    n = consultations.count()
    assert 90 < n < 240  # about 5 % of the paid orders
    # Every consultation order has its booking: its customer, its service, its slot's start.
    assert bookings.count() == n
    by_no = {b.order_no: b for b in bookings}
    for order in consultations.select_related("slot").prefetch_related("lines"):
        booking = by_no[order.order_no]
        (line,) = order.lines.all()
        assert (booking.customer_id, booking.product_id, line.quantity) == (order.customer_id, line.product_id, 1)
        assert order.slot.start == booking.start and order.slot.teacher_id == booking.teacher_id
        assert booking.start < booking.end < booking.blocked_until and order.address is None
        assert booking.live == (order.status in ("paid", "completed"))
        assert (booking.attendance != "") == (order.status == "completed")
        assert order.created_at < booking.start or order.status != "completed"
    # Statuses in realistic shares: mostly held and attended, some cancelled, a few no-shows, live ahead.
    spread = Counter("live" if b.live and not b.attendance else b.attendance or "cancelled" for b in bookings)
    assert sum(spread.values()) == n
    assert spread["attended"] > n * 0.6 and n * 0.05 < spread["cancelled"] < n * 0.3
    assert 0 < spread["no_show"] < spread["attended"] * 0.15 and 0 < spread["live"] < n * 0.2
    assert orders.filter(kind="consultation", status="paid", slot__start__gt=timezone.now()).exists()
    # Two live bookings of a teacher never overlap, buffers included (nor do any two of the run's).
    for teacher in {b.teacher_id for b in bookings}:
        ranges = sorted((b.start, b.blocked_until) for b in bookings if b.teacher_id == teacher)
        assert all(before[1] <= after[0] for before, after in zip(ranges, ranges[1:]))
    assert (
        not Teacher.objects.filter(pk__in=bookings.values("teacher_id")).exclude(name__startswith="压测老师1-").exists()
    )
    assert FollowUp.objects.filter(kind="chat_open", order__in=consultations.filter(paid_at__isnull=False)).count() == (
        consultations.filter(paid_at__isnull=False).count()
    )


def test_commissions_follow_their_orders_and_ledger():
    _seed(1500, 150)
    orders = Order.objects.filter(order_no__startswith="V001")
    commissions = Commission.objects.filter(order__in=orders).select_related("order")
    assert commissions.count() > 100
    for c in commissions:
        assert c.order.paid_at is not None and c.level == 1 and c.created_at == c.order.paid_at
        assert (c.base_fen, c.amount_fen) == (c.order.goods_fen, c.order.goods_fen // 10)
        assert (c.status == "reversed") == (c.order.status == "refunded") and c.reversed_fen in (0, c.amount_fen)
        if c.status == "available":
            assert c.order.status == "completed" and c.available_at > c.order.completed_at
    per_status = dict(commissions.values_list("status").annotate(s=Sum("amount_fen")))
    assert set(per_status) == {"frozen", "available", "reversed"}
    held = Distributor.objects.aggregate(a=Sum("available_fen"), f=Sum("frozen_fen"))
    assert (held["a"], held["f"]) == (per_status["available"], per_status["frozen"])
    # The ledger: one booking per commission, one release per available one, one reversal per reversed one.
    ledger = dict(LedgerEntry.objects.values_list("reason").annotate(n=Count("id")))
    assert ledger == {
        "commission": commissions.count(),
        "release": commissions.filter(status="available").count(),
        "reverse": commissions.filter(status="reversed").count(),
    }


def test_a_second_run_books_its_own_teachers():
    _seed(1200, 100)
    _seed(1200, 100)
    first = set(Booking.objects.filter(order_no__startswith="V001").values_list("teacher_id", flat=True))
    second = set(Booking.objects.filter(order_no__startswith="V002").values_list("teacher_id", flat=True))
    assert first and second and not first & second
    assert Booking.objects.count() == Order.objects.filter(kind="consultation").count()

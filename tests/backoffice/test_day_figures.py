"""The dashboard's closed days come from the daily rows (``apps.backoffice.day_figures``) and
must equal the figures summed directly from the orders (``selectors.summary`` and friends, the
reference), also after a payment and a refund change a day whose row exists already."""

import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.backoffice import day_figures, selectors
from apps.backoffice.models import DailyFigure, DailyProductSales
from apps.orders import followups
from apps.orders import services as order_services
from apps.orders.models import FollowUp, OrderLine, OrderStatus
from apps.payments import refunds
from apps.payments.models import Payment, PaymentStatus, Refund
from tests.backoffice.test_dashboard import _order as dashboard_order

pytestmark = pytest.mark.django_db


def _reference(now):
    """The month's figures summed from the source rows on every call (what the dashboard showed before)."""
    today, month = selectors.periods(now)
    return {
        "today": selectors.summary(today),
        "month": selectors.summary(month),
        "revenue_by_day": selectors.revenue_by_day(month),
        "top_products": selectors.top_products(month),
    }


def _dashboard(now):
    figures = selectors.period_figures(now)
    return {key: figures[key] for key in ("today", "month", "revenue_by_day", "top_products")}


def _at(day_offset: int, hour: int = 12, minute: int = 0) -> dt.datetime:
    midnight = day_figures.midnight(timezone.localdate() + dt.timedelta(days=day_offset))
    return midnight + dt.timedelta(hours=hour, minutes=minute)


def _order(customer, no, status, created, paid=None, lines=()):
    pay_fen = sum(sku.price_fen * qty for sku, qty in lines) or 500
    order = dashboard_order(customer, no, pay_fen, status=status, created=created, paid=paid)
    for sku, qty in lines:
        OrderLine.objects.create(
            order=order,
            sku=sku,
            product=sku.product,
            name=sku.product.name,
            price_fen=sku.price_fen,
            quantity=qty,
            amount_fen=sku.price_fen * qty,
        )
    order.refresh_from_db()
    return order


def _payment(order, no):
    return Payment.objects.create(
        order=order,
        method="wechat",
        out_trade_no=no,
        total_fee=order.pay_fen,
        status=PaymentStatus.PAID,
        paid_at=order.paid_at,
    )


def _run_day_followups() -> int:
    pending = FollowUp.objects.filter(kind=FollowUp.Kind.DAY_FIGURES, status=FollowUp.Status.PENDING)
    return sum(followups.followup_execute(pk) == FollowUp.Status.DONE for pk in pending.values_list("pk", flat=True))


@pytest.fixture
def shop(make_customer, make_sku):
    """Orders over several days in several statuses, lines of three products, a refund that
    succeeded on an old day, a commission written on an old day, customers joining on old days."""
    from apps.distribution.models import Commission, Distributor

    buyer, earner = make_customer(), make_customer()
    for offset, customer in ((-12, buyer), (-5, earner)):
        type(customer).objects.filter(pk=customer.pk).update(created_at=_at(offset, 9))
    cup, pot, tea = (make_sku(name=n, price_fen=p) for n, p in (("盖碗", 3000), ("茶壶", 8000), ("茶叶", 1500)))
    orders = {
        "A": _order(buyer, "A", OrderStatus.COMPLETED, _at(-10), _at(-10, 12, 5), [(cup, 2), (tea, 1)]),
        "B": _order(buyer, "B", OrderStatus.CANCELLED, _at(-10, 13)),
        "C": _order(buyer, "C", OrderStatus.REFUNDED, _at(-9, 23, 50), _at(-8, 0, 10), [(pot, 1)]),
        "D": _order(buyer, "D", OrderStatus.UNPAID, _at(-3, 23, 58), None, [(tea, 4)]),
        "E": _order(buyer, "E", OrderStatus.SHIPPED, _at(-1, 8), _at(-1, 8, 1), [(cup, 1), (pot, 2)]),
        "F": _order(buyer, "F", OrderStatus.PAID, _at(0, 0, 1), _at(0, 0, 2), [(tea, 3)]),
        "OLD": _order(buyer, "OLD", OrderStatus.COMPLETED, _at(-40), _at(-40), [(pot, 9)]),
    }
    refund = Refund.objects.create(
        order=orders["C"],
        payment=_payment(orders["C"], "PC"),
        out_refund_no="RC",
        refund_fen=8000,
        reason=Refund.Reason.AFTER_SALE,
        status=Refund.Status.SUCCESS,
    )
    Refund.objects.filter(pk=refund.pk).update(succeeded_at=_at(-7, 10))
    distributor = Distributor.objects.create(customer=earner, referral_code="DAYS0001", frozen_fen=1200)
    commission = Commission.objects.create(
        order=orders["A"], distributor=distributor, level=1, base_fen=7500, amount_fen=1200, status="frozen"
    )
    Commission.objects.filter(pk=commission.pk).update(created_at=_at(-10, 12, 6))
    return {"orders": orders, "commission": commission, "skus": (cup, pot, tea)}


def test_closed_days_are_read_from_their_rows_and_equal_the_orders(shop, django_assert_max_num_queries):
    now = timezone.now()
    assert day_figures.days_refresh_all() > 0
    yesterday = timezone.localdate() - dt.timedelta(days=1)
    assert not DailyFigure.objects.filter(day__gte=timezone.localdate()).exists()  # today is summed live
    assert DailyFigure.objects.filter(day=yesterday).values_list("paid_orders", "revenue_fen").get() == (1, 19000)
    assert DailyFigure.objects.get(day=_at(-7).date()).refund_fen == 8000
    assert DailyFigure.objects.get(day=_at(-10).date()).commission_fen == 1200
    assert sorted(DailyProductSales.objects.filter(day=yesterday).values_list("units", flat=True)) == [1, 2]
    # today's 5 sums, its products and cards; 29 rows, their products and names; the month's cards;
    # SVIP members twice; the two occupancies (2 each without teachers): none reads the month's orders
    with django_assert_max_num_queries(17):
        figures = _dashboard(now)
    assert figures == _reference(now)
    month = figures["month"]
    assert (month["orders"], month["paid_orders"], month["revenue_fen"]) == (6, 4, 39000)
    assert (month["refunds"], month["refund_fen"]) == (1, 8000)
    assert (month["commission_fen"], month["new_customers"]) == (1200, 2)
    assert [(row["product_name"], row["units"]) for row in figures["top_products"]] == [
        ("茶叶", 4),  # A's 1 and F's 3 (D is not paid)
        ("茶壶", 3),  # 240 yuan before 盖碗's 90 (OLD is older than the month)
        ("盖碗", 3),
    ]
    assert len(figures["revenue_by_day"]) == 30


def test_a_payment_and_a_refund_sum_their_closed_days_again(shop):
    from apps.distribution.models import Commission

    orders = shop["orders"]
    day_figures.days_refresh_all()
    d_day = _at(-3).date()
    assert DailyFigure.objects.get(day=d_day).orders_paid == 0
    # D, created three days ago just before midnight, is paid now: its day's paid rate changes.
    assert order_services.order_mark_paid(order=orders["D"], method="wechat", paid_at=timezone.now(), actor="test")
    assert FollowUp.objects.filter(kind=FollowUp.Kind.DAY_FIGURES, key="day_figures:D").exists()
    assert _dashboard(timezone.now()) != _reference(timezone.now())  # the row is stale until its follow-up ran
    assert _run_day_followups() == 1
    assert DailyFigure.objects.get(day=d_day).orders_paid == 1
    assert _dashboard(timezone.now()) == _reference(timezone.now())
    # A refund of A (paid ten days ago) today: the refund is today's, the commission it reverses
    # was written on A's day.
    payment = _payment(orders["A"], "PA")
    refund = Refund.objects.create(
        order=orders["A"], payment=payment, out_refund_no="RA", refund_fen=3750, reason=Refund.Reason.AFTER_SALE
    )
    assert refunds.refund_succeeded(refund=refund)
    assert Commission.objects.get(pk=shop["commission"].pk).reversed_fen == 600
    assert _run_day_followups() == 1
    assert DailyFigure.objects.get(day=_at(-10).date()).commission_fen == 600
    figures = _dashboard(timezone.now())
    assert figures == _reference(timezone.now())
    assert (figures["today"]["refund_fen"], figures["month"]["commission_fen"]) == (3750, 600)
    assert _run_day_followups() == 0  # each recorded once


def test_payments_of_today_record_nothing(shop, make_sku, customer):
    sku = make_sku(name="茶盘", price_fen=2000)
    order = _order(customer, "T1", OrderStatus.UNPAID, timezone.now() - dt.timedelta(seconds=5), None, [(sku, 1)])
    assert day_figures.paid_kinds(order) == []
    order.paid_at = _at(-1, 23, 59)  # WeChat's time of a payment just before midnight: beat's to sum
    assert day_figures.paid_kinds(order) == []
    order.created_at = _at(-1, 23, 59)  # an order of a closed day
    assert day_figures.paid_kinds(order) == [FollowUp.Kind.DAY_FIGURES]


def test_beat_fills_missing_days_and_sums_yesterday_again(shop):
    day_figures.days_refresh_all()
    yesterday = timezone.localdate() - dt.timedelta(days=1)
    DailyFigure.objects.filter(day__in=[_at(-10).date(), _at(-9).date()]).delete()
    DailyFigure.objects.filter(day=yesterday).update(revenue_fen=1)  # what committed after midnight
    before = yesterday - dt.timedelta(days=1)
    DailyFigure.objects.filter(day=before).update(orders=99)  # a payment WeChat dated on it, delivered late
    first = day_figures.first_day()
    days = (yesterday - first).days + 1
    assert day_figures.days_close() == 4  # the two missing days, yesterday and the day before
    assert DailyFigure.objects.get(day=before).orders != 99
    assert DailyFigure.objects.count() == days
    assert DailyFigure.objects.get(day=yesterday).revenue_fen == 19000
    assert DailyFigure.objects.get(day=_at(-10).date()).orders == 2
    # A dashboard opened before any beat fills the month's missing days itself.
    DailyFigure.objects.all().delete()
    DailyProductSales.objects.all().delete()
    assert _dashboard(timezone.now()) == _reference(timezone.now())
    assert DailyFigure.objects.count() == 29


def test_command_sums_every_day_again(shop, capsys):
    DailyFigure.objects.create(day=_at(-10).date(), revenue_fen=1)
    call_command("day_figures")
    assert DailyFigure.objects.get(day=_at(-10).date()).revenue_fen == 7500
    assert DailyFigure.objects.count() == (timezone.localdate() - day_figures.first_day()).days
    call_command("day_figures", since=str(_at(-2).date()))
    assert "2 days stored" in capsys.readouterr().out

"""The admin index is the shop's dashboard: figures aggregated in the database, in yuan,
Shanghai days, to-do counts linking to filtered lists; money in yuan on every admin page."""

import datetime as dt

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from apps.backoffice import selectors
from apps.orders.models import Order, OrderStatus
from apps.payments.models import Payment, PaymentStatus
from starmall.admin_money import YuanField, yuan

pytestmark = pytest.mark.django_db


def _order(customer, no, pay_fen, *, status=OrderStatus.UNPAID, created=None, paid=None):
    order = Order.objects.create(
        order_no=no,
        order_key=no,
        customer=customer,
        status=status,
        goods_fen=pay_fen,
        pay_fen=pay_fen,
        pay_deadline=timezone.now(),
        paid_at=paid,
        address={
            "name": "张三",
            "phone": "13800000000",
            "province": "上海",
            "city": "上海",
            "district": "浦东",
            "detail": "世纪大道1号",
        },
    )
    if created:
        Order.objects.filter(pk=order.pk).update(created_at=created)
    return order


def test_yuan_helper_and_field():
    assert yuan(1234) == "12.34"
    assert yuan(5) == "0.05"
    assert yuan(-150) == "-1.50"
    assert yuan(None) == "-"
    field = YuanField(required=True)
    assert field.clean("12.34") == 1234
    assert field.clean("8") == 800
    assert field.prepare_value(990) == "9.90"
    for bad in ("1.234", "abc", "-1"):
        with pytest.raises(Exception):  # noqa: B017 - django ValidationError
            field.clean(bad)


def test_summary_counts_shanghai_days(customer):
    now = dt.datetime(2026, 12, 1, 10, 0, tzinfo=selectors.SHANGHAI)
    # 2026-12-01 00:30 Shanghai is 2026-11-30 16:30 UTC: counts for "today" in Shanghai.
    early = dt.datetime(2026, 12, 1, 0, 30, tzinfo=selectors.SHANGHAI)
    yesterday_late = dt.datetime(2026, 11, 30, 23, 30, tzinfo=selectors.SHANGHAI)
    _order(customer, "A1", 1000, status=OrderStatus.PAID, created=early, paid=early)
    _order(customer, "A2", 3000, status=OrderStatus.SHIPPED, created=early, paid=early)
    _order(customer, "A3", 500, created=early)  # unpaid
    _order(customer, "B1", 7000, status=OrderStatus.PAID, created=yesterday_late, paid=yesterday_late)
    _order(
        customer,
        "OLD",
        9900,
        status=OrderStatus.PAID,
        created=now - dt.timedelta(days=40),
        paid=now - dt.timedelta(days=40),
    )
    today, month = selectors.periods(now)
    t = selectors.summary(today)
    assert (t["orders"], t["paid_orders"], t["revenue_fen"], t["aov_fen"]) == (3, 2, 4000, 2000)
    assert t["paid_rate"] == 66.7
    m = selectors.summary(month)
    assert (m["orders"], m["paid_orders"], m["revenue_fen"]) == (4, 3, 11000)
    assert (t["new_customers"], t["commission_fen"]) == (0, 0)  # the customer joined before "today"
    days = selectors.revenue_by_day(month)
    assert len(days) == 30
    assert days[-1] == {"day": dt.date(2026, 12, 1), "orders": 2, "revenue_fen": 4000}
    assert days[-2] == {"day": dt.date(2026, 11, 30), "orders": 1, "revenue_fen": 7000}
    assert sum(d["revenue_fen"] for d in days) == 11000


def test_todo_counts_link_to_filtered_lists(boss, customer):
    order = _order(customer, "T1", 1000, status=OrderStatus.PAID, paid=timezone.now())
    Payment.objects.create(order=order, method="wechat", out_trade_no="T1", total_fee=1000, status=PaymentStatus.MANUAL)
    todo = selectors.todo_counts()
    assert todo["to_ship"] == 1
    assert todo["manual"] == 1
    assert todo["aftersales"] == 0
    assert todo["alerts_open"] == 0
    page = boss.get(reverse("admin:index"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "待发货订单" in html and "/admin/orders/order/?status__exact=paid&amp;kind__exact=goods" in html
    assert "/admin/payments/payment/?status__exact=manual" in html
    assert "backoffice/vendor/echarts/echarts.min.js" in html
    assert "10.00" in html  # today's revenue in yuan
    # every to-do link opens its filtered list
    for url in (
        "/admin/orders/order/?status__exact=paid&kind__exact=goods",
        "/admin/payments/payment/?status__exact=manual",
        "/admin/payments/reconciliationrun/?status__in=differences,error",
        "/admin/catalog/sku/?stock__lte=5&is_active__exact=1",
        "/admin/orders/aftersale/?status__exact=requested",
        "/admin/payments/refund/?status__exact=failed",
        "/admin/orders/followup/?status__exact=failed",
        "/admin/alerts/alert/?handled=no",
    ):
        response = boss.get(url)
        assert response.status_code == 200, url
        assert "?e=1" not in response.url if hasattr(response, "url") else True
    listing = boss.get("/admin/orders/order/?status__exact=paid&kind__exact=goods").content.decode()
    body = listing[listing.find("result_list") :]
    assert ">T1<" in body, body[:4000]
    assert "10.00" in body


def test_dashboard_hidden_from_staff_without_order_view(client, django_user_model):
    user = django_user_model.objects.create_user("t", password="pw-123456", is_staff=True)
    client.force_login(user)
    assert "待发货订单" not in client.get(reverse("admin:index")).content.decode()


def test_money_shown_and_entered_in_yuan(boss):
    call_command("loaddata", "fixtures/demo.json", verbosity=0)
    from apps.catalog.models import Sku

    sku = Sku.objects.filter(product__kind="goods").first()
    page = boss.get(reverse("admin:catalog_sku_change", args=[sku.pk])).content.decode()
    assert f'value="{yuan(sku.price_fen)}"' in page
    listing = boss.get(reverse("admin:catalog_sku_changelist")).content.decode()
    assert yuan(sku.price_fen) in listing


def test_summary_counts_new_customers_and_commissions_not_reversed(make_customer):
    from apps.distribution.models import Commission, Distributor

    now = timezone.now()
    buyer, earner = make_customer(), make_customer()
    distributor = Distributor.objects.create(customer=earner, referral_code="DASH0001")
    for level, (fen, back, status) in enumerate([(1200, 200, "frozen"), (300, 300, "reversed")], start=1):
        order = _order(buyer, f"C{level}", 12000, status=OrderStatus.PAID, paid=now)
        Commission.objects.create(
            order=order,
            distributor=distributor,
            level=level,
            base_fen=12000,
            amount_fen=fen,
            reversed_fen=back,
            status=status,
        )
    today, _ = selectors.periods(now)
    t = selectors.summary(today)
    assert t["new_customers"] == 2 and t["commission_fen"] == 1000  # 1200 - 200 partly refunded; 300 - 300

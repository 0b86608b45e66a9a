"""The members back office: levels and cards through their services (yuan in, fen stored),
member prices in the product editor's SKU matrix, the customer's level/growth/SVIP on the
customer page, the dashboard's SVIP figures, member_fen in the order export, the demo data."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from admin_helpers import form_data
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from apps.backoffice import selectors as dashboard
from apps.catalog.models import Sku
from apps.members import services
from apps.members.models import CardPurchase, Level, MemberCard, Membership
from apps.orders.models import Order, OrderStatus

pytestmark = pytest.mark.django_db


def test_levels_and_cards_are_saved_through_their_services(boss):
    response = boss.post(
        reverse("admin:members_level_add"), {"name": "银卡", "growth_min": "1000", "discount_percent": "98"}
    )
    assert response.status_code == 302
    assert list(Level.objects.values_list("name", "growth_min", "discount_percent")) == [("银卡", 1000, 98)]
    again = boss.post(
        reverse("admin:members_level_add"), {"name": "重复", "growth_min": "1000", "discount_percent": "95"}
    )
    assert again.status_code == 200 and Level.objects.count() == 1  # growth_min is UNIQUE: the form says so
    response = boss.post(
        reverse("admin:members_membercard_add"),
        {"name": "月卡", "days": "30", "pay_fen": "19.90", "original_fen": "29.90", "active": "on", "sort": "1"},
    )
    assert response.status_code == 302
    assert list(MemberCard.objects.values_list("name", "days", "pay_fen", "original_fen")) == [("月卡", 30, 1990, 2990)]
    for name in ("level", "membercard", "cardpurchase", "membership", "growthevent"):
        assert boss.get(reverse(f"admin:members_{name}_changelist")).status_code == 200


def test_member_price_is_edited_in_the_sku_matrix_in_yuan(boss, make_sku):
    sku = make_sku(price_fen=12800, stock=3)
    url = reverse("admin:catalog_product_change", args=[sku.product_id])
    data = form_data(boss.get(url))
    data["skus-0-member_price_fen"] = "99.00"
    assert boss.post(url, data).status_code == 302
    sku.refresh_from_db()
    assert (sku.member_price_fen, sku.price_fen, sku.stock) == (9900, 12800, 3)
    data = form_data(boss.get(url))
    data["skus-0-member_price_fen"] = ""
    assert boss.post(url, data).status_code == 302
    assert Sku.objects.get(pk=sku.pk).member_price_fen is None


def test_the_customer_page_shows_level_growth_and_svip(boss, customer):
    Level.objects.create(name="金卡", growth_min=5000, discount_percent=95)
    services.growth_order_completed(customer_id=customer.pk, order_no="1", basis_fen=600_000)
    Membership.objects.filter(customer=customer).update(svip_expires_at=timezone.now() + dt.timedelta(days=3))
    page = boss.get(reverse("admin:accounts_customer_change", args=[customer.pk])).content.decode()
    assert "金卡" in page and "6000" in page and "到期" in page


def test_dashboard_counts_svip_sales_and_active_members_and_exports_carry_member_fen(role_client, customer):
    card = MemberCard.objects.create(name="月卡", days=30, pay_fen=1990)
    purchase = services.card_purchase_create(customer=customer, card_id=card.pk, api="v2")
    services.card_purchase_apply_paid(purchase=purchase, transaction_id="4200000009", paid_at=timezone.now())
    services.card_purchase_refunded(purchase=CardPurchase.objects.get(), refund_fen=990)
    today, _ = dashboard.periods()
    figures = dashboard.summary(today)
    assert (figures["svip_sales_fen"], figures["svip_active"]) == (1000, 1)
    now = timezone.now()
    Order.objects.create(
        order_no="M1",
        order_key="M1",
        customer=customer,
        status=OrderStatus.PAID,
        goods_fen=10000,
        member_fen=500,
        pay_fen=9500,
        pay_deadline=now,
        paid_at=now,
    )
    day = timezone.localtime(now).date().isoformat()
    response = role_client("财务").get(
        "/admin/backoffice/export/", {"kind": "orders", "start": day, "end": day, "fmt": "csv"}
    )
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    column = table[0].index("会员折扣（元）")
    assert [row[column] for row in table[1:]] == ["5.00"]


def test_demo_data_has_the_levels_a_card_and_a_member_price_once():
    call_command("seed_demo")
    call_command("seed_members")
    assert list(Level.objects.values_list("name", "growth_min", "discount_percent")) == [
        ("普通会员", 0, 100),
        ("银卡", 1000, 98),
        ("金卡", 5000, 95),
    ]
    assert list(MemberCard.objects.values_list("days", flat=True)) == [30]
    priced = Sku.objects.filter(member_price_fen__isnull=False)
    assert priced.count() == 1 and priced.get().member_price_fen < priced.get().price_fen

"""The back office: every registered model's list and detail page opens, searches work,
and the staff actions change state only through the services."""

import pytest
from django.contrib import admin
from django.urls import reverse

from apps.orders.models import AfterSale, Order

pytestmark = pytest.mark.django_db


def test_every_admin_page_opens(boss, shop_with_a_paid_order):
    opened = 0
    for model in admin.site._registry:
        meta = model._meta
        listing = boss.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        assert listing.status_code == 200, meta.label
        first = model._default_manager.first()
        if first is not None:
            detail = boss.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk]))
            assert detail.status_code == 200, meta.label
        opened += 1
    assert opened >= 19


def test_order_search_by_order_no_and_customer(boss, shop_with_a_paid_order):
    url = reverse("admin:orders_order_changelist")
    assert (
        shop_with_a_paid_order["order_no"].encode() in boss.get(url, {"q": shop_with_a_paid_order["order_no"]}).content
    )
    assert shop_with_a_paid_order["order_no"].encode() in boss.get(url, {"q": "体验用户"}).content
    assert shop_with_a_paid_order["order_no"].encode() not in boss.get(url, {"q": "nobody"}).content


def test_staff_approves_a_refund_from_the_admin(boss, shop_with_a_paid_order):
    sale = AfterSale.objects.get()
    response = boss.post(
        reverse("admin:orders_aftersale_changelist"), {"action": "approve", "_selected_action": [sale.pk]}, follow=True
    )
    assert response.status_code == 200
    assert AfterSale.objects.get().status == "approved"
    assert Order.objects.get(order_no=shop_with_a_paid_order["order_no"]).status == "refunding"


def test_sku_stock_changes_relatively_never_overwritten(boss, shop_with_a_paid_order):
    from apps.catalog.models import Sku

    sku = Sku.objects.get(pk=1)  # 60 in the fixture, 1 sold
    url = reverse("admin:catalog_sku_change", args=[sku.pk])
    form = {
        "product": sku.product_id,
        "specs": '{"颜色": "天青", "容量": "120ml"}',
        "price_fen": sku.price_fen,
        "code": sku.code,
        "is_active": "on",
        "stock_change": 5,
    }
    Sku.objects.filter(pk=sku.pk).update(stock=50)  # orders took units while the page was open
    assert boss.post(url, form).status_code == 302
    assert Sku.objects.get(pk=sku.pk).stock == 55

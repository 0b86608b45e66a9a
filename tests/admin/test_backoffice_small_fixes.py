"""The back office's small things staff hit: the icon (no favicon 404), no "-0.00", 改价 refusing
full-width digits, a Chinese 403 naming the role that holds the permission, and paid pickup orders
left out of the 待发货 tab (they are verified, never shipped)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.exceptions import ValidationError
from django.templatetags.static import static

from apps.backoffice.order_workbench import tab_counts
from apps.backoffice.roles import roles_holding
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order, OrderEvent, OrderStatus
from apps.payments import balance
from apps.stores.models import Store
from starmall.admin_money import fen_from_yuan, yuan

pytestmark = pytest.mark.django_db


def test_the_favicon_is_served_and_linked(boss, client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == static("backoffice/favicon.ico")
    icon = Path(finders.find("backoffice/favicon.ico")).read_bytes()
    assert icon[:4] == b"\x00\x00\x01\x00" and len(icon) < 10_000  # an ICO, small
    html = boss.get("/admin/").content.decode()
    assert re.search(r'<link rel="icon" href="/static/backoffice/favicon.ico"', html)


def test_money_is_never_minus_zero(boss, paid_orders):
    assert (yuan(0), yuan(-0), yuan(-500), yuan(-1)) == ("0.00", "0.00", "-5.00", "-0.01")
    [order] = paid_orders(1)  # no coupon, no points
    html = boss.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert 'id="order-coupon">0.00<' in html and 'id="order-points">0.00<' in html
    assert "-0.00" not in html
    Order.objects.filter(pk=order.pk).update(coupon_fen=500, goods_fen=order.goods_fen + 500)
    assert 'id="order-coupon">-5.00<' in boss.get(f"/admin/orders/order/{order.pk}/change/").content.decode()


@pytest.mark.parametrize("text", ["１２.００", "１2", "12．00", "－1"])
def test_full_width_amounts_are_refused_in_chinese(text):
    with pytest.raises(ValidationError) as refused:
        fen_from_yuan(text)
    assert refused.value.code == "full_width" and "全角" in refused.value.messages[0]


def test_price_change_refuses_full_width_digits(buyer, goods_sku, place_order, make_staff):
    _, api, address = buyer
    order = Order.objects.get(order_no=place_order(api, items=[(goods_sku, 1)], address=address)["order_no"])
    finance = make_staff("orders.change_price", view_all=True)
    page = finance.post(
        f"/admin/orders/order/{order.pk}/price/", {"pay_yuan": "５０.００", "reason": "老顾客优惠"}, follow=True
    )
    assert "未改价" in page.content.decode() and "全角" in page.content.decode()
    assert Order.objects.get(pk=order.pk).pay_fen == order.pay_fen and order.adjust_fen == 0
    assert not OrderEvent.objects.filter(order=order, note__startswith="改价").exists()


def test_roles_holding_reads_the_roles_module():
    assert roles_holding("orders.change_price") == ["财务"]
    assert "运营" in roles_holding("content.add_banner")  # by the wildcard "content.add_*"
    assert roles_holding("nothing.nobody") == []


def test_the_403_page_is_chinese_and_names_the_role(make_staff, paid_orders):
    [order] = paid_orders(1)
    service = make_staff("orders.view_order")
    refused = service.post(f"/admin/orders/order/{order.pk}/price/", {"pay_yuan": "1.00", "reason": "x"})
    html = refused.content.decode()
    assert refused.status_code == 403 and '<html lang="zh-CN">' in html
    assert "没有权限" in html and "orders.change_price" in html and "「财务」" in html
    assert "可以给待支付订单改价" in html  # the permission's Chinese name
    assert "Forbidden" not in html
    page = service.get("/admin/payments/payment/")  # a whole admin page, refused by Django
    assert page.status_code == 403 and "payments.view_payment" in page.content.decode()
    assert "「财务」" in page.content.decode()


def test_api_403_stays_json(client):
    from django.core.exceptions import PermissionDenied
    from django.test import RequestFactory

    from apps.backoffice.views_denied import permission_denied

    response = permission_denied(RequestFactory().get("/api/v1/anything"), PermissionDenied())
    assert response.status_code == 403 and response["Content-Type"] == "application/json"
    assert response.content.decode().startswith('{"code": "forbidden"')


def test_to_ship_leaves_out_paid_pickup_orders(boss, paid_orders, buyer, goods_sku):
    express = paid_orders(2)
    customer = buyer[0]
    store = Store.objects.create(name="西湖店", address="文三路100号", lat="30.2789", lng="120.1452")
    key = order_confirm(
        customer=customer, items=[{"sku_id": goods_sku.pk, "quantity": 1}], delivery="pickup", store_id=store.pk
    )["order_key"]
    pickup, _ = order_create(customer=customer, order_key=key)
    balance.payment_balance_pay(order_no=pickup.order_no, customer_id=customer.pk)
    assert Order.objects.get(pk=pickup.pk).status == OrderStatus.PAID
    assert tab_counts()["to_ship"] == 2
    listed = boss.get("/admin/orders/order/", {"tab": "to_ship"}).content.decode()
    assert all(o.order_no in listed for o in express) and pickup.order_no not in listed
    page = boss.get(f"/admin/orders/order/{pickup.pk}/change/").content.decode()
    assert 'id="order-ship-link"' not in page and 'id="order-verify-link"' in page  # 核销, not 发货

"""A store's staff verify a pickup code on the back office's page in a real headless Chromium:
the order completes once, the second try shows when and by whom."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from apps.backoffice.roles import sync_roles
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order, OrderStatus
from apps.payments import balance
from apps.stores.models import Store, StoreStaff

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-store"


def test_store_staff_verify_a_code_once_in_the_browser(page_for, shot, base_url, make_customer, make_sku):
    store = Store.objects.create(name="西湖店", address="文三路100号", lat="30.2789", lng="120.1452")
    sync_roles(Group, Permission)
    clerk = get_user_model().objects.create_user("clerk", password=PASSWORD, is_staff=True)
    clerk.groups.add(Group.objects.get(name="门店店员"))
    StoreStaff.objects.create(user=clerk, store=store)
    customer = make_customer(balance_fen=100_000)
    sku = make_sku(price_fen=5000, stock=5)
    key = order_confirm(
        customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], delivery="pickup", store_id=store.pk
    )["order_key"]
    order, _ = order_create(customer=customer, order_key=key)
    balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
    code = Order.objects.get(pk=order.pk).pickup_code

    page = page_for("clerk", PASSWORD)
    page.goto(f"{base_url}/admin/stores/pickuporder/verify/")
    assert page.locator("text=西湖店").first.is_visible()
    page.fill("#pickup-code", code)
    page.click("#pickup-verify")
    page.wait_for_load_state("networkidle")
    assert page.locator("text=核销成功").first.is_visible()
    assert page.locator("#verified-order").inner_text() == order.order_no
    shot(page, "pickup-verified")
    assert Order.objects.get(pk=order.pk).status == OrderStatus.COMPLETED

    page.fill("#pickup-code", code)
    page.click("#pickup-verify")
    page.wait_for_load_state("networkidle")
    assert page.locator("text=由 clerk 核销").first.is_visible()
    shot(page, "pickup-refused-second")
    assert Order.objects.filter(pk=order.pk, status=OrderStatus.COMPLETED).count() == 1

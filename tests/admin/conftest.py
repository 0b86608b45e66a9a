"""Fixtures of the back-office tests: staff users with chosen permissions, logged in; a small
shop (paid, unpaid and consultation orders); the data of a rendered admin form."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client

from apps.orders.models import Order


@pytest.fixture
def make_staff(django_user_model):
    """``make_staff(*perms, view_all=False)`` -> a logged-in Client of a staff user (not superuser)
    holding exactly ``perms`` ("app_label.codename"), plus every view_* permission if asked."""
    counter = iter(range(1, 100))

    def make(*perms: str, view_all: bool = False) -> Client:
        user = django_user_model.objects.create_user(f"staff{next(counter)}", password="pw-123456", is_staff=True)
        granted = list(Permission.objects.filter(codename__startswith="view_")) if view_all else []
        for perm in perms:
            app_label, codename = perm.split(".")
            granted.append(Permission.objects.get(content_type__app_label=app_label, codename=codename))
        user.user_permissions.set(granted)
        client = Client()
        client.force_login(user)
        client.user = user
        return client

    return make


@pytest.fixture
def viewer(make_staff):
    """A staff user with only the view_* permissions."""
    return make_staff(view_all=True)


@pytest.fixture
def shop_with_a_paid_order(make_customer, make_api, wechat, deliver, place_order):
    """The demo fixture (demo.json) and the demo customer's goods order, paid through WeChat, with a
    refund request waiting; returns the order JSON."""
    call_command("loaddata", "fixtures/demo.json", verbosity=0)
    from apps.accounts.models import Address, Customer
    from apps.catalog.models import Sku

    customer = Customer.objects.get(pk=1)
    api = make_api(customer)
    order = place_order(api, items=[(Sku.objects.get(pk=1), 1)], address=Address.objects.get(pk=1))
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()
    api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "不想要了"}, format="json")
    return order


@pytest.fixture
def buyer(make_customer, make_api, address_of):
    """A customer with 10,000.00 yuan balance and 500 points, an address and an API client."""
    customer = make_customer(balance_fen=1_000_000, points=500)
    return customer, make_api(customer), address_of(customer)


@pytest.fixture
def goods_sku(make_sku):
    return make_sku(price_fen=6000, stock=10)


@pytest.fixture
def paid_orders(buyer, goods_sku, place_order):
    """``paid_orders(n)`` -> n goods orders of 1 x 60.00 yuan paid from the balance (Order rows)."""
    customer, api, address = buyer

    def make(n: int) -> list[Order]:
        nos = []
        for _ in range(n):
            order = place_order(api, items=[(goods_sku, 1)], address=address)
            response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
            assert response.status_code == 200, response.json()
            nos.append(order["order_no"])
        return list(Order.objects.filter(order_no__in=nos).order_by("pk"))

    return make

import pytest
from django.contrib.auth.models import Group, Permission

from apps.backoffice.roles import sync_roles
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.stores.models import Store, StoreStaff


@pytest.fixture
def store(db):
    return Store.objects.create(
        name="西湖店",
        address="杭州市文三路100号",
        phone="0571-1",
        hours="10:00-21:00",
        lat="30.278900",
        lng="120.145200",
    )


@pytest.fixture
def make_staff(db, django_user_model):
    """``make_staff(username, store=None)`` -> a staff login with the 门店店员 role, bound to ``store``."""

    def make(username, store=None):
        sync_roles(Group, Permission)
        user = django_user_model.objects.create_user(username=username, password="pw-" + username, is_staff=True)
        user.groups.add(Group.objects.get(name="门店店员"))
        if store is not None:
            StoreStaff.objects.create(user=user, store=store)
        return user

    return make


@pytest.fixture
def paid_pickup(make_customer, make_sku, store):
    """``paid_pickup(customer=None, store=store)`` -> a paid pickup order (balance), refreshed."""
    from apps.orders.models import Order
    from apps.payments import balance

    def make(customer=None, at=None):
        customer = customer or make_customer(balance_fen=100_000)
        sku = make_sku(price_fen=5000, stock=10)
        key = order_confirm(
            customer=customer, items=[{"sku_id": sku.pk, "quantity": 2}], delivery="pickup", store_id=(at or store).pk
        )["order_key"]
        order, _ = order_create(customer=customer, order_key=key)
        balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        return Order.objects.get(pk=order.pk)

    return make

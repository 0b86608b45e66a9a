"""The back office's verification page and the pickup lists, as a store's staff sees them."""

import pytest
from django.urls import reverse

from apps.orders.models import Order, OrderStatus
from apps.stores.models import Store

pytestmark = pytest.mark.django_db


def test_store_staff_verify_on_the_page_once_and_see_only_their_store(client, paid_pickup, make_staff, store):
    mine = paid_pickup()
    other_store = Store.objects.create(name="别店", address="x", lat=0, lng=0)
    theirs = paid_pickup(at=other_store)
    make_staff("clerk", store)
    assert client.login(username="clerk", password="pw-clerk")
    listing = client.get(reverse("admin:stores_pickuporder_changelist")).content.decode()
    assert mine.order_no in listing and theirs.order_no not in listing
    url = reverse("admin:stores_pickup_verify")
    assert "核销" in client.get(url).content.decode()
    page = client.post(url, {"code": mine.pickup_code}, follow=True).content.decode()
    assert "核销成功" in page and mine.order_no in page
    assert Order.objects.get(pk=mine.pk).status == OrderStatus.COMPLETED
    again = client.post(url, {"code": mine.pickup_code}, follow=True).content.decode()
    assert "未核销" in again and "由 clerk 核销" in again
    refused = client.post(url, {"code": theirs.pickup_code}, follow=True).content.decode()
    assert "不在您的门店" in refused
    assert Order.objects.get(pk=theirs.pk).status == OrderStatus.PAID


def test_staff_without_the_permission_cannot_open_the_page(client, django_user_model):
    django_user_model.objects.create_user(username="ops2", password="pw", is_staff=True)
    client.login(username="ops2", password="pw")
    assert client.get(reverse("admin:stores_pickup_verify")).status_code == 403


def test_operations_see_every_store_and_an_unbound_clerk_sees_none(client, paid_pickup, make_staff, store):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    order = paid_pickup()
    make_staff("unbound")
    ops = get_user_model().objects.create_user(username="ops3", password="pw-ops", is_staff=True)
    ops.groups.add(Group.objects.get(name="运营"))
    url = reverse("admin:stores_pickuporder_changelist")
    client.login(username="ops3", password="pw-ops")
    assert order.order_no in client.get(url).content.decode()
    client.login(username="unbound", password="pw-unbound")
    assert order.order_no not in client.get(url).content.decode()

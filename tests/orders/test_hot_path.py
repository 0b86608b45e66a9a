"""The flash-sale hot path: the sold-out flag and the queries each request may run.

Speed itself is measured by ``make bench``; these pin what makes it fast and keep it correct:
a sold-out answer from Redis never outlives the stock it saw, and the number of queries of
confirm, create and a payment notification cannot grow unnoticed.
"""

import time

import pytest

from apps.catalog import soldout, stock
from apps.catalog.models import Sku
from apps.orders.models import Order

pytestmark = pytest.mark.django_db


def _confirm(api, sku, address, quantity=1):
    return api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": sku.pk, "quantity": quantity}], "address_id": address.pk},
        format="json",
    )


def _create(api, key):
    return api.post("/api/v1/orders", {"order_key": key}, format="json")


def test_last_unit_flags_the_sku_after_commit_and_losers_are_answered_without_the_sku(
    api, make_sku, address, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    sku = make_sku(stock=1)
    key = _confirm(api, sku, address).json()["order_key"]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert _create(api, key).status_code == 201
        assert not soldout.flagged([soldout.sku_key(sku.pk)])  # not before commit
    for callback in callbacks:
        callback()
    assert soldout.flagged([soldout.sku_key(sku.pk)])
    with django_assert_max_num_queries(1):  # the customer (token auth); no SKU, no address
        response = _confirm(api, sku, address)
    assert response.status_code == 409
    assert response.json()["code"] == "insufficient_stock"
    assert response.json()["detail"] == {"sku_id": sku.pk, "requested": 1, "available": 0}
    assert Sku.objects.get(pk=sku.pk).stock == 0
    assert Order.objects.count() == 1


def test_a_sku_with_units_left_is_not_flagged(api, make_sku, address, django_capture_on_commit_callbacks):
    sku = make_sku(stock=2)
    key = _confirm(api, sku, address).json()["order_key"]
    with django_capture_on_commit_callbacks(execute=True):
        assert _create(api, key).status_code == 201
    assert not soldout.flagged([soldout.sku_key(sku.pk)])
    assert _confirm(api, sku, address).status_code == 200


def test_cancel_gives_units_back_and_clears_the_flag(api, make_sku, address, django_capture_on_commit_callbacks):
    sku = make_sku(stock=1)
    key = _confirm(api, sku, address).json()["order_key"]
    with django_capture_on_commit_callbacks(execute=True):
        order_no = _create(api, key).json()["order_no"]
    assert soldout.flagged([soldout.sku_key(sku.pk)])
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/v1/orders/{order_no}/cancel").status_code == 200
    assert not soldout.flagged([soldout.sku_key(sku.pk)])
    assert Sku.objects.get(pk=sku.pk).stock == 1
    assert _confirm(api, sku, address).status_code == 200


def test_staff_restock_clears_the_flag(api, make_sku, address, django_capture_on_commit_callbacks):
    sku = make_sku(stock=0)
    assert _confirm(api, sku, address).status_code == 409  # reads 0 in the database: flags it
    assert soldout.flagged([soldout.sku_key(sku.pk)])
    with django_capture_on_commit_callbacks(execute=True):
        assert stock.sku_stock_adjust(sku_id=sku.pk, delta=5) == 5
    assert not soldout.flagged([soldout.sku_key(sku.pk)])
    assert _confirm(api, sku, address).status_code == 200


def test_a_wrong_flag_expires_by_itself(api, make_sku, address, monkeypatch):
    """A flag that missed its clear (a loser racing a restock) lasts at most FLAG_SECONDS."""
    monkeypatch.setattr(soldout, "FLAG_SECONDS", 1)
    sku = make_sku(stock=3)
    soldout.mark(soldout.sku_key(sku.pk))
    assert _confirm(api, sku, address).status_code == 409
    time.sleep(1.2)
    assert _confirm(api, sku, address).status_code == 200


def test_create_that_finds_no_stock_flags_only_a_stock_of_zero(api, make_sku, address):
    sku = make_sku(stock=3)
    key = _confirm(api, sku, address, quantity=3).json()["order_key"]
    Sku.objects.filter(pk=sku.pk).update(stock=2)  # someone else took one meanwhile
    response = _create(api, key)
    assert response.status_code == 409 and response.json()["code"] == "insufficient_stock"
    assert not soldout.flagged([soldout.sku_key(sku.pk)])  # 2 left: others may still buy
    Sku.objects.filter(pk=sku.pk).update(stock=0)
    assert _create(api, key).status_code == 409
    assert soldout.flagged([soldout.sku_key(sku.pk)])
    assert Order.objects.count() == 0


def test_create_refuses_a_product_taken_off_sale(api, make_sku, address):
    sku = make_sku(stock=3)
    key = _confirm(api, sku, address).json()["order_key"]
    sku.product.is_active = False
    sku.product.save()
    response = _create(api, key)
    assert response.status_code == 409
    assert response.json()["detail"]["sku_id"] == sku.pk
    assert Sku.objects.get(pk=sku.pk).stock == 3
    assert Order.objects.count() == 0


def test_queries_per_request_confirm_and_create(
    api, make_sku, address, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    sku = make_sku(stock=5)
    # customer, SKUs with products, unpaid orders (caps), address, the customer's usable
    # coupons; freight terms come from the cache once one confirm loaded them
    _confirm(api, sku, address)
    with django_assert_max_num_queries(5):
        response = _confirm(api, sku, address)
    assert response.status_code == 200
    # customer; transaction: order, customer lock + unpaid count (caps), lines, event, stock
    # (+ savepoint/begin and commit markers)
    with django_assert_max_num_queries(9), django_capture_on_commit_callbacks(execute=True):
        created = _create(api, response.json()["order_key"])
    assert created.status_code == 201
    assert [line["quantity"] for line in created.json()["lines"]] == [1]
    assert Sku.objects.get(pk=sku.pk).stock == 4


def test_queries_per_payment_notification(
    api, make_sku, address, place_order, wechat, deliver, django_assert_max_num_queries
):
    order = place_order(api, items=[(make_sku(price_fen=3600, stock=10), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    # payment; transaction: payment, order, event, lines, whether the buyer has a referrer
    # (distribution's commission follow-up), 3 follow-ups in one INSERT, product sales
    # (+ savepoint markers); the Notification row; after commit one "dispatched" UPDATE. Whether
    # a printer prints on payment (printing's print_ticket follow-up) comes from the process's
    # memory once a payment has read it (printing.selectors.prints_on_payment)
    from apps.printing.selectors import prints_on_payment

    prints_on_payment()  # a running shop remembers it: the first payment of 10 s read it
    with django_assert_max_num_queries(15):
        attempts = deliver()
    assert [a["ok"] for a in attempts] == [True]
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"


def test_a_resent_notification_of_an_applied_payment_needs_no_transaction(
    api, make_sku, address, place_order, wechat, deliver, django_assert_max_num_queries
):
    from apps.payments.models import Notification

    sku = make_sku(price_fen=3600, stock=10)
    order = place_order(api, items=[(sku, 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    assert [a["ok"] for a in deliver()] == [True]
    notification = wechat.control.notifications()[0]
    with django_assert_max_num_queries(2):  # the payment, the Notification row
        assert [a["ok"] for a in deliver(notification["id"])] == [True]
    assert list(Notification.objects.order_by("id").values_list("outcome", flat=True)) == ["applied", "duplicate"]
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert sku.product.__class__.objects.get(pk=sku.product_id).sales == 1

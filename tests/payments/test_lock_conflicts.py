"""A transaction the database gives up on (deadlock, serialization failure, SQLite "database is
locked") is run once more where that is safe; a second loss is a JSON 503 ``service_unavailable``
(WeChat's notifications: FAIL XML, so WeChat sends again) with nothing half-written.

The conflict is forced where the paying, cancelling or refunding transaction has already
written most of its rows: the last step (the product's ``sales`` counter, the stock) raises
Django's ``OperationalError`` from psycopg's ``DeadlockDetected``, as the PostgreSQL backend
does. ``transaction=True``: the retry only runs a transaction it owns, not a test's.
"""

from __future__ import annotations

import logging
import sqlite3

import psycopg.errors
import pytest
from django.db import IntegrityError, OperationalError, transaction
from django.test import RequestFactory

from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.catalog import stock
from apps.catalog.models import Product, Sku
from apps.orders.models import FollowUp, Order
from apps.payments import refunds
from apps.payments.models import Notification, Payment, Refund
from starmall.api.middleware import ServiceUnavailableMiddleware
from starmall.locking import is_lock_conflict, retry_on_lock_conflict

pytestmark = pytest.mark.django_db(transaction=True)

BUSY = {"code": "service_unavailable", "message": "系统繁忙，请稍后再试。", "detail": {"retry_after_seconds": 1}}


def _wrapped(cause: BaseException) -> OperationalError:
    """Django's OperationalError raised from the driver's error, as the backends raise it."""
    exc = OperationalError(str(cause))
    exc.__cause__ = cause
    return exc


def deadlock() -> OperationalError:
    return _wrapped(psycopg.errors.DeadlockDetected("deadlock detected"))


def failing(monkeypatch, module, name: str, times: int) -> dict:
    """Make ``module.name`` raise a deadlock on its first ``times`` calls; returns the counter."""
    real = getattr(module, name)
    calls = {"n": 0}

    def fn(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] <= times:
            raise deadlock()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, fn)
    return calls


@pytest.fixture
def rich(make_customer, make_api):
    from apps.accounts.models import Address

    customer = make_customer(balance_fen=50000, points=300)
    address = Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="1号",
        is_default=True,
    )
    return customer, make_api(customer), address


def _balance_events(customer) -> list[tuple[str, int]]:
    return list(
        WalletEvent.objects.filter(customer=customer, kind="balance").order_by("id").values_list("reason", "amount")
    )


# --- balance payment --------------------------------------------------------------------------


def test_balance_pay_that_loses_a_deadlock_once_is_run_again_and_pays_once(
    rich, make_sku, place_order, monkeypatch, caplog
):
    customer, api, address = rich
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(api, items=[(sku, 1)], address=address)
    calls = failing(monkeypatch, stock, "product_sales_add", times=1)

    with caplog.at_level(logging.WARNING, logger="starmall.locking"):
        response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["order"]["status"] == "paid"
    assert calls["n"] == 2
    assert [r.getMessage().split(" ")[0] for r in caplog.records] == ["_balance_pay_apply"]
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000 - 12800
    assert _balance_events(customer) == [("pay", -12800)]
    assert list(Payment.objects.filter(order__order_no=order["order_no"]).values_list("method", "status")) == [
        ("balance", "paid")
    ]
    assert Product.objects.get(pk=sku.product_id).sales == 1
    assert FollowUp.objects.filter(order__order_no=order["order_no"]).count() == 3  # message, SMS, points


def test_balance_pay_that_loses_twice_answers_503_json_and_keeps_nothing(rich, make_sku, place_order, monkeypatch):
    customer, api, address = rich
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(api, items=[(sku, 1)], address=address)
    calls = failing(monkeypatch, stock, "product_sales_add", times=2)

    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json() == BUSY
    assert response["Retry-After"] == "1"
    assert calls["n"] == 2
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000
    assert _balance_events(customer) == []
    assert not Payment.objects.filter(order__order_no=order["order_no"]).exists()
    assert not FollowUp.objects.exists()
    assert Product.objects.get(pk=sku.product_id).sales == 0
    # Sent again (as the answer invites), it goes through.
    again = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert again.status_code == 200 and Customer.objects.get(pk=customer.pk).balance_fen == 50000 - 12800


# --- cancel -----------------------------------------------------------------------------------


def test_cancel_that_loses_a_deadlock_once_gives_back_exactly_once(rich, make_sku, place_order, monkeypatch):
    import datetime as dt

    from django.utils import timezone

    customer, api, address = rich
    sku = make_sku(price_fen=6000, stock=5)
    coupon = Coupon.objects.create(
        customer=customer, title="减10", discount_fen=1000, valid_until=timezone.now() + dt.timedelta(days=1)
    )
    order = place_order(api, items=[(sku, 2)], address=address, coupon_id=coupon.pk, use_points=200)
    assert (Sku.objects.get(pk=sku.pk).stock, Customer.objects.get(pk=customer.pk).points) == (3, 100)
    calls = failing(monkeypatch, stock, "sku_stock_restore", times=1)

    response = api.post(f"/api/v1/orders/{order['order_no']}/cancel", format="json")

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    assert calls["n"] == 2
    assert Sku.objects.get(pk=sku.pk).stock == 5
    assert Customer.objects.get(pk=customer.pk).points == 300
    assert WalletEvent.objects.filter(customer=customer, kind="points", reason="return").count() == 1
    assert Coupon.objects.get(pk=coupon.pk).status == "available"


# --- balance refund (the worker) ----------------------------------------------------------------


def test_balance_refund_that_loses_a_deadlock_once_credits_once(rich, make_sku, place_order, monkeypatch):
    customer, api, address = rich
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(api, items=[(sku, 1)], address=address)
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    sale = refunds.refund_request(order_no=order["order_no"], customer_id=customer.pk, reason="不想要了")
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:cs")
    calls = failing(monkeypatch, stock, "product_sales_remove", times=1)

    assert refunds.refund_execute(refund_id=refund.pk) == "success"

    assert calls["n"] == 2
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000
    assert _balance_events(customer) == [("pay", -12800), ("refund", 12800)]
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    assert (Sku.objects.get(pk=sku.pk).stock, Product.objects.get(pk=sku.product_id).sales) == (5, 0)


# --- WeChat's notifications ---------------------------------------------------------------------


@pytest.fixture
def wechat_order(rich, make_sku, place_order, wechat):
    """A goods order the customer paid at WeChat; the notification is waiting in the sandbox."""
    customer, api, address = rich
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(api, items=[(sku, 1)], address=address)
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code == 200
    wechat.control.pay(order["order_no"])
    return order, sku


def test_payment_notification_that_loses_a_deadlock_once_is_applied_once(wechat_order, deliver, monkeypatch):
    order, sku = wechat_order
    calls = failing(monkeypatch, stock, "product_sales_add", times=1)

    attempts = deliver()

    assert [(a["status"], "SUCCESS" in a["response"]) for a in attempts] == [(200, True)]
    assert calls["n"] == 2
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert Product.objects.get(pk=sku.product_id).sales == 1
    assert list(Notification.objects.values_list("outcome", flat=True)) == ["applied"]


def test_payment_notification_that_loses_twice_answers_fail_xml_and_the_resend_applies(
    wechat_order, deliver, monkeypatch
):
    order, sku = wechat_order
    failing(monkeypatch, stock, "product_sales_add", times=2)

    attempts = deliver()

    assert len(attempts) == 1 and attempts[0]["status"] == 200
    assert "<return_code><![CDATA[FAIL]]></return_code>" in attempts[0]["response"]
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "pending"
    assert Product.objects.get(pk=sku.product_id).sales == 0
    assert not FollowUp.objects.exists()

    attempts = deliver()  # WeChat sends it again; the database is free now

    assert ["SUCCESS" in a["response"] for a in attempts] == [True]
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert Product.objects.get(pk=sku.product_id).sales == 1


def test_refund_notification_that_loses_twice_answers_fail_xml_and_keeps_nothing(
    wechat_order, deliver, wechat, monkeypatch
):
    order, sku = wechat_order
    deliver()
    customer_id = Order.objects.get(order_no=order["order_no"]).customer_id
    sale = refunds.refund_request(order_no=order["order_no"], customer_id=customer_id, reason="不想要了")
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:cs")
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    failing(monkeypatch, stock, "product_sales_remove", times=2)

    note = wechat.control.notifications(kind="refund")[0]
    attempts = deliver(note["id"])

    assert [(a["status"], "<![CDATA[FAIL]]>" in a["response"]) for a in attempts] == [(200, True)]
    assert Refund.objects.get(pk=refund.pk).status == "submitted"
    assert Order.objects.get(order_no=order["order_no"]).status == "refunding"
    assert (Sku.objects.get(pk=sku.pk).stock, Product.objects.get(pk=sku.product_id).sales) == (4, 1)

    monkeypatch.undo()
    assert ["SUCCESS" in a["response"] for a in deliver(note["id"])] == [True]
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    assert (Sku.objects.get(pk=sku.pk).stock, Product.objects.get(pk=sku.product_id).sales) == (5, 0)


# --- conflicts no retry covers: 503 JSON --------------------------------------------------------


@pytest.mark.parametrize(
    "cause",
    [
        psycopg.errors.DeadlockDetected("deadlock detected"),
        psycopg.errors.SerializationFailure("could not serialize access"),
        sqlite3.OperationalError("database is locked"),
    ],
)
def test_a_lock_conflict_in_any_api_call_is_503_json(rich, make_sku, place_order, monkeypatch, cause):
    customer, api, address = rich
    order = place_order(api, items=[(make_sku(price_fen=12800, stock=5), 1)], address=address)
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200

    def conflict(**kwargs):
        raise _wrapped(cause)

    monkeypatch.setattr(refunds, "refund_request", conflict)
    response = api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "不想要了"}, format="json")

    assert (response.status_code, response.json(), response["Retry-After"]) == (503, BUSY, "1")


def test_a_lock_conflict_outside_drf_is_503_json_from_the_middleware():
    request = RequestFactory().get("/anything")
    response = ServiceUnavailableMiddleware(lambda r: None).process_exception(request, deadlock())
    assert response.status_code == 503 and response["Retry-After"] == "1"
    import json

    assert json.loads(response.content) == BUSY


# --- the helpers ----------------------------------------------------------------------------------


def test_is_lock_conflict_names_deadlocks_serialization_failures_and_sqlite_locks_only():
    assert is_lock_conflict(deadlock())
    assert is_lock_conflict(psycopg.errors.DeadlockDetected("deadlock detected"))
    assert is_lock_conflict(_wrapped(psycopg.errors.SerializationFailure("could not serialize access")))
    assert is_lock_conflict(_wrapped(sqlite3.OperationalError("database is locked")))
    assert not is_lock_conflict(_wrapped(psycopg.errors.OperationalError("server closed the connection")))
    assert not is_lock_conflict(_wrapped(sqlite3.OperationalError("no such table: x")))
    assert not is_lock_conflict(IntegrityError("duplicate key"))
    assert not is_lock_conflict(ValueError("database is locked"))


def test_inside_someone_elses_transaction_the_retry_lets_the_conflict_through():
    calls = []

    @retry_on_lock_conflict
    def step():
        calls.append(1)
        raise deadlock()

    with pytest.raises(OperationalError), transaction.atomic():
        step()
    assert calls == [1]  # the outer transaction is lost; only its owner may run it again

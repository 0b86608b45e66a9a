"""After-sales whole: GET /refunds, "return first" for shipped goods, rejection with a reason."""

import pytest

from apps.accounts.models import Customer, WalletEvent
from apps.catalog.models import Product, Sku
from apps.orders import shipments
from apps.orders.models import AfterSale, Order
from apps.payments import refunds, returns
from apps.payments.models import Payment, Refund
from starmall.errors import InvalidState

pytestmark = pytest.mark.django_db


def shipped(paid, **kwargs):
    order, sku = paid(**kwargs)
    row = Order.objects.get(order_no=order["order_no"])
    assert shipments.order_ship(order=row, actor="staff:t", carrier_code="shunfeng", tracking_no="SF0000111122")
    return order, sku


def request_refund(api, order_no, **body):
    response = api.post(f"/api/v1/orders/{order_no}/refund", {"reason": "不想要了", **body}, format="json")
    assert response.status_code == 202, response.json()
    return AfterSale.objects.get(refund_no=response.json()["refund_no"])


def test_return_first_then_refund_restocks_and_gives_the_money_back(buyer, paid):
    order, sku = shipped(paid, price_fen=5000, stock=10, quantity=2)  # 100 yuan, free freight
    balance_after_pay = Customer.objects.get(pk=buyer.customer.pk).balance_fen
    assert balance_after_pay == 1_000_000 - 10000
    assert Sku.objects.get(pk=sku.pk).stock == 8
    sale = request_refund(buyer.api, order["order_no"])
    assert sale.amount_fen == 10000

    assert returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:t", note="寄回：杭州市文三路1号")
    assert not returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:t")  # double click
    listing = buyer.api.get("/api/v1/refunds").json()
    assert listing["count"] == 1
    assert listing["results"][0] | {"created_at": None} == {
        "refund_no": sale.refund_no,
        "order_no": order["order_no"],
        "status": "approved_return",
        "amount_fen": 10000,
        "reason": "不想要了",
        "created_at": None,
        "reject_reason": None,
        "note": "寄回：杭州市文三路1号",
        "return": None,
    }
    # receiving the goods before they were sent: nothing happens
    assert returns.after_sale_return_received(after_sale_id=sale.pk, actor="staff:t") is None

    url = f"/api/v1/refunds/{sale.refund_no}/return"
    bad = buyer.api.post(url, {"carrier": "顺丰", "tracking_no": "x"}, format="json")
    assert bad.status_code == 400 and "tracking_no" in bad.json()["detail"]
    sent = buyer.api.post(url, {"carrier": "顺丰", "tracking_no": "SF9990001112"}, format="json")
    assert sent.status_code == 200
    assert sent.json()["status"] == "returning"
    assert sent.json()["return"] == {"carrier": "顺丰", "tracking_no": "SF9990001112"}
    assert buyer.api.post(url, {"carrier": "顺丰", "tracking_no": "SF9990001112"}, format="json").status_code == 200
    other = buyer.api.post(url, {"carrier": "顺丰", "tracking_no": "SF0000000000"}, format="json")
    assert other.status_code == 409
    assert Order.objects.get(order_no=order["order_no"]).status == "shipped"
    assert Sku.objects.get(pk=sku.pk).stock == 8  # nothing back before the goods are

    refund = returns.after_sale_return_received(after_sale_id=sale.pk, actor="staff:t")
    assert refund is not None and refund.restock is True and refund.refund_fen == 10000
    assert returns.after_sale_return_received(after_sale_id=sale.pk, actor="staff:t") is None
    assert Order.objects.get(order_no=order["order_no"]).status == "refunding"
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert refunds.refund_execute(refund_id=refund.pk) == "success"  # again: nothing more

    assert Customer.objects.get(pk=buyer.customer.pk).balance_fen == 1_000_000
    assert WalletEvent.objects.filter(order_no=order["order_no"], kind="balance").count() == 2
    assert Sku.objects.get(pk=sku.pk).stock == 10  # returned goods back in stock
    assert Product.objects.get(pk=sku.product_id).sales == 0
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    assert Payment.objects.get(order__order_no=order["order_no"]).refunded_fen == 10000
    row = AfterSale.objects.get(pk=sale.pk)
    assert row.status == "refunded" and row.return_received_at is not None
    body = buyer.api.get(f"/api/v1/orders/{order['order_no']}").json()
    assert (body["status"], body["refund_status"]) == ("refunded", "refunded")


def test_a_partial_return_refunds_the_amount_without_restocking(buyer, paid):
    order, sku = shipped(paid, price_fen=5000, stock=10, quantity=2)
    sale = request_refund(buyer.api, order["order_no"], amount_fen=5000)
    assert returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:t")
    returns.after_sale_return_sent(
        refund_no=sale.refund_no, customer_id=buyer.customer.pk, carrier="中通", tracking_no="ZT123456789"
    )
    refund = returns.after_sale_return_received(after_sale_id=sale.pk, actor="staff:t")
    assert refund.restock is False
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert Customer.objects.get(pk=buyer.customer.pk).balance_fen == 1_000_000 - 5000
    assert Sku.objects.get(pk=sku.pk).stock == 8
    assert Order.objects.get(order_no=order["order_no"]).status == "shipped"
    assert Refund.objects.get().refund_fen == 5000


def test_rejection_carries_the_reason_and_return_first_needs_a_shipped_order(buyer, paid):
    order, _ = paid()
    sale = request_refund(buyer.api, order["order_no"])
    with pytest.raises(InvalidState):  # paid, not shipped: refund at once instead
        returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:t")
    assert AfterSale.objects.get(pk=sale.pk).status == "requested"
    assert refunds.after_sale_reject(after_sale_id=sale.pk, actor="staff:t", note="商品已使用，不支持退款")
    row = buyer.api.get("/api/v1/refunds").json()["results"][0]
    assert (row["status"], row["reject_reason"], row["return"]) == ("rejected", "商品已使用，不支持退款", None)
    assert Customer.objects.get(pk=buyer.customer.pk).balance_fen == 1_000_000 - 10000
    not_waiting = buyer.api.post(
        f"/api/v1/refunds/{sale.refund_no}/return", {"carrier": "顺丰", "tracking_no": "SF1112223334"}, format="json"
    )
    assert not_waiting.status_code == 409 and not_waiting.json()["code"] == "invalid_state"


def test_refunds_are_the_callers_only(buyer, paid, make_api, make_customer):
    order, _ = shipped(paid)
    sale = request_refund(buyer.api, order["order_no"])
    returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:t")
    other = make_api(make_customer())
    assert other.get("/api/v1/refunds").json()["count"] == 0
    response = other.post(
        f"/api/v1/refunds/{sale.refund_no}/return", {"carrier": "顺丰", "tracking_no": "SF1112223334"}, format="json"
    )
    assert response.status_code == 404
    assert AfterSale.objects.get(pk=sale.pk).status == "approved_return"

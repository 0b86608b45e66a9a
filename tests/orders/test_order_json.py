"""OrderSerializer writes its dict by hand (the generic path was 14 % of create's
CPU). It must stay equal, key for key and value for value, to what the generic
ModelSerializer path makes of the declared fields, for orders in every state."""

import json

from rest_framework import serializers

from apps.orders import shipments
from apps.orders.api.serializers import OrderSerializer
from apps.orders.models import Order
from apps.payments import refunds


def generic(order: Order) -> dict:
    return serializers.ModelSerializer.to_representation(OrderSerializer(), order)


def assert_same(order_no: str) -> dict:
    order = Order.objects.prefetch_related("lines", "after_sales").get(order_no=order_no)
    fast, slow = OrderSerializer(order).data, generic(order)
    assert list(fast) == list(slow)  # same keys, same order
    assert json.dumps(fast, sort_keys=True, default=str) == json.dumps(slow, sort_keys=True, default=str)
    assert fast == slow
    return fast


def test_unpaid_paid_shipped_and_refund_requested_goods_orders(make_customer, make_api, make_sku, place_order):
    customer = make_customer(balance_fen=10_000_00, points=0)
    api = make_api(customer)
    address = customer.addresses.create(
        name="王五",
        phone="13800000000",
        province="广东省",
        city="深圳市",
        district="南山区",
        detail="科技园 1 号",
        is_default=True,
    )
    tea, cup = make_sku(price_fen=12800, stock=10), make_sku(price_fen=3900, stock=10, specs={"颜色": "青"})
    order = place_order(api, items=[(tea, 2), (cup, 1)], address=address, remark="请尽快发货")
    unpaid = assert_same(order["order_no"])
    assert (unpaid["status"], unpaid["goods_fen"], len(unpaid["lines"]), unpaid["paid_at"]) == (
        "unpaid",
        29500,
        2,
        None,
    )
    assert unpaid == order  # the create answer itself

    paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert paid.status_code == 200, paid.json()
    assert assert_same(order["order_no"])["pay_method"] == "balance"

    assert shipments.order_ship(
        order=Order.objects.get(order_no=order["order_no"]),
        actor="staff:test",
        carrier_code="shunfeng",
        tracking_no="SF1234567890",
    )
    shipped = assert_same(order["order_no"])
    assert shipped["shipment"]["tracking_no"] == "SF1234567890"
    assert shipped["auto_receive_at"] is not None

    refunds.refund_request(order_no=order["order_no"], customer_id=customer.pk, reason="不想要了")
    assert assert_same(order["order_no"])["refund_status"] == "requested"


def test_consultation_order_with_its_slot(api, consultation, place_order):
    order = place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[0])
    shown = assert_same(order["order_no"])
    assert (shown["kind"], shown["slot"]["id"], shown["address"]) == ("consultation", consultation.slots[0].pk, None)


def test_a_consultation_has_no_delivery_in_confirm_or_the_order(api, consultation):
    """A consultation is booked, not shipped or collected: ``delivery`` is null in confirm's
    answer and in the order's (goods say express or pickup)."""
    body = {"items": [{"sku_id": consultation.sku.pk, "quantity": 1}], "slot_id": consultation.slots[0].pk}
    confirmed = api.post("/api/v1/orders/confirm", body, format="json")
    assert confirmed.status_code == 200, confirmed.json()
    assert (confirmed.json()["delivery"], confirmed.json()["address"], confirmed.json()["freight_fen"]) == (
        None,
        None,
        0,
    )
    created = api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")
    assert created.status_code == 201 and created.json()["delivery"] is None
    assert assert_same(created.json()["order_no"])["delivery"] is None

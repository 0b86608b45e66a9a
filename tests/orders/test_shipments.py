"""Shipping with carrier + tracking number, the shipped message, tracking through the logistics
sandbox (cached, 503 when down), automatic receipt."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.utils import timezone

from apps.accounts.models import WalletEvent
from apps.orders import followups, shipments
from apps.orders.models import FollowUp, Order, Shipment
from starmall.errors import InvalidInput

pytestmark = pytest.mark.django_db


def ship(order_no, carrier_code="shunfeng", tracking_no="SF1234567890"):
    order = Order.objects.get(order_no=order_no)
    return shipments.order_ship(order=order, actor="staff:t", carrier_code=carrier_code, tracking_no=tracking_no)


def test_ship_writes_shipment_message_and_order_json(buyer, paid, wechat, settings):
    order, _ = paid()
    assert buyer.api.get(f"/api/v1/orders/{order['order_no']}").json()["shipment"] is None
    assert ship(order["order_no"]) is True
    assert ship(order["order_no"]) is False  # shipped already: nothing more
    assert Shipment.objects.count() == 1
    body = buyer.api.get(f"/api/v1/orders/{order['order_no']}").json()
    row = Order.objects.get(order_no=order["order_no"])
    assert body["status"] == "shipped"
    assert body["shipment"] == {
        "carrier": "顺丰速运",
        "carrier_code": "shunfeng",
        "tracking_no": "SF1234567890",
        "shipped_at": timezone.localtime(row.shipped_at).isoformat(),
    }
    assert body["auto_receive_at"] == timezone.localtime(row.shipped_at + dt.timedelta(days=10)).isoformat()
    assert body["refund_status"] is None
    listed = buyer.api.get("/api/v1/orders").json()["results"][0]
    assert listed["shipment"]["tracking_no"] == "SF1234567890"
    message = FollowUp.objects.get(kind="shipped_message")
    assert message.key == f"shipped_message:{order['order_no']}"
    assert followups.followup_execute(message.pk) == "done"
    sent = [m for m in wechat.control.messages() if m["template_id"] == settings.WECHAT_SUBSCRIBE_TEMPLATE_SHIPPED]
    assert len(sent) == 1
    assert sent[0]["data"]["character_string3"]["value"] == "SF1234567890"
    assert sent[0]["data"]["thing2"]["value"] == "顺丰速运"


@pytest.mark.parametrize(
    "carrier_code, tracking_no",
    [("dhl-moon", "SF1234567890"), ("shunfeng", "12"), ("shunfeng", "SF 123 456"), ("", "SF1234567890")],
)
def test_bad_carrier_or_number_changes_nothing(paid, carrier_code, tracking_no):
    order, _ = paid()
    with pytest.raises(InvalidInput):
        ship(order["order_no"], carrier_code, tracking_no)
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert Shipment.objects.count() == 0 and FollowUp.objects.filter(kind="shipped_message").count() == 0


def test_tracking_through_the_sandbox_cached_and_503_when_down(buyer, paid, wechat):
    order, _ = paid()
    not_yet = buyer.api.get(f"/api/v1/orders/{order['order_no']}/tracking")
    assert not_yet.status_code == 409 and not_yet.json()["code"] == "invalid_state"
    ship(order["order_no"], "zhongtong", "ZT7700001")
    response = buyer.api.get(f"/api/v1/orders/{order['order_no']}/tracking")
    assert response.status_code == 200
    body = response.json()
    assert (body["carrier"], body["tracking_no"], body["state"]) == ("中通快递", "ZT7700001", "in_transit")
    assert len(body["events"]) == 4 and "揽收" in body["events"][-1]["text"]
    assert body["events"][0]["time"] > body["events"][-1]["time"]  # newest first
    assert buyer.api.get(f"/api/v1/orders/{order['order_no']}/tracking").json() == body
    assert wechat.state.logistics["queries"] == 1  # the second answer came from the cache

    cache.delete_pattern("logistics:*")  # the cached route only (tokens live in the cache too)
    wechat.state.logistics["down"] = True
    down = buyer.api.get(f"/api/v1/orders/{order['order_no']}/tracking")
    assert down.status_code == 503
    assert down.json()["code"] == "service_unavailable"
    assert down.json()["message"] == "物流信息暂时无法查询，请稍后再试。"
    assert down["Retry-After"] == "5"
    wechat.state.logistics["down"] = False
    assert buyer.api.get(f"/api/v1/orders/{order['order_no']}/tracking").status_code == 200


def test_a_signed_parcel_and_another_customers_order(buyer, paid, make_api, make_customer):
    order, _ = paid()
    ship(order["order_no"], "yuantong", "YT5550009")
    body = buyer.api.get(f"/api/v1/orders/{order['order_no']}/tracking").json()
    assert body["state"] == "signed" and len(body["events"]) == 5
    other = make_api(make_customer()).get(f"/api/v1/orders/{order['order_no']}/tracking")
    assert other.status_code == 404


def test_auto_receive_after_the_days_once_and_starts_the_points_countdown(buyer, paid, settings):
    order, _ = paid(price_fen=5000, quantity=2)  # 100 yuan: 100 points award
    award = FollowUp.objects.get(order__order_no=order["order_no"], kind="points_award")
    assert followups.followup_execute(award.pk) == "done"
    ship(order["order_no"])
    row = Order.objects.get(order_no=order["order_no"])
    assert shipments.orders_auto_receive() == 0  # not due yet
    Order.objects.filter(pk=row.pk).update(shipped_at=timezone.now() - dt.timedelta(days=10, minutes=1))
    assert shipments.orders_auto_receive() == 1
    assert shipments.orders_auto_receive() == 0  # a second run: nothing more
    row.refresh_from_db()
    assert row.status == "completed"
    assert row.events.filter(to_status="completed", actor="system:auto-receive").count() == 1
    event = WalletEvent.objects.get(order_no=row.order_no, reason="award")
    assert (event.amount, event.state) == (100, "frozen")
    assert event.available_at == row.completed_at + dt.timedelta(days=settings.POINTS_FREEZE_DAYS)


def test_auto_receive_waits_for_an_open_refund_request(buyer, paid):
    order, _ = paid()
    ship(order["order_no"])
    Order.objects.filter(order_no=order["order_no"]).update(shipped_at=timezone.now() - dt.timedelta(days=11))
    response = buyer.api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "坏了"}, format="json")
    assert response.status_code == 202
    assert shipments.orders_auto_receive() == 0
    assert Order.objects.get(order_no=order["order_no"]).status == "shipped"
    assert buyer.api.get(f"/api/v1/orders/{order['order_no']}").json()["refund_status"] == "requested"


def test_customer_receives_then_auto_receive_has_nothing_to_do(buyer, paid):
    order, _ = paid()
    ship(order["order_no"])
    response = buyer.api.post(f"/api/v1/orders/{order['order_no']}/receive")
    assert response.status_code == 200 and response.json()["status"] == "completed"
    assert response.json()["auto_receive_at"] is None
    Order.objects.filter(order_no=order["order_no"]).update(shipped_at=timezone.now() - dt.timedelta(days=30))
    assert shipments.orders_auto_receive() == 0

"""Rules against hoarding (API.md Additions): per-customer caps on unpaid orders,
booking closes BOOKING_MIN_NOTICE_MINUTES before a slot, and the default address at confirm."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.models import Address
from apps.appointments.models import Booking
from apps.catalog.models import Sku
from apps.orders import services as orders
from apps.orders.models import Order

pytestmark = pytest.mark.django_db


def confirm(api, **body):
    return api.post("/api/v1/orders/confirm", body, format="json")


def create(api, key):
    return api.post("/api/v1/orders", {"order_key": key}, format="json")


def test_at_most_max_unpaid_orders_then_409_limit_exceeded(api, make_sku, address, place_order, settings):
    settings.MAX_UNPAID_ORDERS = 3
    sku = make_sku(price_fen=1000, stock=100)
    keys = [confirm(api, items=[{"sku_id": sku.pk, "quantity": 1}]).json()["order_key"] for _ in range(4)]
    created = [create(api, key) for key in keys[:3]]
    assert [r.status_code for r in created] == [201, 201, 201]

    fourth = create(api, keys[3])  # confirmed while there was room: create still refuses
    assert fourth.status_code == 409
    assert fourth.json()["code"] == "limit_exceeded" and fourth.json()["detail"] == {"max_unpaid_orders": 3}
    assert "待支付订单" in fourth.json()["message"]
    refused = confirm(api, items=[{"sku_id": sku.pk, "quantity": 1}])
    assert (refused.status_code, refused.json()["code"]) == (409, "limit_exceeded")
    assert Order.objects.count() == 3 and Sku.objects.get(pk=sku.pk).stock == 97  # the refused one kept nothing

    assert create(api, keys[0]).status_code == 200  # a replay of a created key is not a new order
    cancelled = api.post(f"/api/v1/orders/{created[0].json()['order_no']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert create(api, keys[3]).status_code == 201  # room again
    assert Order.objects.filter(status="unpaid").count() == 3


def test_one_unpaid_consultation_at_a_time(api, consultation, make_sku, address, place_order):
    first = place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[-1])
    second = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=consultation.slots[-2].pk)
    assert (second.status_code, second.json()["code"]) == (409, "limit_exceeded")
    assert second.json()["detail"] == {"max_unpaid_consultations": 1}
    place_order(api, items=[(make_sku(price_fen=500), 1)], address=address)  # goods are still allowed
    assert api.post(f"/api/v1/orders/{first['order_no']}/cancel").status_code == 200
    place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[-2])
    assert Booking.objects.filter(live=True).count() == 1  # the cancelled one is released


def test_booking_closes_before_the_slot_for_confirm_and_create(api, consultation, settings):
    settings.BOOKING_MIN_NOTICE_MINUTES = 120
    slot = consultation.slots[0]
    key = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=slot.pk).json()["order_key"]
    # The shop's notice grows past the time left before the slot (as time passing would do).
    settings.BOOKING_MIN_NOTICE_MINUTES = int((slot.start - timezone.now()).total_seconds() // 60) + 1
    late_create = create(api, key)
    assert (late_create.status_code, late_create.json()["code"]) == (409, "slot_unavailable")
    late_confirm = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=slot.pk)
    assert (late_confirm.status_code, late_confirm.json()["code"]) == (409, "slot_unavailable")
    assert f"{settings.BOOKING_MIN_NOTICE_MINUTES} 分钟" in late_confirm.json()["message"]
    assert Order.objects.count() == Booking.objects.count() == 0
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    # The legacy list is derived from availability: a start inside the notice is not offered.
    listed = api.get(f"/api/v1/teachers/{consultation.teacher.pk}/slots").json()
    assert [s for s in listed if s["id"] == slot.pk and s["available"]] == []
    assert listed and all(dt.datetime.fromisoformat(s["start"]) > slot.start for s in listed)


def test_unpaid_consultation_must_be_paid_before_booking_closes(api, consultation, settings):
    settings.ORDER_PAY_TIMEOUT_MINUTES = 30
    slot = next(s for s in consultation.slots if s.start - timezone.now() > dt.timedelta(minutes=30))
    start = slot.start
    # The shop's notice leaves about 20 minutes to book and pay: less than the pay timeout.
    settings.BOOKING_MIN_NOTICE_MINUTES = int((start - timezone.now()).total_seconds() // 60) - 20
    key = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=slot.pk).json()["order_key"]
    order = create(api, key).json()
    notice = dt.timedelta(minutes=settings.BOOKING_MIN_NOTICE_MINUTES)
    assert dt.datetime.fromisoformat(order["pay_deadline"]) == start - notice
    far = consultation.slots[-1]
    assert api.post(f"/api/v1/orders/{order['order_no']}/cancel").status_code == 200
    key = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=far.pk).json()["order_key"]
    before = timezone.now()
    later = create(api, key).json()
    deadline = dt.datetime.fromisoformat(later["pay_deadline"])
    assert before + dt.timedelta(minutes=30) <= deadline <= timezone.now() + dt.timedelta(minutes=30)


def test_confirm_uses_the_default_address_when_none_is_given(api, customer, make_sku):
    sku = make_sku(price_fen=1000)
    Address.objects.create(
        customer=customer, name="李四", phone="13900000000", province="江苏省", city="南京市", detail="中山路1号"
    )
    home = Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        district="西湖区",
        detail="文三路100号",
        is_default=True,
    )
    response = confirm(api, items=[{"sku_id": sku.pk, "quantity": 1}])
    assert response.status_code == 200
    assert response.json()["address"] == {"id": home.pk, **home.snapshot()}
    order = create(api, response.json()["order_key"]).json()
    assert order["address"]["detail"] == "文三路100号" and order["address"]["name"] == "张三"


def test_confirm_goods_without_any_address_is_400_with_detail_address_id(api, make_sku):
    response = confirm(api, items=[{"sku_id": make_sku().pk, "quantity": 1}])
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and body["detail"] == {"address_id": ["请先添加收货地址"]}
    assert body["message"] == "请先添加收货地址。"


def test_confirm_consultation_takes_no_address(api, consultation, address):
    response = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=consultation.slots[-1].pk)
    assert response.status_code == 200 and response.json()["address"] is None


def test_service_errors_have_chinese_messages(api, make_sku, address):
    sku = make_sku(stock=1)
    short = confirm(api, items=[{"sku_id": sku.pk, "quantity": 2}])
    assert (short.status_code, short.json()["message"]) == (409, "库存不足。")
    expired = create(api, "no-such-key")
    assert (expired.status_code, expired.json()["message"]) == (410, "订单确认已过期，请重新确认订单。")
    with pytest.raises(Exception) as exc:
        orders.order_get(order_no="X", customer_id=1)
    assert exc.value.message == "订单不存在。"

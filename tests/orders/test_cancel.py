"""Cancelling an unpaid order gives back stock, slot, coupon and points exactly once."""

import pytest

from apps.accounts.models import Address, Coupon, Customer
from apps.appointments.models import Booking
from apps.catalog.models import Sku
from apps.orders.models import Order, OrderEvent

pytestmark = pytest.mark.django_db


def test_cancel_restores_stock_slot_coupon_points_once(make_customer, make_api, make_sku, consultation, place_order):
    customer = make_customer(points=1000)
    api = make_api(customer)
    address = Address.objects.create(
        customer=customer, name="李四", phone="13900000000", province="北京市", city="北京市", detail="长安街1号"
    )
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=10000,
        valid_until="2099-01-01T00:00:00+08:00",
    )
    sku = make_sku(price_fen=12800, stock=4)
    goods = place_order(api, items=[(sku, 3)], address=address, coupon_id=coupon.pk, use_points=300)
    slot = consultation.slots[1]
    consult = place_order(api, items=[(consultation.sku, 1)], slot=slot)
    assert Sku.objects.get(pk=sku.pk).stock == 1
    assert Customer.objects.get(pk=customer.pk).points == 700
    assert Coupon.objects.get(pk=coupon.pk).status == "used"
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 1

    for order in (goods, consult):
        response = api.post(f"/api/v1/orders/{order['order_no']}/cancel")
        assert response.status_code == 200
        assert response.json()["status"] == "cancelled"
        again = api.post(f"/api/v1/orders/{order['order_no']}/cancel")
        assert again.status_code == 409
        assert again.json()["code"] == "invalid_state"

    assert Sku.objects.get(pk=sku.pk).stock == 4
    assert Sku.objects.get(pk=consultation.sku.pk).stock == 1000
    assert Customer.objects.get(pk=customer.pk).points == 1000
    assert Coupon.objects.get(pk=coupon.pk).status == "available"
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    assert Booking.objects.filter(live=True).count() == 0  # the booking is released (kept, not live)
    assert OrderEvent.objects.filter(to_status="cancelled").count() == 2


def test_cancel_someone_elses_order_is_404(api, make_api, make_customer, make_sku, address, place_order):
    order = place_order(api, items=[(make_sku(), 1)], address=address)
    response = make_api(make_customer()).post(f"/api/v1/orders/{order['order_no']}/cancel")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"


def test_order_list_and_detail_only_show_own_orders(api, make_api, make_customer, make_sku, address, place_order):
    sku = make_sku(stock=10)
    mine = [place_order(api, items=[(sku, 1)], address=address)["order_no"] for _ in range(3)]
    api.post(f"/api/v1/orders/{mine[0]}/cancel")
    other = make_api(make_customer())
    listing = api.get("/api/v1/orders").json()
    assert listing["count"] == 3
    assert [o["order_no"] for o in listing["results"]] == list(reversed(mine))
    assert api.get("/api/v1/orders?status=cancelled").json()["count"] == 1
    assert api.get("/api/v1/orders?status=bogus").status_code == 400
    assert other.get("/api/v1/orders").json()["count"] == 0
    assert other.get(f"/api/v1/orders/{mine[1]}").status_code == 404
    assert api.get(f"/api/v1/orders/{mine[1]}").json()["lines"][0]["quantity"] == 1


def test_receive_only_from_shipped(api, make_sku, address, place_order):
    from apps.orders import shipments

    order = place_order(api, items=[(make_sku(), 1)], address=address)
    assert api.post(f"/api/v1/orders/{order['order_no']}/receive").status_code == 409
    row = Order.objects.get(order_no=order["order_no"])
    Order.objects.filter(pk=row.pk).update(status="paid")
    row.refresh_from_db()
    assert shipments.order_ship(order=row, actor="staff:test") is True
    response = api.post(f"/api/v1/orders/{order['order_no']}/receive")
    assert response.status_code == 200
    assert response.json()["status"] == "completed"


def test_paid_consultation_completes_after_its_slot(api, consultation, place_order):
    import datetime as dt

    from apps.orders import services

    slot = consultation.slots[0]
    order = place_order(api, items=[(consultation.sku, 1)], slot=slot)
    Order.objects.filter(order_no=order["order_no"]).update(status="paid")
    assert services.orders_complete_held_consultations(now=slot.end - dt.timedelta(minutes=1)) == 0
    assert services.orders_complete_held_consultations(now=slot.end) == 1
    assert services.orders_complete_held_consultations(now=slot.end) == 0
    assert Order.objects.get(order_no=order["order_no"]).status == "completed"


def test_cancel_refusals_say_why_in_chinese_and_change_nothing(
    api, make_customer, make_sku, address, place_order, wechat
):
    from apps.payments import order_lifecycle
    from apps.payments.exceptions import OrderNotCancelled

    sku = make_sku(price_fen=12800, stock=5)
    paid = place_order(api, items=[(sku, 1)], address=address)
    api.post(f"/api/v1/orders/{paid['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(paid["order_no"])  # paid at WeChat; the notification is not delivered yet
    response = api.post(f"/api/v1/orders/{paid['order_no']}/cancel")
    assert response.status_code == 409
    assert response.json() == {
        "code": "invalid_state",
        "message": "该订单已支付，不能取消。",
        "detail": {"status": "paid"},
    }
    assert Order.objects.get(order_no=paid["order_no"]).status == "paid"  # the payment was found and applied
    again = api.post(f"/api/v1/orders/{paid['order_no']}/cancel")
    assert (again.status_code, again.json()["message"]) == (409, "只有待支付的订单可以取消。")
    with pytest.raises(OrderNotCancelled) as refused:
        order_lifecycle.order_cancel(order=Order.objects.get(order_no=paid["order_no"]), actor="staff:t", reason="x")
    assert refused.value.outcome == "raced"
    assert Sku.objects.get(pk=sku.pk).stock == 4

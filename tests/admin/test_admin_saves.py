"""Admin saves write only what staff changed, slot rules are form errors, Shanghai
times, and bulk actions say per order what happened and why."""

import datetime as dt

import pytest
from admin_helpers import action, form_data, request_refund, texts
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.appointments import slots
from apps.appointments.models import Booking, Slot
from apps.catalog.models import Product, Sku
from apps.orders import shipments
from apps.orders.models import Order, OrderEvent
from starmall.errors import InvalidInput, InvalidState

pytestmark = pytest.mark.django_db


# --- (c) a save racing a payment notification -------------------------------------------------


def test_order_page_save_racing_a_payment_notification_keeps_the_payment(
    boss, buyer, goods_sku, place_order, wechat, deliver
):
    customer, api, address = buyer
    order = place_order(api, items=[(goods_sku, 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    row = Order.objects.get(order_no=order["order_no"])
    url = reverse("admin:orders_order_change", args=[row.pk])
    page = boss.get(url)  # staff open the order while it is unpaid
    assert page.status_code == 200 and b'name="_save"' not in page.content
    wechat.control.pay(order["order_no"])
    deliver()  # the notification lands while the page is open
    assert boss.post(url, {**form_data(page), "status": "unpaid"}).status_code == 403  # no save at all
    row = Order.objects.get(pk=row.pk)
    assert (row.status, row.pay_method, row.pay_fen) == ("paid", "wechat", order["pay_fen"])
    assert row.paid_at is not None
    assert list(OrderEvent.objects.filter(order=row).values_list("to_status", flat=True)) == ["unpaid", "paid"]


def test_customer_page_save_racing_a_balance_payment_keeps_balance_and_points(boss, buyer, goods_sku, place_order):
    customer, api, address = buyer
    url = reverse("admin:accounts_customer_change", args=[customer.pk])
    page = boss.get(url)  # balance 1,000,000 fen, 500 points on screen
    assert b'name="balance_fen"' not in page.content and b'name="points"' not in page.content
    order = place_order(api, items=[(goods_sku, 1)], address=address, use_points=100)
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    data = {**form_data(page), "nickname": "老客户", "balance_fen": "1000000", "points": "500"}
    assert boss.post(url, data).status_code == 302
    customer.refresh_from_db()
    assert customer.nickname == "老客户"  # the change staff made is saved ...
    assert customer.balance_fen == 1_000_000 - order["pay_fen"]  # ... and nothing they did not make
    assert customer.points == 400
    ledger = WalletEvent.objects.filter(customer=customer)
    assert sum(ledger.filter(kind="balance").values_list("amount", flat=True)) == -order["pay_fen"]
    assert sum(ledger.filter(kind="points").values_list("amount", flat=True)) == -100


def test_product_page_save_keeps_sales_and_the_skus_stock(boss, buyer, goods_sku, place_order):
    customer, api, address = buyer
    url = reverse("admin:catalog_product_change", args=[goods_sku.product_id])
    page = boss.get(url)  # stock 10, sales 0 on screen
    order = place_order(api, items=[(goods_sku, 2)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    data = form_data(page)
    data["name"] = "青瓷盖碗（新）"
    data["skus-0-price_fen"] = "50.00"  # the inline SKU row is edited too (yuan: 5000 fen)
    assert boss.post(url, data).status_code == 302
    product, sku = Product.objects.get(pk=goods_sku.product_id), Sku.objects.get(pk=goods_sku.pk)
    assert (product.name, product.sales) == ("青瓷盖碗（新）", 2)
    assert (sku.price_fen, sku.stock) == (5000, 8)


def test_coupon_status_is_not_editable(boss, buyer):
    customer, _, _ = buyer
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减10",
        discount_fen=1000,
        min_spend_fen=10000,
        valid_until=timezone.now() + dt.timedelta(days=30),
    )
    url = reverse("admin:accounts_coupon_change", args=[coupon.pk])
    page = boss.get(url)
    assert b'name="status"' not in page.content and b'name="used_order_no"' not in page.content
    data = {**form_data(page), "title": "满100减20", "status": "used", "used_order_no": "X1", "customer": "999"}
    assert boss.post(url, data).status_code == 302
    coupon.refresh_from_db()
    assert (coupon.title, coupon.status, coupon.used_order_no, coupon.customer_id) == (
        "满100减20",
        "available",
        "",
        customer.pk,
    )


# --- (d) slots: capacity below bookings, booked times ------------------------------------------


@pytest.fixture
def booked_slot(buyer, consultation, place_order):
    customer, api, _ = buyer
    slot = consultation.slots[-1]
    place_order(api, items=[(consultation.sku, 1)], slot=slot)
    slot.refresh_from_db()
    assert (slot.capacity, Booking.objects.filter(slot=slot, live=True).count()) == (1, 1)
    return slot


def _slot_row(slot):
    return (
        Slot.objects.filter(pk=slot.pk).values_list("teacher_id", "start", "end", "capacity", "booked", "is_open").get()
    )


def test_capacity_below_bookings_is_a_form_error(boss, booked_slot):
    before = _slot_row(booked_slot)
    url = reverse("admin:appointments_slot_change", args=[booked_slot.pk])
    data = {**form_data(boss.get(url)), "capacity": "0"}
    response = boss.post(url, data)
    assert response.status_code == 200  # the form again, not a 500
    assert "容量不能小于已预约人数（1）" in response.content.decode()
    assert _slot_row(booked_slot) == before


def test_a_booked_slots_time_cannot_be_edited(boss, booked_slot):
    before = _slot_row(booked_slot)
    url = reverse("admin:appointments_slot_change", args=[booked_slot.pk])
    page = boss.get(url)
    assert b'name="start_0"' not in page.content and b'name="teacher"' not in page.content  # shown read-only
    data = {
        **form_data(page),
        "start_0": "2031-01-01",
        "start_1": "09:00:00",
        "end_0": "2031-01-01",
        "end_1": "10:00:00",
        "capacity": "2",
    }
    assert boss.post(url, data).status_code == 302
    after = _slot_row(booked_slot)
    assert after[:3] == before[:3]  # same teacher and times: the customer's appointment did not move
    assert after[3] == 2  # capacity may grow


def test_a_booking_made_while_the_slot_page_was_open_wins(boss, buyer, consultation, place_order):
    customer, api, _ = buyer
    slot = consultation.slots[-2]
    url = reverse("admin:appointments_slot_change", args=[slot.pk])
    page = boss.get(url)  # unbooked: times editable on screen
    assert b'name="start_0"' in page.content
    place_order(api, items=[(consultation.sku, 1)], slot=slot)  # a customer books meanwhile
    before = _slot_row(slot)
    moved = {
        **form_data(page),
        "start_0": "2031-01-01",
        "start_1": "09:00:00",
        "end_0": "2031-01-01",
        "end_1": "10:00:00",
    }
    boss.post(url, moved)
    assert _slot_row(slot) == before
    response = boss.post(url, {**form_data(page), "capacity": "0"})
    assert response.status_code == 200 and "容量不能小于已预约人数（1）" in response.content.decode()
    assert _slot_row(slot) == before


def test_slot_update_repeats_its_guards_in_the_update(booked_slot, consultation):
    before = _slot_row(booked_slot)
    with pytest.raises(InvalidState, match="容量不能小于已预约人数"):
        slots.slot_update(slot_id=booked_slot.pk, capacity=0)
    with pytest.raises(InvalidState, match="不能修改老师或时间"):
        slots.slot_update(
            slot_id=booked_slot.pk,
            start=booked_slot.start + dt.timedelta(hours=1),
            end=booked_slot.end + dt.timedelta(hours=1),
        )
    with pytest.raises(InvalidInput):
        slots.slot_update(slot_id=booked_slot.pk, end=booked_slot.start)
    assert _slot_row(booked_slot) == before
    free = consultation.slots[0]
    with pytest.raises(InvalidInput):  # the teacher already has a slot starting then
        slots.slot_update(slot_id=free.pk, start=consultation.slots[1].start, end=consultation.slots[1].end)
    assert slots.slot_update(slot_id=booked_slot.pk, capacity=3, is_open=False).capacity == 3


def test_moving_an_unbooked_slot_onto_another_is_a_form_error(boss, consultation):
    free, taken = consultation.slots[0], consultation.slots[1]
    url = reverse("admin:appointments_slot_change", args=[free.pk])
    local = timezone.localtime(taken.start)
    data = {
        **form_data(boss.get(url)),
        "start_0": str(local.date()),
        "start_1": local.strftime("%H:%M:%S"),
        "end_0": str(local.date()),
        "end_1": (local + dt.timedelta(hours=1)).strftime("%H:%M:%S"),
    }
    response = boss.post(url, data)
    assert response.status_code == 200 and response.context["adminform"].form.errors
    assert Slot.objects.get(pk=free.pk).start == free.start


# --- (e) Shanghai times -----------------------------------------------------------------------


def test_slot_times_show_in_shanghai_time(boss, booked_slot, consultation):
    nine = next(s for s in consultation.slots if timezone.localtime(s.start).hour == 9)
    day = timezone.localtime(nine.start).date()
    assert nine.start.astimezone(dt.timezone.utc).hour == 1  # stored in UTC: 01:00Z is 09:00 +08:00
    listing = boss.get(reverse("admin:appointments_slot_changelist"), {"teacher__id__exact": nine.teacher_id})
    assert f"{day} 09:00" in listing.content.decode()
    assert f"{day} 01:00" not in listing.content.decode()
    assert str(nine) == f"{nine.teacher} {day} 09:00"
    booked_local = timezone.localtime(booked_slot.start)
    bookings = boss.get(reverse("admin:appointments_booking_changelist")).content.decode()
    assert f"{booked_local:%Y-%m-%d %H:%M}" in bookings


# --- (f) bulk actions: per order, with the reason -----------------------------------------------


def test_bulk_ship_reports_each_order_and_refuses_one_with_a_refund_request(make_staff, buyer, paid_orders):
    customer, api, _ = buyer
    first, waiting, third = paid_orders(3)
    request_refund(api, waiting.order_no)
    client = make_staff("orders.ship_order", "orders.view_order")
    response = action(client, "orders.order", "mark_shipped", [first.pk, waiting.pk, third.pk])
    statuses = dict(Order.objects.values_list("order_no", "status"))
    assert [statuses[o.order_no] for o in (first, waiting, third)] == ["shipped", "paid", "shipped"]
    assert texts(response) == [
        ("success", f"{first.order_no}: 已发货"),
        ("warning", f"{waiting.order_no}: 未发货：有进行中的退款申请"),
        ("success", f"{third.order_no}: 已发货"),
        ("warning", "发货：成功 2 / 共 3"),
    ]
    assert OrderEvent.objects.filter(to_status="shipped").count() == 2


def test_order_ship_refuses_an_order_with_a_waiting_refund_request(buyer, paid_orders):
    from apps.orders.models import AfterSale
    from apps.payments import refunds

    customer, api, _ = buyer
    (order,) = paid_orders(1)
    sale = request_refund(api, order.order_no)
    with pytest.raises(InvalidState) as refused:
        shipments.order_ship(order=order, actor="staff:warehouse")
    assert (refused.value.message, refused.value.detail) == ("有进行中的退款申请", {"refund_no": sale["refund_no"]})
    assert Order.objects.get(pk=order.pk).status == "paid"
    refunds.after_sale_reject(after_sale_id=AfterSale.objects.get(refund_no=sale["refund_no"]).pk, actor="staff:cs")
    assert shipments.order_ship(order=order, actor="staff:warehouse") is True  # decided: ships


def test_bulk_messages_are_red_when_nothing_was_done(make_staff, buyer, goods_sku, place_order):
    customer, api, address = buyer
    unpaid = place_order(api, items=[(goods_sku, 1)], address=address)
    client = make_staff("orders.ship_order", "orders.view_order")
    row = Order.objects.get(order_no=unpaid["order_no"])
    response = action(client, "orders.order", "mark_shipped", [row.pk])
    assert texts(response) == [
        ("warning", f"{row.order_no}: 未发货：订单状态为「待支付」，只有已支付的订单可以发货"),
        ("error", "发货：成功 0 / 共 1"),
    ]
    assert Customer.objects.get(pk=customer.pk).balance_fen == 1_000_000

"""Sequential money/stock/slot scenarios: deadlines, edge prices, refunds, conservation."""

from __future__ import annotations

import datetime as dt

import pytest
from adv_helpers import assert_conserved, assert_error
from django.utils import timezone

from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.appointments.models import Booking, Slot
from apps.catalog.models import Sku
from apps.orders import services as orders
from apps.orders import shipments
from apps.orders.models import AfterSale, Order
from apps.payments import balance, order_lifecycle, refunds
from apps.payments.models import Payment, Refund

pytestmark = pytest.mark.django_db


def _approve_and_run(order_no):
    sale = AfterSale.objects.filter(order__order_no=order_no, status="requested").get()
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:adv")
    status = refunds.refund_execute(refund_id=refund.pk)
    if status == "submitted":
        refunds.refund_succeeded(refund=Refund.objects.get(pk=refund.pk))
    return Refund.objects.get(pk=refund.pk)


# --- the pay deadline ---------------------------------------------------------------------


def test_balance_pay_after_the_pay_deadline_is_refused(shopper, make_sku, place_order):
    """WeChat pay refuses an order whose time ran out (409); balance pay must too, or the
    customer pays for an order the timeout sweep is about to cancel (stock held past its time)."""
    customer, api, address = shopper(balance_fen=50000)
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(api, items=[(sku, 1)], address=address)
    Order.objects.filter(order_no=order["order_no"]).update(pay_deadline=timezone.now() - dt.timedelta(seconds=1))
    wechat_try = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert_error(wechat_try, 409, "invalid_state")
    balance_try = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert_error(balance_try, 409, "invalid_state")
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000
    assert order_lifecycle.order_expire(order_id=Order.objects.get(order_no=order["order_no"]).pk) == "cancelled"
    assert Sku.objects.get(pk=sku.pk).stock == 5
    assert_conserved({sku.pk: 5})


def test_timeout_boundary_is_the_deadline_itself(shopper, make_sku, place_order):
    customer, api, address = shopper()
    sku = make_sku(price_fen=12800, stock=5)
    order = Order.objects.get(order_no=place_order(api, items=[(sku, 2)], address=address)["order_no"])
    just_before = order.pay_deadline - dt.timedelta(microseconds=1)
    assert order_lifecycle.order_expire(order_id=order.pk, now=just_before) == "not_due"
    assert order_lifecycle.orders_expire_due(now=just_before) == {}
    assert order_lifecycle.order_expire(order_id=order.pk, now=order.pay_deadline) == "cancelled"
    assert order_lifecycle.order_expire(order_id=order.pk, now=order.pay_deadline) == "not_unpaid"
    assert Sku.objects.get(pk=sku.pk).stock == 5
    assert_conserved({sku.pk: 5})


def test_order_times_are_shanghai_with_offset(shopper, make_sku, place_order):
    customer, api, address = shopper()
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    for field in ("created_at", "pay_deadline"):
        assert order[field].endswith("+08:00"), order[field]
    deadline = dt.datetime.fromisoformat(order["pay_deadline"])
    created = dt.datetime.fromisoformat(order["created_at"])
    assert dt.timedelta(minutes=29) < deadline - created <= dt.timedelta(minutes=30, seconds=1)


def test_naive_times_are_read_as_shanghai_or_rejected_never_as_utc():
    from apps.payments.wechat import parse_time_end

    paid_at = parse_time_end("20261130120000")
    assert paid_at.utcoffset() == dt.timedelta(hours=8)
    assert paid_at.astimezone(dt.timezone.utc).hour == 4
    assert parse_time_end("20261330120000") is None and parse_time_end("") is None


def test_slot_generation_with_a_naive_now_is_shanghai_or_rejected(db, consultation):
    from apps.appointments.slots import slots_generate

    naive = dt.datetime(2031, 3, 3, 8, 30)  # 08:30 in Shanghai: the 9 o'clock slot is still ahead
    try:
        slots_generate(now=naive, days=1)
    except (ValueError, TypeError):
        return  # rejected: fine
    starts = sorted(
        timezone.localtime(s).hour
        for s in Slot.objects.filter(start__date=dt.date(2031, 3, 3)).values_list("start", flat=True)
    )
    assert starts and starts[0] == 9, starts


# --- prices at the edges ------------------------------------------------------------------


def test_free_consultation_never_charges_zero_and_never_500s(shopper, consultation):
    """order_confirm's contract: pay_fen never drops below 1 fen (WeChat's minimum); the
    model allows a price of 0 (a free first consultation), so confirm must refuse it or charge
    at least 1 fen — and balance pay must not crash on it."""
    Sku.objects.filter(pk=consultation.sku.pk).update(price_fen=0)
    customer, api, _ = shopper(balance_fen=1000)
    confirm = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": consultation.sku.pk, "quantity": 1}], "slot_id": consultation.slots[0].pk},
        format="json",
    )
    if confirm.status_code != 200:
        assert_error(confirm)
        return
    created = api.post("/api/v1/orders", {"order_key": confirm.json()["order_key"]}, format="json")
    assert created.status_code == 201
    paid = api.post(f"/api/v1/orders/{created.json()['order_no']}/pay", {"method": "balance"}, format="json")
    assert paid.status_code < 500, (paid.status_code, confirm.json()["pay_fen"])
    assert confirm.json()["pay_fen"] >= 1, confirm.json()


def test_free_consultation_with_a_coupon_is_never_a_500(shopper, consultation):
    """A coupon on a 0-fen order gives coupon_fen = min(discount, 0 - 1) = -1 at confirm; create
    then hits the PositiveIntegerField CHECK and answers 500 (IntegrityError re-raised)."""
    Sku.objects.filter(pk=consultation.sku.pk).update(price_fen=0)
    customer, api, _ = shopper()
    coupon = Coupon.objects.create(
        customer=customer, title="减5", discount_fen=500, valid_until=timezone.now() + dt.timedelta(days=30)
    )
    confirm = api.post(
        "/api/v1/orders/confirm",
        {
            "items": [{"sku_id": consultation.sku.pk, "quantity": 1}],
            "slot_id": consultation.slots[0].pk,
            "coupon_id": coupon.pk,
        },
        format="json",
    )
    if confirm.status_code == 200:
        draft = confirm.json()
        created = api.post("/api/v1/orders", {"order_key": draft["order_key"]}, format="json")
        assert created.status_code < 500, (created.status_code, draft)
        assert min(draft["coupon_fen"], draft["points_fen"], draft["pay_fen"]) >= 0, draft
    else:
        assert_error(confirm)
    assert_conserved({consultation.sku.pk: 1000})


def test_coupon_and_points_can_never_push_pay_below_one_fen(shopper, make_sku, place_order):
    customer, api, address = shopper(points=10**9)
    sku = make_sku(price_fen=500, stock=5)  # 5 yuan + 10 yuan freight
    coupon = Coupon.objects.create(
        customer=customer, title="大额", discount_fen=10**8, valid_until=timezone.now() + dt.timedelta(days=1)
    )
    order = place_order(api, items=[(sku, 1)], address=address, coupon_id=coupon.pk, use_points=True)
    assert order["pay_fen"] == 1
    assert order["coupon_fen"] + order["points_fen"] == 500 + 1000 - 1
    assert Customer.objects.get(pk=customer.pk).points == 10**9 - order["points_fen"]


def test_product_taken_off_sale_after_confirm_is_not_sold(shopper, make_sku):
    """Confirm refuses an item whose product is inactive (404 "no longer on sale"); a draft made
    just before staff took the product off sale must not become an order either (an inactive
    SKU already is refused at create: the same must hold for an inactive product)."""
    customer, api, address = shopper()
    sku = make_sku(price_fen=12800, stock=5)
    confirm = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": sku.pk, "quantity": 1}], "address_id": address.pk},
        format="json",
    )
    assert confirm.status_code == 200
    sku.product.is_active = False
    sku.product.save()
    created = api.post("/api/v1/orders", {"order_key": confirm.json()["order_key"]}, format="json")
    assert_error(created)
    assert Order.objects.count() == 0
    assert Sku.objects.get(pk=sku.pk).stock == 5


def test_sku_taken_off_sale_after_confirm_is_not_sold(shopper, make_sku):
    customer, api, address = shopper()
    sku = make_sku(price_fen=12800, stock=5)
    confirm = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": sku.pk, "quantity": 1}], "address_id": address.pk},
        format="json",
    )
    Sku.objects.filter(pk=sku.pk).update(is_active=False)
    created = api.post("/api/v1/orders", {"order_key": confirm.json()["order_key"]}, format="json")
    assert_error(created, 409, "insufficient_stock")
    assert Order.objects.count() == 0 and Sku.objects.get(pk=sku.pk).stock == 5


def test_slot_closed_after_confirm_is_not_booked(shopper, consultation):
    customer, api, _ = shopper()
    slot = consultation.slots[0]
    confirm = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": consultation.sku.pk, "quantity": 1}], "slot_id": slot.pk},
        format="json",
    )
    Slot.objects.filter(pk=slot.pk).update(is_open=False)
    created = api.post("/api/v1/orders", {"order_key": confirm.json()["order_key"]}, format="json")
    assert_error(created, 409, "slot_unavailable")
    assert Booking.objects.count() == 0 and Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    assert_conserved({consultation.sku.pk: 1000})


def test_points_spent_elsewhere_after_confirm_roll_the_whole_create_back(shopper, make_sku, place_order):
    customer, api, address = shopper(points=300)
    sku = make_sku(price_fen=12800, stock=5)
    first = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": sku.pk, "quantity": 1}], "address_id": address.pk, "use_points": 300},
        format="json",
    ).json()
    place_order(api, items=[(sku, 1)], address=address, use_points=200)  # spends 200 of the 300
    created = api.post("/api/v1/orders", {"order_key": first["order_key"]}, format="json")
    assert_error(created, 409)
    assert Order.objects.count() == 1
    assert Customer.objects.get(pk=customer.pk).points == 100
    assert_conserved({sku.pk: 5})


# --- refunds --------------------------------------------------------------------------------


@pytest.fixture
def paid_with_points(shopper, make_sku, place_order):
    """A goods order (2 x 60 yuan) paid from the balance after spending 300 points."""
    customer, api, address = shopper(balance_fen=100000, points=300)
    sku = make_sku(price_fen=6000, stock=10)
    order = place_order(api, items=[(sku, 2)], address=address, use_points=300)
    assert order["pay_fen"] == 12000 - 300
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    return customer, api, sku, order


def test_full_refund_of_unshipped_order_returns_stock_and_points(paid_with_points):
    customer, api, sku, order = paid_with_points
    assert api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "r"}, format="json").status_code == 202
    _approve_and_run(order["order_no"])
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    customer.refresh_from_db()
    assert (customer.balance_fen, customer.points) == (100000, 300)
    assert Sku.objects.get(pk=sku.pk).stock == 10
    assert_conserved({sku.pk: 10})


def test_full_refund_of_shipped_order_returns_the_points_spent(paid_with_points):
    """README: "A full refund returns stock (unless shipped), the slot and the points spent." The
    shipped order keeps its stock out, but the 300 points the customer spent must come back
    together with the money, as they do for an unshipped order."""
    customer, api, sku, order = paid_with_points
    assert shipments.order_ship(order=Order.objects.get(order_no=order["order_no"]), actor="staff:adv")
    assert api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "r"}, format="json").status_code == 202
    _approve_and_run(order["order_no"])
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    customer.refresh_from_db()
    assert customer.balance_fen == 100000
    assert Sku.objects.get(pk=sku.pk).stock == 8  # the goods left: not restocked
    assert customer.points == 300, "points spent on a fully refunded order were not returned"


def test_partial_refunds_never_exceed_paid_and_make_it_whole_once(paid_with_points):
    customer, api, sku, order = paid_with_points
    no = order["order_no"]
    paid = order["pay_fen"]
    assert api.post(f"/api/v1/orders/{no}/refund", {"reason": "r", "amount_fen": 1}, format="json").status_code == 202
    _approve_and_run(no)
    assert_error(
        api.post(f"/api/v1/orders/{no}/refund", {"reason": "r", "amount_fen": paid}, format="json"), 400, "invalid"
    )
    assert (
        api.post(f"/api/v1/orders/{no}/refund", {"reason": "r", "amount_fen": paid - 2}, format="json").status_code
        == 202
    )
    _approve_and_run(no)
    assert Order.objects.get(order_no=no).status == "paid"
    last = api.post(f"/api/v1/orders/{no}/refund", {"reason": "r"}, format="json")
    assert last.status_code == 202 and last.json()["amount_fen"] == 1
    _approve_and_run(no)
    assert Order.objects.get(order_no=no).status == "refunded"
    # The same request again is a retry: it returns the refund that made the order whole.
    replay = api.post(f"/api/v1/orders/{no}/refund", {"reason": "r"}, format="json")
    assert replay.status_code == 202 and replay.json() == {**last.json(), "status": "refunded"}
    # Any other request finds nothing left to refund.
    assert_error(api.post(f"/api/v1/orders/{no}/refund", {"reason": "again"}, format="json"), 409, "invalid_state")
    assert_error(api.post(f"/api/v1/orders/{no}/refund", {"reason": "again", "amount_fen": 1}, format="json"), 409)
    assert Payment.objects.get(order__order_no=no).refunded_fen == paid
    assert Customer.objects.get(pk=customer.pk).balance_fen == 100000
    assert sum(WalletEvent.objects.filter(customer=customer, kind="balance").values_list("amount", flat=True)) == 0
    assert_conserved({sku.pk: 10})


def test_refund_request_while_a_full_refund_is_in_flight_is_409(paid_with_points):
    customer, api, sku, order = paid_with_points
    no = order["order_no"]
    assert api.post(f"/api/v1/orders/{no}/refund", {"reason": "r"}, format="json").status_code == 202
    sale = AfterSale.objects.get(order__order_no=no)
    refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:adv")  # refunding, not executed
    assert Order.objects.get(order_no=no).status == "refunding"
    assert_error(api.post(f"/api/v1/orders/{no}/refund", {"reason": "r", "amount_fen": 5}, format="json"), 409)
    assert AfterSale.objects.filter(order__order_no=no).count() == 1


def test_staff_approval_twice_and_reject_after_approve_change_nothing(paid_with_points):
    customer, api, sku, order = paid_with_points
    no = order["order_no"]
    api.post(f"/api/v1/orders/{no}/refund", {"reason": "r", "amount_fen": 500}, format="json")
    sale = AfterSale.objects.get(order__order_no=no)
    assert refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:a") is not None
    assert refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:b") is None
    assert refunds.after_sale_reject(after_sale_id=sale.pk, actor="staff:c") is False
    assert Payment.objects.get(order__order_no=no).refunded_fen == 500
    assert Refund.objects.count() == 1


def test_consultation_refund_returns_the_slot_once_and_it_can_be_booked_again(shopper, consultation, place_order):
    customer, api, _ = shopper(balance_fen=100000)
    slot = consultation.slots[-1]  # days ahead: auto-approved
    order = place_order(api, items=[(consultation.sku, 1)], slot=slot)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    response = api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "r"}, format="json")
    assert response.status_code == 202 and response.json()["status"] in ("approved", "refunded")
    refund = Refund.objects.get()
    refunds.refund_execute(refund_id=refund.pk)
    refunds.refund_execute(refund_id=refund.pk)
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    assert Customer.objects.get(pk=customer.pk).balance_fen == 100000
    other, other_api, _ = shopper()
    place_order(other_api, items=[(consultation.sku, 1)], slot=slot)
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 1
    assert_conserved({consultation.sku.pk: 1000})


def test_journey_conserves_stock_slots_and_money(shopper, make_sku, consultation, place_order, wechat, deliver):
    """Many paths through the shop, then every invariant at once."""
    sku = make_sku(price_fen=4500, stock=20)
    rich, api, address = shopper(balance_fen=10**6, points=1000)
    poor, papi, paddr = shopper(balance_fen=100)
    # 1 cancelled by the customer (coupon + points back)
    coupon = Coupon.objects.create(
        customer=rich, title="减10", discount_fen=1000, valid_until=timezone.now() + dt.timedelta(days=3)
    )
    o1 = place_order(api, items=[(sku, 3)], address=address, coupon_id=coupon.pk, use_points=100)
    assert api.post(f"/api/v1/orders/{o1['order_no']}/cancel").status_code == 200
    # 2 paid by WeChat, notification delivered twice
    o2 = place_order(api, items=[(sku, 2)], address=address, coupon_id=coupon.pk)
    api.post(f"/api/v1/orders/{o2['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(o2["order_no"])
    deliver()
    deliver(wechat.control.notifications()[0]["id"])
    # 3 expired, then paid late at WeChat: refunded
    o3 = place_order(papi, items=[(sku, 1)], address=paddr)
    papi.post(f"/api/v1/orders/{o3['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(o3["order_no"])
    assert orders.order_mark_cancelled(
        order=Order.objects.get(order_no=o3["order_no"]), actor="system:adv", reason="race"
    )
    deliver()
    # 4 balance-paid, shipped, partially refunded
    o4 = place_order(api, items=[(sku, 4)], address=address, use_points=True)
    api.post(f"/api/v1/orders/{o4['order_no']}/pay", {"method": "balance"}, format="json")
    shipments.order_ship(order=Order.objects.get(order_no=o4["order_no"]), actor="staff:adv")
    api.post(f"/api/v1/orders/{o4['order_no']}/refund", {"reason": "r", "amount_fen": 1000}, format="json")
    _approve_and_run(o4["order_no"])
    # 5 consultation paid by balance and fully refunded (auto)
    o5 = place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[-1])
    api.post(f"/api/v1/orders/{o5['order_no']}/pay", {"method": "balance"}, format="json")
    api.post(f"/api/v1/orders/{o5['order_no']}/refund", {"reason": "r"}, format="json")
    refunds.refunds_sweep()
    # 6 insufficient balance: stays unpaid, then times out
    o6 = place_order(papi, items=[(sku, 1)], address=paddr)
    assert_error(papi.post(f"/api/v1/orders/{o6['order_no']}/pay", {"method": "balance"}, format="json"), 409)
    order_lifecycle.orders_expire_due(now=timezone.now() + dt.timedelta(hours=1))
    # 7 WeChat-paid and fully refunded through WeChat, notification delivered
    o7 = place_order(api, items=[(sku, 2)], address=address)
    api.post(f"/api/v1/orders/{o7['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(o7["order_no"])
    deliver()
    api.post(f"/api/v1/orders/{o7['order_no']}/refund", {"reason": "r"}, format="json")
    sale = AfterSale.objects.get(order__order_no=o7["order_no"])
    refunds.refund_execute(refund_id=refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:adv").pk)
    refunds.refunds_sweep()  # the late-payment refund of o3 too
    deliver()

    statuses = {o["order_no"]: Order.objects.get(order_no=o["order_no"]).status for o in (o1, o2, o3, o4, o5, o6, o7)}
    assert list(statuses.values()) == ["cancelled", "paid", "cancelled", "shipped", "refunded", "cancelled", "refunded"]
    assert Coupon.objects.get(pk=coupon.pk).used_order_no == o2["order_no"]
    assert Refund.objects.filter(reason="late_payment", status="success").count() == 1
    assert Customer.objects.get(pk=poor.pk).balance_fen == 100
    wx_in = sum(t.total_fee for t in wechat.state.trades.values() if t.trade_state in ("SUCCESS", "REFUND"))
    wx_out = sum(r["refund_fee"] for r in wechat.control.refunds() if r["refund_status"] == "SUCCESS")
    kept = o2["pay_fen"]
    assert wx_in - wx_out == kept
    assert_conserved({sku.pk: 20, consultation.sku.pk: 1000})


# --- totals beyond the database columns -----------------------------------------------------


@pytest.mark.postgres
def test_order_total_beyond_the_int_columns_is_a_4xx_not_a_500(shopper, make_sku):
    """999 x 30 000 yuan = 2 997 000 000 fen > 2**31 - 1: Order.goods_fen / pay_fen and
    Payment.total_fee are 32-bit integers on PostgreSQL. Confirm prices it happily; create must
    refuse it cleanly (or store it), never answer 500."""
    customer, api, address = shopper()
    sku = make_sku(price_fen=3_000_000, stock=1000)
    confirm = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": sku.pk, "quantity": 999}], "address_id": address.pk},
        format="json",
    )
    if confirm.status_code != 200:
        assert_error(confirm)
        return
    created = api.post("/api/v1/orders", {"order_key": confirm.json()["order_key"]}, format="json")
    if created.status_code != 201:
        assert_error(created)
        assert Sku.objects.get(pk=sku.pk).stock == 1000
    assert_conserved({sku.pk: 1000})


# --- a WeChat trade born while the order is being cancelled / paid otherwise -----------------


@pytest.mark.parametrize("other_tab", ["cancel", "balance"])
def test_unified_order_in_flight_while_the_order_is_cancelled_or_balance_paid(
    shopper, make_sku, place_order, wechat, monkeypatch, other_tab
):
    """The customer taps "WeChat pay" and, while the shop's unifiedorder call is in flight, the
    order is cancelled (or paid from the balance) in another tab. The cancel asks WeChat first
    (ORDERNOTEXIST: nothing to close) and marks the payment closed; then unifiedorder creates
    the trade at WeChat. The shop's ``UPDATE payment SET prepay_id ... WHERE status IN open``
    hits 0 rows — and its row count is ignored: the customer still gets pay parameters for a
    live trade of a cancelled/paid order and can be charged (refunded later, if all goes well).
    Correct: 409 and the trade closed (DESIGN: a conditional UPDATE's row count decides)."""
    from apps.payments import wechat as wechat_api
    from wechat_sandbox.client import SandboxControlError

    customer, api, address = shopper(balance_fen=50000)
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(api, items=[(sku, 1)], address=address)
    no = order["order_no"]
    real = wechat_api.unified_order
    fired = []

    def in_flight(**kwargs):
        if not fired:
            fired.append(True)
            if other_tab == "cancel":
                assert (
                    order_lifecycle.order_cancel(
                        order=Order.objects.get(order_no=no), actor="customer", reason="other tab"
                    ).status
                    == "cancelled"
                )
            else:
                balance.payment_balance_pay(order_no=no, customer_id=customer.pk)
        return real(**kwargs)

    monkeypatch.setattr(wechat_api, "unified_order", in_flight)
    response = api.post(f"/api/v1/orders/{no}/pay", {"method": "wechat"}, format="json")
    monkeypatch.setattr(wechat_api, "unified_order", real)
    assert fired
    expected_status = "cancelled" if other_tab == "cancel" else "paid"
    assert Order.objects.get(order_no=no).status == expected_status
    payable = [t for t in wechat.state.trades.values() if t.trade_state in ("NOTPAY", "USERPAYING")]
    if payable:
        try:
            wechat.control.pay(payable[0].out_trade_no)
            charged = True
        except SandboxControlError:
            charged = False
    else:
        charged = False
    assert response.status_code == 409 and not charged, (
        f"pay answered {response.status_code}; the customer could pay a {expected_status} order: {charged}"
    )


def test_balance_paid_order_with_a_duplicate_wechat_payment_can_still_be_refunded(
    shopper, make_sku, place_order, raw_client
):
    """Paid from the balance; a WeChat payment for the same order arrives as well (its refund is
    queued automatically). The customer then asks for the after-sale refund of what they paid:
    the balance payment. ``paying_payment`` picks the earliest ``paid_at`` — but a WeChat
    payment's paid_at is WeChat's ``time_end`` (its clock, whole seconds), so the duplicate,
    already fully reserved for its own refund, can be taken for the order's payment and the
    customer is told nothing can be refunded. The payment that paid is the one of
    ``order.pay_method``."""
    from adv_helpers import is_ack_success, notify_fields, post_notify, signed_body

    customer, api, address = shopper(balance_fen=50000)
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(api, items=[(sku, 1)], address=address)
    no = order["order_no"]
    api.post(f"/api/v1/orders/{no}/pay", {"method": "wechat"}, format="json")
    assert api.post(f"/api/v1/orders/{no}/pay", {"method": "balance"}, format="json").status_code == 200
    same_second = timezone.localtime(Order.objects.get(order_no=no).paid_at).strftime("%Y%m%d%H%M%S")
    body = signed_body(notify_fields(no, 12800, time_end=same_second))
    assert is_ack_success(post_notify(raw_client, body))
    assert list(Refund.objects.values_list("reason", flat=True)) == ["duplicate_payment"]

    response = api.post(f"/api/v1/orders/{no}/refund", {"reason": "不要了"}, format="json")
    assert response.status_code == 202, response.json()
    assert response.json()["amount_fen"] == 12800
    _approve_and_run(no)
    refunds.refunds_sweep()
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000
    assert_conserved({sku.pk: 5})


def test_order_create_throttle_is_429_in_the_error_format(shopper, settings):
    customer, api, address = shopper()
    codes = [api.post("/api/v1/orders", {"order_key": "0" * 32}, format="json").status_code for _ in range(31)]
    assert set(codes[:30]) == {410}
    body = assert_error(api.post("/api/v1/orders", {"order_key": "0" * 32}, format="json"), 429, "throttled")
    assert body["detail"].get("retry_after_seconds", 1) > 0

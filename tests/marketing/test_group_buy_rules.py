"""拼团's refusals per API.md and the give-back of seats and units (stock conserved)."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.catalog.models import Sku
from apps.marketing.models import Group, GroupBuy, GroupSeat
from apps.orders.models import Order
from apps.payments import group_refunds, order_lifecycle
from apps.payments import services as payments
from apps.payments.applied import Applied
from apps.payments.models import Payment, Refund

pytestmark = pytest.mark.django_db


def _opened(shopper, group_order, wechat_pay, activity, pay=True):
    customer, api = shopper()
    _, created = group_order(api, activity.sku, group_buy_id=activity.pk)
    assert created.status_code == 201, created.json()
    if pay:
        wechat_pay(api, created.json()["order_no"])
    return customer, api, created.json()


def _conserved(activity, initial_sku_stock, quota):
    """SKU stock + units in live orders = initial; activity stock + sold = its quota (running)."""
    activity = GroupBuy.objects.get(pk=activity.pk)
    live_units = (
        sum(
            Order.objects.filter(group__activity=activity)
            .exclude(status="cancelled")
            .exclude(status="refunded")
            .values_list("goods_fen", flat=True)
        )
        // activity.price_fen
    )
    assert Sku.objects.get(pk=activity.sku_id).stock + live_units == initial_sku_stock
    assert activity.stock + activity.sold == quota
    assert activity.sold == live_units


def test_refusals(shopper, group_order, wechat_pay, make_group_buy, make_sku, make_api):
    activity = make_group_buy(stock=1, size=2, limit=1)
    _, api = shopper()
    cases = [
        ({"group_buy_id": 999999}, 404, "not_found"),
        ({"group_id": 999999}, 404, "not_found"),
        ({"group_buy_id": activity.pk, "flash_sale_id": 1}, 400, "invalid"),
    ]
    for extra, status, code in cases:
        confirmed, _ = group_order(api, activity.sku, **extra)
        assert (confirmed.status_code, confirmed.json()["code"]) == (status, code), extra
    confirmed, _ = group_order(api, make_sku(), group_buy_id=activity.pk)
    assert (confirmed.status_code, confirmed.json()["code"]) == (400, "invalid")
    confirmed, _ = group_order(api, activity.sku, quantity=2, group_buy_id=activity.pk)
    assert (confirmed.status_code, confirmed.json()["code"]) == (409, "insufficient_stock")
    upcoming = make_group_buy(starts_in=60)
    confirmed, _ = group_order(api, upcoming.sku, group_buy_id=upcoming.pk)
    assert (confirmed.status_code, confirmed.json()["code"]) == (409, "invalid_state")

    leader, leader_api, order = _opened(shopper, group_order, wechat_pay, activity)
    group_id = order["group"]["group_id"]
    own, _ = group_order(leader_api, activity.sku, group_id=group_id)  # a leader joining their own group
    assert (own.status_code, own.json()["code"]) == (409, "invalid_state")
    sold_out, _ = group_order(api, activity.sku, group_id=group_id)  # the activity's only unit is the leader's
    assert (sold_out.status_code, sold_out.json()["code"]) == (409, "insufficient_stock")
    anonymous = make_api(None)
    assert anonymous.get(f"/api/v1/groups/{group_id}").json()["members"][0]["leader"] is True
    assert anonymous.get("/api/v1/groups/999999").json()["code"] == "not_found"
    assert anonymous.get("/api/v1/group-buys/999999/groups").json()["code"] == "not_found"
    assert anonymous.get("/api/v1/group-buys?status=later").json()["code"] == "invalid"
    assert [g["id"] for g in anonymous.get("/api/v1/group-buys?status=upcoming").json()] == [upcoming.pk]


def test_limit_per_customer_over_live_seats(shopper, group_order, wechat_pay, make_group_buy):
    activity = make_group_buy(stock=10, size=2, limit=1)
    customer, api, _ = _opened(shopper, group_order, wechat_pay, activity, pay=False)
    again, _ = group_order(api, activity.sku, group_buy_id=activity.pk)
    assert (again.status_code, again.json()["code"]) == (409, "limit_exceeded")
    coupon, _ = group_order(api, activity.sku, group_buy_id=activity.pk, coupon_id=1)
    assert (coupon.status_code, coupon.json()["code"]) == (409, "coupon_unavailable")


def test_cancelled_seat_is_given_back_and_the_customer_may_join_again(
    shopper, group_order, wechat_pay, make_group_buy, group_sku
):
    activity = make_group_buy(stock=10, size=2)
    _, _, order = _opened(shopper, group_order, wechat_pay, activity)
    group_id = order["group"]["group_id"]
    _, joiner_api = shopper()
    _, created = group_order(joiner_api, activity.sku, group_id=group_id)
    joined = created.json()
    assert Group.objects.get(pk=group_id).seats == 2
    _conserved(activity, 20, 10)
    assert joiner_api.post(f"/api/v1/orders/{joined['order_no']}/cancel").status_code == 200
    group = Group.objects.get(pk=group_id)
    assert (group.seats, group.members, group.status) == (1, 1, "forming")
    assert GroupSeat.objects.get(order_no=joined["order_no"]).status == "released"
    _conserved(activity, 20, 10)
    _, created = group_order(joiner_api, activity.sku, group_id=group_id)  # the seat is free again
    assert created.status_code == 201, created.json()
    _conserved(activity, 20, 10)


def test_leader_who_never_pays_fails_the_group(shopper, group_order, wechat_pay, make_group_buy):
    activity = make_group_buy(stock=10, size=2)
    _, api, order = _opened(shopper, group_order, wechat_pay, activity, pay=False)
    unpaid = Order.objects.get(order_no=order["order_no"])
    Order.objects.filter(pk=unpaid.pk).update(pay_deadline=timezone.now() - dt.timedelta(seconds=1))
    order_lifecycle.orders_expire_due()
    group = Group.objects.get(pk=order["group"]["group_id"])
    assert (group.status, group.seats, group.ended_by) == ("failed", 0, "团长未付款")
    _conserved(activity, 20, 10)
    assert api.get(f"/api/v1/groups/{group.pk}").json()["status"] == "failed"


def test_simulated_completion_with_the_minimum_paid(
    shopper, group_order, wechat_pay, make_group_buy, django_capture_on_commit_callbacks
):
    activity = make_group_buy(stock=10, size=3, hours=1, simulate=True, simulate_min=2)
    _, _, order = _opened(shopper, group_order, wechat_pay, activity)
    group_id = order["group"]["group_id"]
    _, member_api = shopper()
    _, created = group_order(member_api, activity.sku, group_id=group_id)
    wechat_pay(member_api, created.json()["order_no"])
    _, unpaid_api = shopper()
    _, created = group_order(unpaid_api, activity.sku, group_id=group_id)
    unpaid = created.json()
    later = timezone.now() + dt.timedelta(hours=1, seconds=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert group_refunds.groups_end_due(now=later)["done"] == 1
    group = Group.objects.get(pk=group_id)
    assert (group.status, group.members) == ("done", 2) and group.ended_by.startswith("模拟成团")
    assert Order.objects.get(order_no=unpaid["order_no"]).status == "cancelled"
    assert Refund.objects.count() == 0
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    _conserved(activity, 20, 10)


def test_simulated_completion_below_the_minimum_fails(
    shopper, group_order, wechat_pay, make_group_buy, django_capture_on_commit_callbacks
):
    activity = make_group_buy(stock=10, size=3, hours=1, simulate=True, simulate_min=2)
    _, _, order = _opened(shopper, group_order, wechat_pay, activity)
    later = timezone.now() + dt.timedelta(hours=1, seconds=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert group_refunds.groups_end_due(now=later)["failed"] == 1
    assert Refund.objects.filter(order__order_no=order["order_no"]).count() == 1


def test_late_payment_on_a_failed_groups_cancelled_order_is_refunded(
    shopper, group_order, wechat_pay, make_group_buy, wechat, deliver, django_capture_on_commit_callbacks
):
    activity = make_group_buy(stock=10, size=2, hours=1)
    _, _, order = _opened(shopper, group_order, wechat_pay, activity)
    _, joiner_api = shopper()
    _, created = group_order(joiner_api, activity.sku, group_id=order["group"]["group_id"])
    joined = created.json()
    assert (
        joiner_api.post(f"/api/v1/orders/{joined['order_no']}/pay", {"method": "wechat"}, format="json").status_code
        == 200
    )
    later = timezone.now() + dt.timedelta(hours=1, seconds=1)
    with django_capture_on_commit_callbacks(execute=True):
        group_refunds.groups_end_due(now=later)
    assert Order.objects.get(order_no=joined["order_no"]).status == "cancelled"
    # A payment WeChat reports anyway (its trade was closed at cancel) is a late payment: refunded once
    payment = Payment.objects.get(order__order_no=joined["order_no"])
    with django_capture_on_commit_callbacks(execute=True):
        first = payments.payment_apply_paid(
            payment=payment, transaction_id="4200000000201", paid_at=later, actor="wechat"
        )
        again = payments.payment_apply_paid(
            payment=payment, transaction_id="4200000000201", paid_at=later, actor="wechat"
        )
    assert (first, again) == (Applied.LATE, Applied.DUPLICATE)
    assert Order.objects.get(order_no=joined["order_no"]).status == "cancelled"
    assert Refund.objects.filter(order__order_no=joined["order_no"], reason="late_payment").count() == 1
    assert Refund.objects.filter(order__order_no=order["order_no"]).count() == 1
    assert GroupSeat.objects.get(order_no=joined["order_no"]).status == "released"
    _conserved(activity, 20, 10)

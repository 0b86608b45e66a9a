"""拼团 through the API: open, join, complete in the paying transaction, fail and refund once."""

import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.catalog.models import Sku
from apps.marketing.models import Group, GroupBuy, GroupSeat
from apps.orders.models import AfterSale, Order
from apps.payments import group_refunds, refunds
from apps.payments.models import Refund

pytestmark = pytest.mark.django_db


def _open(shopper, group_order, wechat_pay, activity, pay=True):
    leader, api = shopper()
    confirmed, created = group_order(api, activity.sku, group_buy_id=activity.pk)
    assert created.status_code == 201, (confirmed.json(), created and created.json())
    order = created.json()
    if pay:
        wechat_pay(api, order["order_no"])
    return leader, api, order


def _state(activity):
    activity = GroupBuy.objects.get(pk=activity.pk)
    return activity.stock, activity.sold, Sku.objects.get(pk=activity.sku_id).stock


def test_two_person_group_completes_in_the_paying_transaction(shopper, group_order, wechat_pay, make_group_buy):
    activity = make_group_buy(stock=10, size=2, hours=24)
    leader, leader_api, order = _open(shopper, group_order, wechat_pay, activity, pay=False)
    assert order["group"]["status"] == "forming" and order["group"]["expires_at"] is None
    assert order["pay_fen"] == 6000 + order["freight_fen"] and order["lines"][0]["price_fen"] == 6000
    assert _state(activity) == (9, 1, 19)
    group_id = order["group"]["group_id"]
    # nobody joins before the leader paid
    _, joiner_api = shopper()
    refused, _ = group_order(joiner_api, activity.sku, group_id=group_id)
    assert (refused.status_code, refused.json()["code"]) == (409, "invalid_state")

    wechat_pay(leader_api, order["order_no"])
    group = Group.objects.get(pk=group_id)
    assert (group.status, group.members, group.seats) == ("forming", 1, 1)
    paid_at = Order.objects.get(order_no=order["order_no"]).paid_at
    assert group.expires_at == paid_at + dt.timedelta(hours=24)
    listed = leader_api.get(f"/api/v1/group-buys/{activity.pk}/groups").json()
    assert [g["group_id"] for g in listed] == [group_id] and listed[0]["members"] == 1

    _, created = group_order(joiner_api, activity.sku, group_id=group_id)
    assert created.status_code == 201, created.json()
    joined = created.json()
    assert joined["group"]["members"] == 1  # an unpaid seat is not a member
    third, third_api = shopper()
    refused, _ = group_order(third_api, activity.sku, group_id=group_id)
    assert (refused.status_code, refused.json()["code"]) == (409, "invalid_state")  # full
    # shipping waits for the group
    from apps.orders import shipments
    from starmall.errors import InvalidState

    with pytest.raises(InvalidState, match="拼团"):
        shipments.order_ship(order=Order.objects.get(order_no=order["order_no"]), actor="staff:t")

    wechat_pay(joiner_api, joined["order_no"])
    group.refresh_from_db()
    assert (group.status, group.members, group.seats) == ("done", 2, 2)
    assert group.done_at == Order.objects.get(order_no=joined["order_no"]).paid_at
    page = third_api.get(f"/api/v1/groups/{group_id}").json()
    assert page["status"] == "done" and [m["leader"] for m in page["members"]] == [True, False]
    assert leader_api.get(f"/api/v1/orders/{order['order_no']}").json()["group"]["status"] == "done"
    assert shipments.order_ship(order=Order.objects.get(order_no=order["order_no"]), actor="staff:t")
    assert _state(activity) == (8, 2, 18)


def test_failed_group_refunds_each_paid_member_once_and_gives_units_back(
    shopper, group_order, wechat_pay, make_group_buy, wechat, deliver, django_capture_on_commit_callbacks
):
    activity = make_group_buy(stock=10, size=3, hours=1)
    leader, leader_api, order = _open(shopper, group_order, wechat_pay, activity)
    group_id = order["group"]["group_id"]
    _, member_api = shopper()
    _, created = group_order(member_api, activity.sku, group_id=group_id)
    member_order = created.json()
    wechat_pay(member_api, member_order["order_no"])
    _, unpaid_api = shopper()
    _, created = group_order(unpaid_api, activity.sku, group_id=group_id)
    unpaid_order = created.json()
    assert _state(activity) == (7, 3, 17)
    assert group_refunds.groups_end_due()["failed"] == 0  # not due yet

    later = timezone.now() + dt.timedelta(hours=1, seconds=1)
    with django_capture_on_commit_callbacks(execute=True):
        first = group_refunds.groups_end_due(now=later)
        second = group_refunds.groups_end_due(now=later)  # a second run (another machine) finds nothing
    assert first["failed"] == 1 and second["failed"] == 0
    group = Group.objects.get(pk=group_id)
    assert group.status == "failed" and group.settled_at is not None
    assert Order.objects.get(order_no=unpaid_order["order_no"]).status == "cancelled"
    paid_nos = [order["order_no"], member_order["order_no"]]
    assert Refund.objects.filter(order__order_no__in=paid_nos).count() == 2
    assert AfterSale.objects.filter(reason=group_refunds.GROUP_FAILED_REASON).count() == 2
    for refund in Refund.objects.all():
        refunds.refund_execute(refund_id=refund.pk)
    deliver()  # WeChat's refund notifications
    deliver()  # nothing pending: nothing more
    for notification_id in list(wechat.state.notifications):  # every payment and refund notice redelivered
        deliver(notification_id)
    assert sorted(Order.objects.filter(order_no__in=paid_nos).values_list("status", flat=True)) == ["refunded"] * 2
    # the WeChat peer saw exactly one refund per paid member, of the whole amount
    for order_no in paid_nos:
        peer = wechat.state.refunds_of(order_no)
        assert len(peer) == 1, peer
        assert peer[0].refund_fee == Order.objects.get(order_no=order_no).pay_fen
    assert Refund.objects.filter(order__order_no__in=paid_nos, status="success").count() == 2
    # units back: the activity runs, so its quota and the SKU get them back; sold counts live orders
    assert _state(activity) == (10, 0, 20)
    assert set(GroupSeat.objects.filter(group_id=group_id).values_list("status", flat=True)) == {"refunded", "released"}
    with django_capture_on_commit_callbacks(execute=True):
        group_refunds.groups_end_due(now=later)
    assert Refund.objects.count() == 2


def test_group_end_command(
    shopper, group_order, wechat_pay, make_group_buy, django_user_model, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import Permission
    from django.core.management.base import CommandError

    activity = make_group_buy(size=2)
    _, _, order = _open(shopper, group_order, wechat_pay, activity)
    group_id = order["group"]["group_id"]
    clerk = django_user_model.objects.create_user("clerk", password="x", is_staff=True)
    with pytest.raises(CommandError, match="权限"):
        call_command("group_end", str(group_id), "--by", "clerk")
    with pytest.raises(CommandError):
        call_command("group_end", "999999", "--by", "clerk")
    clerk.user_permissions.add(Permission.objects.get(codename="manage_groupbuy"))
    clerk = django_user_model.objects.get(pk=clerk.pk)
    from io import StringIO

    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("group_end", str(group_id), "--by", "clerk", stdout=out)
    assert "failed" in out.getvalue()
    assert Group.objects.get(pk=group_id).status == "failed"
    assert Order.objects.get(order_no=order["order_no"]).status == "refunding"
    with pytest.raises(CommandError, match="已结束"):
        call_command("group_end", str(group_id), "--by", "clerk")

"""拼团 and 砍价 under races on PostgreSQL, real threads released by a Barrier: one free seat
goes to exactly one of ten joiners; the payment filling the last seat and the deadline job
never both win; twenty racing helpers cut a record exactly to its floor."""

import datetime as dt

import pytest
from django.db import connection
from django.utils import timezone

from apps.accounts.models import Address
from apps.catalog.models import Sku
from apps.marketing import bargains
from apps.marketing.models import BargainCampaign, BargainHelp, BargainRecord, Group, GroupBuy, GroupSeat
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order
from apps.payments import balance, group_refunds
from apps.payments.models import Refund
from starmall.errors import InvalidState, LimitExceeded

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _activity(sku, *, size=2, stock=20, hours=24):
    now = timezone.now()
    return GroupBuy.objects.create(
        title="拼团",
        sku=sku,
        price_fen=6000,
        stock=stock,
        group_size=size,
        hours=hours,
        limit_per_customer=1,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=2),
    )


def _buyer(make_customer):
    customer = make_customer(balance_fen=100_000)
    address = Address.objects.create(
        customer=customer, name="买家", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    return customer, address


def _order(customer, address, sku, **promo):
    key = order_confirm(customer=customer, address_id=address.pk, items=[{"sku_id": sku.pk, "quantity": 1}], **promo)[
        "order_key"
    ]
    return order_create(customer=customer, order_key=key)[0]


def _balance_pay(order, now=None):
    return balance._balance_pay_apply(order_id=order.pk, customer_id=order.customer_id, now=now or timezone.now())


def _open_paid(make_customer, sku, activity):
    leader, address = _buyer(make_customer)
    order = _order(leader, address, sku, group_buy_id=activity.pk)
    _balance_pay(order)
    return order


def test_ten_joiners_for_one_seat_get_exactly_one(make_customer, make_sku, is_postgres, race):
    assert is_postgres
    sku = make_sku(price_fen=10000, stock=20)
    activity = _activity(sku, size=2)
    leader_order = _open_paid(make_customer, sku, activity)
    joiners = [_buyer(make_customer) for _ in range(10)]

    results = race(lambda i: _order(*joiners[i], sku, group_id=leader_order.group_id), 10)

    created = [r for r in results if isinstance(r, Order)]
    assert len(created) == 1, results
    assert all(isinstance(r, InvalidState) for r in results if not isinstance(r, Order)), results
    group = Group.objects.get(pk=leader_order.group_id)
    assert (group.seats, group.members, group.status) == (2, 1, "forming")
    assert GroupSeat.objects.filter(group=group).exclude(status="released").count() == 2
    activity.refresh_from_db()
    assert (activity.stock, activity.sold, Sku.objects.get(pk=sku.pk).stock) == (18, 2, 18)
    assert Order.objects.filter(group=group).count() == 2


@pytest.mark.parametrize("attempt", range(4))
def test_filling_payment_racing_the_deadline_job_is_done_or_failed_and_refunded(
    attempt, make_customer, make_sku, is_postgres, race
):
    assert is_postgres
    sku = make_sku(price_fen=10000, stock=20)
    activity = _activity(sku, size=2, hours=1)
    leader_order = _open_paid(make_customer, sku, activity)
    joiner, address = _buyer(make_customer)
    joiner_order = _order(joiner, address, sku, group_id=leader_order.group_id)
    deadline = Group.objects.get(pk=leader_order.group_id).expires_at
    just_before = deadline - dt.timedelta(milliseconds=1)

    def run(i):
        if i == 0:
            return _balance_pay(joiner_order, now=just_before)  # paid before the deadline...
        return group_refunds.groups_end_due(now=deadline)  # ...as the job runs at it

    results = race(run, 2)

    group = Group.objects.get(pk=leader_order.group_id)
    statuses = dict(Order.objects.filter(group=group).values_list("order_no", "status"))
    refunds = Refund.objects.filter(order__group=group)
    if group.status == "done":
        assert statuses == {leader_order.order_no: "paid", joiner_order.order_no: "paid"}, results
        assert refunds.count() == 0
        assert group.members == 2 and group.failed_at is None
    else:
        assert group.status == "failed", results
        assert group.done_at is None
        paid = [no for no in statuses if Order.objects.get(order_no=no).paid_at is not None]
        assert set(refunds.values_list("order__order_no", flat=True)) == set(paid)
        assert refunds.count() == len(paid)  # one refund per paid member
        assert statuses[leader_order.order_no] == "refunding"
        assert statuses[joiner_order.order_no] in ("cancelled", "refunding")
        # a second run (another machine) adds nothing
        group_refunds.groups_end_due(now=deadline + dt.timedelta(minutes=1))
        assert Refund.objects.filter(order__group=group).count() == len(paid)


def test_two_machines_running_the_deadline_job_refund_each_member_once(make_customer, make_sku, is_postgres, race):
    assert is_postgres
    sku = make_sku(price_fen=10000, stock=20)
    activity = _activity(sku, size=3, hours=1)
    leader_order = _open_paid(make_customer, sku, activity)
    joiner, address = _buyer(make_customer)
    _balance_pay(_order(joiner, address, sku, group_id=leader_order.group_id))
    deadline = Group.objects.get(pk=leader_order.group_id).expires_at

    race(lambda i: group_refunds.groups_end_due(now=deadline), 4)

    group = Group.objects.get(pk=leader_order.group_id)
    assert group.status == "failed" and group.settled_at is not None
    assert Refund.objects.filter(order__group=group).count() == 2
    assert sorted(Refund.objects.filter(order__group=group).values_list("refund_fen", flat=True)) == sorted(
        Order.objects.filter(group=group).values_list("pay_fen", flat=True)
    )


def test_twenty_racing_helps_cut_exactly_to_the_floor(make_customer, make_sku, is_postgres, race, settings):
    assert is_postgres
    settings.BARGAIN_HELPS_PER_DAY = 3
    sku = make_sku(price_fen=10000, stock=20)
    now = timezone.now()
    campaign = BargainCampaign.objects.create(
        title="砍价",
        sku=sku,
        original_price_fen=10000,
        floor_price_fen=3999,
        helpers_needed=7,
        hours=24,
        stock=5,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=2),
    )
    owner = make_customer()
    record, _ = bargains.bargain_start(campaign_id=campaign.pk, customer_id=owner.pk)
    helpers = [make_customer() for _ in range(20)]

    results = race(lambda i: bargains.bargain_help(bargain_no=record.bargain_no, helper_id=helpers[i].pk), 20)

    helped = [r for r in results if isinstance(r, dict)]
    assert len(helped) == 7, results
    assert all(isinstance(r, InvalidState) for r in results if not isinstance(r, dict)), results
    record.refresh_from_db()
    assert (record.price_fen, record.helpers) == (3999, 7)
    cuts = list(BargainHelp.objects.filter(record=record).values_list("cut_fen", flat=True))
    assert sum(cuts) == 10000 - 3999 and min(cuts) >= 1
    assert sorted(r["cut_fen"] for r in helped) == sorted(cuts)


def test_one_helper_racing_on_one_record_helps_once(make_customer, make_sku, is_postgres, race):
    assert is_postgres
    sku = make_sku(price_fen=10000, stock=20)
    now = timezone.now()
    campaign = BargainCampaign.objects.create(
        title="砍价",
        sku=sku,
        original_price_fen=10000,
        floor_price_fen=5000,
        helpers_needed=5,
        hours=24,
        stock=5,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=2),
    )
    record, _ = bargains.bargain_start(campaign_id=campaign.pk, customer_id=make_customer().pk)
    helper = make_customer()

    results = race(lambda i: bargains.bargain_help(bargain_no=record.bargain_no, helper_id=helper.pk), 8)

    assert len([r for r in results if isinstance(r, dict)]) == 1, results
    assert all(isinstance(r, LimitExceeded) for r in results if not isinstance(r, dict)), results
    assert BargainRecord.objects.get(pk=record.pk).helpers == 1
    assert connection.vendor == "postgresql"

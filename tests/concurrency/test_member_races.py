"""Members on PostgreSQL with real threads: racing payment notifications of a member card
(API v2 and v3) add its days once; racing purchases of one customer add up end to end; racing
completions and refunds keep the growth total equal to its ledger and to the orders' basis."""

import datetime as dt
from collections import Counter

import pytest
from django.db.models import Sum
from django.utils import timezone

from apps.members import services as members
from apps.members.models import CardPurchase, GrowthEvent, Level, MemberCard, Membership
from apps.payments import member_cards, notifications
from apps.payments.models import Notification
from wechat_sandbox import pay_v3

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 8


@pytest.fixture
def card(db):
    return MemberCard.objects.create(name="月卡", days=30, pay_fen=1990)


def test_racing_v2_notifications_of_one_purchase_add_its_days_once(make_customer, wechat, card, race):
    customer = make_customer()
    wechat.state.upsert_user(customer.openid)
    purchase, _ = member_cards.card_buy(customer=customer, card_id=card.pk)
    before = timezone.now()
    wechat.control.pay(purchase.purchase_no)
    body = wechat.control.notifications()[0]["body"].encode()

    results = race(lambda i: notifications.payment_notification_handle(body), N)

    assert all(b"SUCCESS" in r for r in results), results
    assert Counter(Notification.objects.values_list("outcome", flat=True)) == {"applied": 1, "duplicate": N - 1}
    expiry = Membership.objects.get(customer=customer).svip_expires_at
    assert before + dt.timedelta(days=30) <= expiry <= timezone.now() + dt.timedelta(days=30)
    purchase.refresh_from_db()
    assert (purchase.status, purchase.ends_at) == ("paid", expiry)


def test_racing_v3_notifications_of_one_purchase_add_its_days_once(make_customer, wechat, settings, card, race):
    settings.WECHAT_PAY_API = "v3"
    settings.WECHAT_PAY_V3_API_BASE = wechat.url.rstrip("/")
    customer = make_customer()
    wechat.state.upsert_user(customer.openid)
    purchase, _ = member_cards.card_buy(customer=customer, card_id=card.pk)
    assert purchase.api == "v3"
    wechat.control.pay(purchase.purchase_no)
    captured = []
    store = pay_v3.v3(wechat.state)
    store.transport = lambda url, body, headers: captured.append((body, headers)) or (204, "")
    pay_v3.deliver(wechat.state)
    body, headers = captured[0]

    results = race(lambda i: notifications.notification_handle(notifications.PAY_RESULT_V3, body, headers), N)

    assert [r.status for r in results] == [204] * N, results
    assert Counter(Notification.objects.values_list("outcome", flat=True)) == {"applied": 1, "duplicate": N - 1}
    purchase.refresh_from_db()
    assert purchase.status == "paid"
    assert Membership.objects.get(customer=customer).svip_expires_at == purchase.ends_at
    assert purchase.ends_at - purchase.starts_at == dt.timedelta(days=30)


def test_racing_purchases_of_one_customer_add_up_end_to_end(make_customer, card, race):
    customer = make_customer()
    purchases = [members.card_purchase_create(customer=customer, card_id=card.pk, api="v2") for _ in range(N)]
    start = timezone.now()

    results = race(
        lambda i: members.card_purchase_apply_paid(
            purchase=purchases[i], transaction_id=f"42000000{i:02d}", paid_at=timezone.now()
        ),
        N,
    )

    assert results == [True] * N, results
    periods = sorted(CardPurchase.objects.values_list("starts_at", "ends_at"))
    assert all(later[0] == earlier[1] for earlier, later in zip(periods, periods[1:]))  # end to end, no overlap
    expiry = Membership.objects.get(customer=customer).svip_expires_at
    assert expiry == periods[-1][1]
    assert start + dt.timedelta(days=30 * N) <= expiry <= timezone.now() + dt.timedelta(days=30 * N)


def test_racing_completions_and_refunds_keep_growth_equal_to_its_ledger(make_customer, race):
    Level.objects.create(name="普通会员", growth_min=0, discount_percent=100)
    customer = make_customer()
    orders = {f"9{i:03d}": 10_000 + 1_234 * i for i in range(4)}  # order_no -> pay_fen - freight_fen
    calls = []
    for order_no, basis in orders.items():
        calls.append(
            lambda no=order_no, b=basis: members.growth_order_completed(
                customer_id=customer.pk, order_no=no, basis_fen=b
            )
        )
        calls.append(
            lambda no=order_no: members.growth_order_refunded(
                customer_id=customer.pk, order_no=no, refund_no=f"{no}R1", refund_fen=2_550
            )
        )
    calls = calls + calls  # every call twice: the replays change nothing

    results = race(lambda i: calls[i](), len(calls))

    assert sorted(results) == [False] * 8 + [True] * 8, results
    expected = sum((basis - 2_550) // 100 for basis in orders.values())
    ledger = GrowthEvent.objects.filter(customer=customer).aggregate(n=Sum("change"))["n"]
    assert Membership.objects.get(customer=customer).growth == ledger == expected
    assert GrowthEvent.objects.filter(customer=customer).count() == 8

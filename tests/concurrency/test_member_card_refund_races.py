"""Races of a member card purchase's refund (PostgreSQL): WeChat's refund notification arriving
from several servers at once takes the SVIP days back once; staff clicking refund at once ask
one refund."""

import datetime as dt

import pytest

from apps.members.models import CardPurchase, MemberCard, Membership
from apps.payments import member_cards, notifications, refunds
from apps.payments.models import Notification, Refund
from starmall.errors import InvalidState

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def card(db):
    return MemberCard.objects.create(name="月卡", days=30, pay_fen=1990, original_fen=2990, sort=1)


def _expiry(customer):
    return Membership.objects.get(customer=customer).svip_expires_at


def _paid_purchase(api, card, wechat, deliver) -> CardPurchase:
    purchase_no = api.post(f"/api/v1/member-cards/{card.pk}/buy").json()["purchase_no"]
    wechat.control.pay(purchase_no)
    assert [a["ok"] for a in deliver()] == [True]
    return CardPurchase.objects.get(purchase_no=purchase_no)


def test_racing_card_refund_notifications_take_the_days_back_once(api, customer, card, wechat, deliver, race):
    from django.contrib.auth.models import User

    purchase = _paid_purchase(api, card, wechat, deliver)
    expiry = _expiry(customer)
    boss = User.objects.create_superuser("boss-race", password="pw-123456")
    refund = member_cards.card_refund_request(purchase_id=purchase.pk, user=boss)
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    (note,) = wechat.control.notifications(kind="refund")
    body = wechat.state.notifications[note["id"]].body.encode()
    answers = race(lambda i: notifications.refund_notification_handle(body), 8)
    assert all(b"SUCCESS" in a for a in answers)
    assert _expiry(customer) == expiry - dt.timedelta(days=30)
    purchase.refresh_from_db()
    assert (purchase.status, purchase.refunded_fen) == ("refunded", 1990)
    outcomes = sorted(Notification.objects.filter(kind="refund").values_list("outcome", flat=True))
    assert outcomes == ["applied"] + ["duplicate"] * 7


def test_racing_staff_clicks_ask_one_refund(api, customer, card, wechat, deliver, race):
    from django.contrib.auth.models import User

    purchase = _paid_purchase(api, card, wechat, deliver)
    boss = User.objects.create_superuser("boss-click", password="pw-123456")

    def click(i):
        try:
            return member_cards.card_refund_request(purchase_id=purchase.pk, user=boss).refund_fen
        except InvalidState:
            return "refused"

    assert sorted(race(click, 6), key=str) == [1990] + ["refused"] * 5
    assert list(Refund.objects.values_list("refund_fen", flat=True)) == [1990]

"""Paid membership (SVIP) cards bought through WeChat Pay like a recharge: the contract, the
days added once per purchase from max(now, current expiry) under duplicate notifications (API
v2 and v3), a refund shortening the expiry by its share, points doubled while SVIP."""

import datetime as dt

import pytest
from django.utils import timezone
from pay_helpers import notify, pay_result

from apps.accounts.models import WalletEvent
from apps.members import services as members
from apps.members.models import CardPurchase, MemberCard, Membership
from apps.orders import followups
from apps.orders.models import FollowUp, Order
from apps.payments import member_cards
from apps.payments.models import Notification
from apps.payments.reconciliation import reconcile

pytestmark = pytest.mark.django_db


@pytest.fixture
def card(db):
    return MemberCard.objects.create(name="月卡", days=30, pay_fen=1990, original_fen=2990, sort=1)


def _buy(api, card) -> dict:
    response = api.post(f"/api/v1/member-cards/{card.pk}/buy")
    assert response.status_code == 201, response.json()
    return response.json()


def _expiry(customer):
    return Membership.objects.get(customer=customer).svip_expires_at


def test_cards_are_listed_on_sale_only_in_their_order(api, card):
    MemberCard.objects.create(name="年卡", days=365, pay_fen=16800, original_fen=0, sort=2)
    MemberCard.objects.create(name="停售", days=7, pay_fen=500, active=False)
    assert api.get("/api/v1/member-cards").json() == [
        {"id": card.pk, "name": "月卡", "days": 30, "pay_fen": 1990, "original_fen": 2990},
        {"id": card.pk + 1, "name": "年卡", "days": 365, "pay_fen": 16800, "original_fen": 0},
    ]


def test_buy_answers_the_contract_and_an_m_number(api, customer, card, wechat):
    body = _buy(api, card)
    assert body["purchase_no"].startswith("M") and len(body["purchase_no"]) == 23
    assert (body["pay_fen"], body["status"]) == (1990, "unpaid")
    assert set(body["pay_params"]) == {"appId", "timeStamp", "nonceStr", "package", "signType", "paySign"}
    row = CardPurchase.objects.get(purchase_no=body["purchase_no"])
    assert (row.customer_id, row.days, row.api, bool(row.prepay_id)) == (customer.pk, 30, "v2", True)
    card.active = False
    card.save()
    missing = api.post(f"/api/v1/member-cards/{card.pk}/buy")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_a_paid_card_adds_its_days_once_and_a_second_extends_from_the_expiry(api, customer, card, wechat, deliver):
    first = _buy(api, card)["purchase_no"]
    before = timezone.now()
    wechat.control.pay(first)
    assert [a["ok"] for a in deliver()] == [True]
    expiry = _expiry(customer)
    assert before + dt.timedelta(days=30) <= expiry <= timezone.now() + dt.timedelta(days=30)
    note = wechat.control.notifications()[0]
    for _ in range(2):  # WeChat sends it again
        assert [a["ok"] for a in deliver(note["id"])] == [True]
    assert _expiry(customer) == expiry
    second = _buy(api, card)["purchase_no"]
    wechat.control.pay(second)
    deliver()
    assert _expiry(customer) == expiry + dt.timedelta(days=30)
    assert list(CardPurchase.objects.order_by("id").values_list("status", flat=True)) == ["paid", "paid"]
    outcomes = list(Notification.objects.order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["applied", "duplicate", "duplicate", "applied"]
    member = api.get("/api/v1/me/member").json()
    assert dt.datetime.fromisoformat(member["svip"]["expires_at"]) == expiry + dt.timedelta(days=30)


def test_a_wrong_amount_or_unknown_purchase_adds_nothing(api, customer, card, client):
    no = _buy(api, card)["purchase_no"]
    assert b"FAIL" in notify(client, pay_result(no, 1, cash_fee="1")).content
    assert b"FAIL" in notify(client, pay_result("M2099010100000000000000", 1990)).content
    assert list(Notification.objects.order_by("id").values_list("outcome", flat=True)) == [
        "amount_mismatch",
        "unknown_order",
    ]
    assert CardPurchase.objects.get().status == "unpaid"
    assert not Membership.objects.filter(customer=customer, svip_expires_at__isnull=False).exists()


def test_v3_purchase_is_applied_once(api, customer, card, wechat, v3pay):
    body = _buy(api, card)
    assert body["pay_params"]["signType"] == "RSA"
    purchase = CardPurchase.objects.get(purchase_no=body["purchase_no"])
    assert purchase.api == "v3" and wechat.state.trades[purchase.purchase_no].api == "v3"
    wechat.control.pay(purchase.purchase_no)
    assert [a["status"] for a in v3pay.deliver()] == [204]
    expiry = _expiry(customer)
    assert v3pay.resend(v3pay.state.delivered[-1]) == (204, "")
    assert _expiry(customer) == expiry
    purchase.refresh_from_db()
    assert (purchase.status, purchase.ends_at) == ("paid", expiry)
    assert list(Notification.objects.order_by("id").values_list("outcome", flat=True)) == ["applied", "duplicate"]


def test_a_lost_notification_is_found_by_the_sweep_and_an_unpaid_one_expires(api, customer, card, wechat):
    paid_no = _buy(api, card)["purchase_no"]
    unpaid_no = _buy(api, card)["purchase_no"]
    wechat.control.pay(paid_no)  # its notification never arrives
    later = timezone.now() + dt.timedelta(hours=3)
    assert member_cards.card_purchases_expire_due(now=later) == {"paid": 1, "expired": 1, "later": 0}
    statuses = dict(CardPurchase.objects.values_list("purchase_no", "status"))
    assert statuses == {paid_no: "paid", unpaid_no: "expired"}
    assert _expiry(customer) > timezone.now() + dt.timedelta(days=29)


def test_a_refund_shortens_the_expiry_by_its_share_of_the_days(customer, card):
    purchase = members.card_purchase_create(customer=customer, card_id=card.pk, api="v2")
    assert members.card_purchase_apply_paid(purchase=purchase, transaction_id="4200000001", paid_at=timezone.now())
    expiry = _expiry(customer)
    assert members.card_purchase_refunded(purchase=purchase, refund_fen=995)  # half: 15 days back
    assert _expiry(customer) == expiry - dt.timedelta(days=15)
    assert not members.card_purchase_refunded(purchase=purchase, refund_fen=996)  # more than is left
    assert members.card_purchase_refunded(purchase=purchase, refund_fen=995)
    assert _expiry(customer) == expiry - dt.timedelta(days=30)
    purchase.refresh_from_db()
    assert (purchase.status, purchase.refunded_fen) == ("refunded", 1990)
    assert not members.card_purchase_apply_paid(purchase=purchase, transaction_id="4200000001", paid_at=timezone.now())


def test_points_earned_are_doubled_while_svip(buyer, paid):
    Membership.objects.create(customer=buyer.customer, svip_expires_at=timezone.now() + dt.timedelta(days=1))
    order, _ = paid(price_fen=5000, quantity=2)
    row = Order.objects.get(order_no=order["order_no"])
    for pk in FollowUp.objects.filter(order=row, kind=FollowUp.Kind.POINTS_AWARD).values_list("pk", flat=True):
        followups.followup_execute(pk)
    award = WalletEvent.objects.get(customer=buyer.customer, kind="points", reason="award")
    assert award.amount == row.pay_fen // 100 * 2 == 200


def test_card_purchases_are_reconciled(api, customer, card, wechat, deliver):
    paid = _buy(api, card)["purchase_no"]
    wechat.control.pay(paid)
    deliver()
    run = reconcile(bill_date=timezone.localdate())
    assert (run.status, run.wechat_fen, run.local_fen, run.local_count) == ("ok", 1990, 1990, 1)
    missed = _buy(api, card)["purchase_no"]
    wechat.control.pay(missed)  # paid at WeChat, notification lost: missing locally
    run = reconcile(bill_date=timezone.localdate())
    assert [(d["kind"], d["out_trade_no"], d["wechat_fen"], d["local_status"]) for d in run.differences] == [
        ("missing_local", missed, 1990, "unpaid")
    ]

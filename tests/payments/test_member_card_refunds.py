"""A member card purchase refunded through WeChat Pay by the shop's one refund worker: staff ask
(service or admin action, the refund approval's permission and limit), WeChat returns the money
(v2 and v3), and the refund's success shortens the SVIP expiry by its share of the days, once
under duplicate and racing notifications."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.members.models import CardPurchase, MemberCard, Membership
from apps.payments import member_cards, refunds
from apps.payments.models import Notification, Refund
from apps.payments.reconciliation import reconcile
from apps.payments.staff_limits import StaffForbidden
from starmall.errors import InvalidInput, InvalidState

pytestmark = pytest.mark.django_db


@pytest.fixture
def card(db):
    return MemberCard.objects.create(name="月卡", days=30, pay_fen=1990, original_fen=2990, sort=1)


@pytest.fixture
def finance(role_client):
    return role_client("财务")


def _expiry(customer):
    return Membership.objects.get(customer=customer).svip_expires_at


def _paid_purchase(api, card, wechat, deliver=None, v3pay=None) -> CardPurchase:
    response = api.post(f"/api/v1/member-cards/{card.pk}/buy")
    assert response.status_code == 201
    purchase_no = response.json()["purchase_no"]
    wechat.control.pay(purchase_no)
    if v3pay is not None:
        assert [a["status"] for a in v3pay.deliver()] == [204]
    else:
        assert [a["ok"] for a in deliver()] == [True]
    purchase = CardPurchase.objects.get(purchase_no=purchase_no)
    assert purchase.status == "paid"
    return purchase


def _refund_notifications():
    return list(Notification.objects.filter(kind="refund").order_by("id").values_list("out_refund_no", "outcome"))


def test_v2_card_refund_returns_the_money_and_takes_the_days_back_once(
    api, customer, card, wechat, deliver, finance, django_capture_on_commit_callbacks
):
    purchase = _paid_purchase(api, card, wechat, deliver)
    expiry = _expiry(customer)
    with django_capture_on_commit_callbacks() as queued:
        refund = member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user)
    assert len(queued) == 1  # the worker is told after commit
    assert (refund.out_refund_no, refund.refund_fen, refund.reason) == (
        f"{purchase.purchase_no}R1",
        1990,
        "member_card",
    )
    assert (refund.order_id, refund.payment_id, refund.card_purchase_id) == (None, None, purchase.pk)
    assert _expiry(customer) == expiry  # nothing moves before WeChat returns the money
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    found = wechat.state.refunds[refund.out_refund_no]
    assert (found.out_trade_no, found.refund_fee, found.total_fee, found.api) == (
        purchase.purchase_no,
        1990,
        1990,
        "v2",
    )
    assert all(a["ok"] for a in deliver())  # the refund notification
    for note in wechat.control.notifications(kind="refund"):
        assert all(a["ok"] for a in deliver(note["id"]))  # WeChat sends it again
    refund.refresh_from_db()
    purchase.refresh_from_db()
    assert refund.status == "success"
    assert (purchase.status, purchase.refunded_fen) == ("refunded", 1990)
    assert _expiry(customer) == expiry - dt.timedelta(days=30)
    assert purchase.ends_at == expiry - dt.timedelta(days=30)
    assert _refund_notifications() == [(refund.out_refund_no, "applied"), (refund.out_refund_no, "duplicate")]
    assert not refunds.refund_succeeded(refund=refund)  # the sweep's refundquery afterwards: nothing more
    assert _expiry(customer) == expiry - dt.timedelta(days=30)
    with pytest.raises(InvalidState):  # all of it was asked already
        member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user)


def test_v3_partial_card_refunds_take_back_their_share(api, customer, card, wechat, v3pay, finance):
    purchase = _paid_purchase(api, card, wechat, v3pay=v3pay)
    assert purchase.api == "v3"
    expiry = _expiry(customer)
    first = member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user, amount_fen=995)
    with pytest.raises(InvalidInput):  # more than the 995 fen left
        member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user, amount_fen=996)
    assert refunds.refund_execute(refund_id=first.pk) == "submitted"
    assert wechat.state.refunds[first.out_refund_no].api == "v3"
    assert [(a["event_type"], a["status"]) for a in v3pay.deliver()] == [("REFUND.SUCCESS", 204)]
    assert v3pay.resend(v3pay.state.delivered[-1]) == (204, "")  # WeChat sends it again
    assert _expiry(customer) == expiry - dt.timedelta(days=15)
    second = member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user)
    assert (second.out_refund_no, second.refund_fen) == (f"{purchase.purchase_no}R2", 995)
    assert refunds.refund_execute(refund_id=second.pk) == "submitted"
    assert [a["status"] for a in v3pay.deliver()] == [204]
    purchase.refresh_from_db()
    assert (purchase.status, purchase.refunded_fen) == ("refunded", 1990)
    assert _expiry(customer) == expiry - dt.timedelta(days=30)
    assert _refund_notifications() == [
        (first.out_refund_no, "applied"),
        (first.out_refund_no, "duplicate"),
        (second.out_refund_no, "applied"),
    ]


def test_a_card_refund_asks_the_approval_permission_and_a_paid_purchase(
    api, customer, card, wechat, deliver, role_client, settings
):
    settings.SERVICE_REFUND_LIMIT_FEN = 1000
    service = role_client("客服")
    ops = role_client("运营")
    purchase = _paid_purchase(api, card, wechat, deliver)
    with pytest.raises(StaffForbidden):  # 19.90 yuan is above 客服's 10.00
        member_cards.card_refund_request(purchase_id=purchase.pk, user=service.user)
    with pytest.raises(StaffForbidden):
        member_cards.card_refund_request(purchase_id=purchase.pk, user=ops.user, amount_fen=1)
    assert (
        member_cards.card_refund_request(purchase_id=purchase.pk, user=service.user, amount_fen=1000).refund_fen == 1000
    )
    unpaid = api.post(f"/api/v1/member-cards/{card.pk}/buy").json()["purchase_no"]
    with pytest.raises(InvalidState):
        member_cards.card_refund_request(purchase_id=CardPurchase.objects.get(purchase_no=unpaid).pk, user=service.user)
    assert list(Refund.objects.values_list("refund_fen", flat=True)) == [1000]


def test_a_failed_card_refund_is_retried_by_staff_with_the_same_number(api, customer, card, wechat, deliver, finance):
    purchase = _paid_purchase(api, card, wechat, deliver)
    expiry = _expiry(customer)
    wechat.control.set_faults({"secapi/pay/refund": {"err_code": "BIZERR_NEED_RETRY", "count": 3}})
    refund = member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user)
    later = timezone.now()
    for _ in range(3):
        refunds.refund_execute(refund_id=refund.pk, now=later)
        later += dt.timedelta(hours=1)
    refund.refresh_from_db()
    assert refund.status == "failed" and _expiry(customer) == expiry
    assert refunds.refund_retry(refund_id=refund.pk, actor="staff:test")
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    assert all(a["ok"] for a in deliver())
    assert [r["out_refund_no"] for r in wechat.control.refunds()] == [refund.out_refund_no]
    assert _expiry(customer) == expiry - dt.timedelta(days=30)


def test_the_admin_action_confirms_then_refunds_through_the_service(api, customer, card, wechat, deliver, finance):
    purchase = _paid_purchase(api, card, wechat, deliver)
    url = "/admin/members/cardpurchase/"
    page = finance.post(url, {"action": "refund", "_selected_action": [purchase.pk]})
    assert page.status_code == 200 and "确认会员卡退款" in page.content.decode()
    assert "合计退款 19.90 元" in page.content.decode()
    assert Refund.objects.count() == 0  # the confirmation page changes nothing
    done = finance.post(url, {"action": "refund", "_selected_action": [purchase.pk], "confirm": "1"})
    assert done.status_code == 302
    assert list(Refund.objects.values_list("card_purchase_id", "refund_fen", "status")) == [
        (purchase.pk, 1990, "pending")
    ]
    again = finance.post(url, {"action": "refund", "_selected_action": [purchase.pk], "confirm": "1"}, follow=True)
    assert "这张会员卡已全部退款" in again.content.decode()  # a double click asks nothing more
    assert Refund.objects.count() == 1


def test_a_card_refund_is_reconciled(api, customer, card, wechat, deliver, finance):
    purchase = _paid_purchase(api, card, wechat, deliver)
    refund = member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user, amount_fen=500)
    refunds.refund_execute(refund_id=refund.pk)
    deliver()
    run = reconcile(bill_date=timezone.localdate())
    assert (run.status, run.wechat_fen, run.local_fen, run.differences) == ("ok", 1490, 1490, [])


def test_a_lost_card_refund_notification_is_found_by_the_sweep(api, customer, card, wechat, deliver, finance, boss):
    purchase = _paid_purchase(api, card, wechat, deliver)
    expiry = _expiry(customer)
    refund = member_cards.card_refund_request(purchase_id=purchase.pk, user=finance.user)
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"  # its notification never arrives
    later = timezone.now() + refunds.CONFIRM_AFTER + dt.timedelta(seconds=1)
    assert refunds.refunds_sweep(now=later) == {"query:SUCCESS": 1}
    refund.refresh_from_db()
    assert refund.status == "success" and _expiry(customer) == expiry - dt.timedelta(days=30)
    page = boss.get("/admin/payments/refund/", {"q": purchase.purchase_no}).content.decode()
    assert refund.out_refund_no in page  # staff find it by the purchase number

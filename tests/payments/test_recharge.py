"""Recharge (top-up with a bonus) through WeChat Pay: the same notification URL and checks,
the balance and its ledger credited exactly once, spendable by balance pay, reconciled."""

import datetime as dt

import pytest
from django.db.models import Sum
from django.utils import timezone
from pay_helpers import API_KEY, notify, pay_result

from apps.accounts.models import Customer, WalletEvent
from apps.payments import recharges
from apps.payments.models import Notification, Recharge, RechargePackage
from apps.payments.reconciliation import reconcile

pytestmark = pytest.mark.django_db


@pytest.fixture
def package(db):
    return RechargePackage.objects.create(pay_fen=10000, bonus_fen=1000, sort=1)


def _recharge(api, package) -> dict:
    response = api.post("/api/v1/recharges", {"package_id": package.pk}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def _balance_rows(customer):
    return list(
        WalletEvent.objects.filter(customer=customer, kind="balance")
        .order_by("id")
        .values_list("reason", "amount", "ref")
    )


def test_packages_are_listed_active_only_in_their_order(api, package):
    RechargePackage.objects.create(pay_fen=50000, bonus_fen=6000, sort=2)
    RechargePackage.objects.create(pay_fen=1000, bonus_fen=0, sort=3, is_active=False)
    response = api.get("/api/v1/recharge/packages")
    assert response.status_code == 200
    assert [(p["pay_fen"], p["bonus_fen"]) for p in response.json()] == [(10000, 1000), (50000, 6000)]


def test_create_answers_the_contract_and_an_r_number(api, customer, package, wechat):
    body = _recharge(api, package)
    assert body["recharge_no"].startswith("R") and len(body["recharge_no"]) == 23
    assert (body["pay_fen"], body["bonus_fen"], body["status"]) == (10000, 1000, "unpaid")
    assert set(body["pay_params"]) == {"appId", "timeStamp", "nonceStr", "package", "signType", "paySign"}
    row = Recharge.objects.get(recharge_no=body["recharge_no"])
    assert row.customer_id == customer.pk and row.prepay_id
    assert api.get(f"/api/v1/recharges/{body['recharge_no']}").json() == {
        "recharge_no": body["recharge_no"],
        "pay_fen": 10000,
        "bonus_fen": 1000,
        "status": "unpaid",
    }


def test_unknown_or_inactive_package_and_foreign_recharge_are_404(api, make_api, make_customer, package):
    package.is_active = False
    package.save()
    assert api.post("/api/v1/recharges", {"package_id": package.pk}, format="json").status_code == 404
    assert api.post("/api/v1/recharges", {"package_id": 999999}, format="json").status_code == 404
    package.is_active = True
    package.save()
    no = _recharge(api, package)["recharge_no"]
    other = make_api(make_customer())
    assert other.get(f"/api/v1/recharges/{no}").status_code == 404
    assert api.get("/api/v1/recharges/R0").json()["code"] == "not_found"


def test_paid_recharge_credits_balance_and_ledger_once(api, customer, package, wechat, deliver):
    no = _recharge(api, package)["recharge_no"]
    trade = wechat.control.pay(no)
    assert [a["ok"] for a in deliver()] == [True]
    customer.refresh_from_db()
    assert customer.balance_fen == 11000
    assert _balance_rows(customer) == [("recharge", 10000, no), ("bonus", 1000, no)]
    row = Recharge.objects.get(recharge_no=no)
    assert (row.status, row.transaction_id) == ("paid", trade["transaction_id"])
    assert api.get(f"/api/v1/recharges/{no}").json()["status"] == "paid"

    notification = wechat.control.notifications()[0]
    for _ in range(3):  # WeChat sends it again
        assert [a["ok"] for a in deliver(notification["id"])] == [True]
    customer.refresh_from_db()
    assert customer.balance_fen == 11000
    assert len(_balance_rows(customer)) == 2
    assert list(Notification.objects.order_by("id").values_list("outcome", flat=True)) == [
        "applied",
        "duplicate",
        "duplicate",
        "duplicate",
    ]
    # the ledger, as the customer sees it
    ledger = api.get("/api/v1/me/balance").json()
    assert ledger["balance_fen"] == 11000
    assert [(r["reason"], r["reason_text"], r["change_fen"]) for r in ledger["results"]] == [
        ("bonus", "充值赠送", 1000),
        ("recharge", "充值", 10000),
    ]


@pytest.mark.parametrize(
    "changes, key, outcome",
    [
        ({}, "0" * 32, "bad_signature"),
        ({"total_fee": "1", "cash_fee": "1"}, API_KEY, "amount_mismatch"),
        ({"appid": "wx0000000000000000"}, API_KEY, "bad_fields"),
        ({"mch_id": "1234567890"}, API_KEY, "bad_fields"),
        ({"out_trade_no": "R2099010100000000000000"}, API_KEY, "unknown_order"),
    ],
)
def test_bad_recharge_notifications_credit_nothing(api, customer, package, client, changes, key, outcome):
    no = _recharge(api, package)["recharge_no"]
    response = notify(client, pay_result(no, 10000, **changes), key=key)
    assert b"FAIL" in response.content
    assert Notification.objects.get().outcome == outcome
    customer.refresh_from_db()
    assert customer.balance_fen == 0 and _balance_rows(customer) == []
    assert Recharge.objects.get(recharge_no=no).status == "unpaid"


def test_recharged_money_pays_an_order_from_the_balance(
    api, customer, package, address, make_sku, place_order, wechat, deliver
):
    no = _recharge(api, package)["recharge_no"]
    wechat.control.pay(no)
    deliver()
    order = place_order(api, items=[(make_sku(price_fen=9000), 1)], address=address)  # 90.00 + freight
    assert order["pay_fen"] <= 11000
    paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert paid.status_code == 200, paid.json()
    customer.refresh_from_db()
    assert customer.balance_fen == 11000 - order["pay_fen"]
    assert (
        WalletEvent.objects.filter(customer=customer, kind="balance").aggregate(s=Sum("amount"))["s"]
        == customer.balance_fen
    )


def test_unpaid_recharges_expire_and_a_lost_notification_is_found(api, customer, package, wechat):
    lost = _recharge(api, package)["recharge_no"]
    unpaid = _recharge(api, package)["recharge_no"]
    wechat.control.pay(lost)  # the notification never arrives
    later = timezone.now() + dt.timedelta(minutes=40)
    assert recharges.recharges_expire_due(now=later) == {"paid": 1, "expired": 1, "later": 0}
    assert Recharge.objects.get(recharge_no=lost).status == "paid"
    assert Recharge.objects.get(recharge_no=unpaid).status == "expired"
    customer.refresh_from_db()
    assert customer.balance_fen == 11000
    assert recharges.recharges_expire_due(now=later) == {"paid": 0, "expired": 0, "later": 0}  # twice: nothing


def test_not_yet_due_recharges_are_left_alone(api, package):
    no = _recharge(api, package)["recharge_no"]
    assert recharges.recharges_expire_due() == {"paid": 0, "expired": 0, "later": 0}
    assert Recharge.objects.get(recharge_no=no).status == "unpaid"


def test_recharges_are_reconciled(api, customer, package, wechat, deliver):
    paid = _recharge(api, package)["recharge_no"]
    wechat.control.pay(paid)
    deliver()
    run = reconcile(bill_date=timezone.localdate())
    assert (run.status, run.wechat_fen, run.local_fen, run.local_count) == ("ok", 10000, 10000, 1)

    missed = _recharge(api, package)["recharge_no"]
    wechat.control.pay(missed)  # paid at WeChat, notification lost: missing locally
    run = reconcile(bill_date=timezone.localdate())
    assert run.status == "differences"
    assert [(d["kind"], d["out_trade_no"], d["wechat_fen"], d["local_status"]) for d in run.differences] == [
        ("missing_local", missed, 10000, "unpaid")
    ]
    assert run.wechat_fen - run.local_fen == 10000


def test_recharge_amount_difference_is_reported(api, customer, package, wechat, deliver):
    no = _recharge(api, package)["recharge_no"]
    wechat.control.pay(no)
    deliver()
    Recharge.objects.filter(recharge_no=no).update(pay_fen=9000)  # our row disagrees with the bill
    run = reconcile(bill_date=timezone.localdate())
    assert [(d["kind"], d["wechat_fen"], d["local_fen"]) for d in run.differences] == [("amount", 10000, 9000)]


def test_customers_balance_equals_ledger_after_recharges(api, customer, package, wechat, deliver):
    for _ in range(3):
        wechat.control.pay(_recharge(api, package)["recharge_no"])
    deliver()
    customer = Customer.objects.get(pk=customer.pk)
    assert customer.balance_fen == 33000
    assert WalletEvent.objects.filter(customer=customer, kind="balance").count() == 6

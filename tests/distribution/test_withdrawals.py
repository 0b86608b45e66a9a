"""Withdrawals: request rules, staff approval/rejection, ONE merchant transfer per approved
withdrawal through the v3 sandbox (signed requests, signed answers, encrypted notifications),
FAIL/CANCELLED giving the money back, a lost answer queried before anything is resent."""

import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.distribution import commissions, transfers, withdrawals
from apps.distribution.models import Distributor, TransferBill, Withdrawal
from wechat_sandbox import pay_v3

pytestmark = pytest.mark.django_db


def dist(customer) -> Distributor:
    return Distributor.objects.get(customer=customer)


def sums_match(customer) -> bool:
    c = commissions.totals_check(distributor_id=dist(customer).pk)
    return (c["ledger_available"], c["ledger_frozen"], c["ledger_withdrawn"]) == (
        c["available_fen"],
        c["frozen_fen"],
        c["withdrawn_fen"],
    )


def control(wechat, method, path, body=None):
    import requests

    return requests.request(method, wechat.url + path.lstrip("/"), json=body, timeout=10).json()


def confirm(wechat, out_bill_no, result):
    """The user confirms (or the fault): the sandbox queues the notification; it is delivered
    here, in the test's thread (the test database is this thread's)."""
    answer = control(
        wechat, "POST", f"/sandbox/v3/transfers/{out_bill_no}/confirm", {"result": result, "notify": False}
    )
    assert "error" not in answer, answer
    assert [a["status"] for a in pay_v3.deliver(wechat.state)] == [204]


def test_request_rules_and_codes(earner, make_api, settings):
    customer = earner(5000)
    api = make_api(customer)
    low = api.post("/api/v1/withdrawals", {"amount_fen": settings.WITHDRAW_MIN_FEN - 1}, format="json")
    assert (low.status_code, low.json()["code"]) == (400, "invalid")
    huge = api.post("/api/v1/withdrawals", {"amount_fen": 200000}, format="json")  # WeChat: real name needed
    assert (huge.status_code, huge.json()["code"]) == (400, "invalid")
    much = api.post("/api/v1/withdrawals", {"amount_fen": 5001}, format="json")
    assert (much.status_code, much.json()["code"]) == (409, "insufficient_balance")
    ok = api.post("/api/v1/withdrawals", {"amount_fen": 3000}, format="json")
    assert ok.status_code == 201
    assert (
        set(ok.json()) == {"withdrawal_no", "amount_fen", "status", "created_at"} and ok.json()["status"] == "pending"
    )
    again = api.post("/api/v1/withdrawals", {"amount_fen": 1000}, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "limit_exceeded")
    assert dist(customer).available_fen == 2000 and sums_match(customer)
    listed = api.get("/api/v1/withdrawals").json()
    assert listed["count"] == 1 and listed["results"][0]["transfer"] is None
    assert make_api().get("/api/v1/withdrawals").status_code == 401
    assert api.post("/api/v1/withdrawals", {"amount_fen": "x"}, format="json").status_code == 400


def test_reject_gives_the_money_back_and_needs_the_permission(earner, finance):
    customer = earner(5000)
    w = withdrawals.withdrawal_request(customer_id=customer.pk, amount_fen=5000)
    nobody = User.objects.create_user("nobody", is_staff=True)
    with pytest.raises(withdrawals.PermissionDenied):
        withdrawals.withdrawal_reject(withdrawal_no=w.withdrawal_no, reason="x", user=nobody)
    with pytest.raises(withdrawals.InvalidInput):
        withdrawals.withdrawal_reject(withdrawal_no=w.withdrawal_no, reason=" ", user=finance)
    done = withdrawals.withdrawal_reject(withdrawal_no=w.withdrawal_no, reason="信息不符", user=finance)
    assert (done.status, done.reason, done.decided_by) == ("rejected", "信息不符", "fin")
    assert dist(customer).available_fen == 5000 and sums_match(customer)
    with pytest.raises(withdrawals.InvalidState):
        withdrawals.withdrawal_approve(withdrawal_no=w.withdrawal_no, user=finance)
    assert not TransferBill.objects.exists()


def approve_and_send(customer, finance, amount_fen, django_capture_on_commit_callbacks):
    w = withdrawals.withdrawal_request(customer_id=customer.pk, amount_fen=amount_fen)
    with django_capture_on_commit_callbacks(execute=False):
        withdrawals.withdrawal_approve(withdrawal_no=w.withdrawal_no, user=finance)
    bill = TransferBill.objects.get(withdrawal=w)
    assert bill.out_bill_no == w.withdrawal_no and bill.state == "new"
    return w, bill


def test_approved_withdrawal_is_paid_by_one_transfer_confirmed_by_the_user(
    earner, finance, make_api, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    customer = earner(8000)
    w, bill = approve_and_send(customer, finance, 6000, django_capture_on_commit_callbacks)
    assert transfers.transfer_send(bill_id=bill.pk) == "wait_confirm"
    listed = make_api(customer).get("/api/v1/withdrawals").json()["results"][0]
    assert listed["status"] == "wait_confirm"
    assert listed["transfer"]["package_info"] == v3_sandbox.bills[w.withdrawal_no].package_info
    assert listed["transfer"]["mch_id"] == wechat.config.mch_id
    sandbox_bill = v3_sandbox.bills[w.withdrawal_no]
    assert (sandbox_bill.amount, sandbox_bill.openid) == (6000, customer.openid)

    confirm(wechat, w.withdrawal_no, "success")
    w.refresh_from_db()
    assert w.status == "paid" and TransferBill.objects.get(pk=bill.pk).state == "success"
    me = dist(customer)
    assert (me.available_fen, me.withdrawn_fen) == (2000, 6000) and sums_match(customer)
    # a duplicate notification and a late query change nothing
    v3_sandbox.pending.append(pay_v3.notification(v3_sandbox.bills[w.withdrawal_no], mch_id=wechat.config.mch_id))
    assert [a["status"] for a in pay_v3.deliver(wechat.state)] == [204]
    assert transfers.transfer_query_now(bill_id=bill.pk) == "success"
    assert dist(customer).withdrawn_fen == 6000 and len(v3_sandbox.bills) == 1


@pytest.mark.parametrize("result,state", [("fail", "fail"), ("cancel", "cancelled")])
def test_fail_or_cancelled_transfer_gives_the_money_back(
    result, state, earner, finance, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 3000, django_capture_on_commit_callbacks)
    transfers.transfer_send(bill_id=bill.pk)
    assert dist(customer).available_fen == 0
    confirm(wechat, w.withdrawal_no, result)
    w.refresh_from_db()
    assert w.status == "failed" and w.reason
    assert TransferBill.objects.get(pk=bill.pk).state == state
    assert dist(customer).available_fen == 3000 and dist(customer).withdrawn_fen == 0 and sums_match(customer)


def test_a_lost_answer_is_queried_before_anything_is_resent(
    earner, finance, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 2500, django_capture_on_commit_callbacks)
    control(wechat, "POST", "/sandbox/v3/faults", {"transfer_create": "drop_answer"})
    assert transfers.transfer_send(bill_id=bill.pk) == "sending"  # WeChat made the bill; we never heard
    row = TransferBill.objects.get(pk=bill.pk)
    assert (row.state, row.attempts, row.last_error != "") == ("sending", 1, True)
    assert v3_sandbox.creates[w.withdrawal_no] == 1
    calls_before = dict(wechat.state.api_calls)
    assert transfers.transfers_sweep(now=row.updated_at + transfers.dt.timedelta(minutes=1))["sent"] == 1
    row = TransferBill.objects.get(pk=bill.pk)
    assert row.state == "wait_confirm" and row.queries == 1 and row.package_info
    queried = wechat.state.api_calls["v3/fund-app/mch-transfer/transfer-bills"] - calls_before.get(
        "v3/fund-app/mch-transfer/transfer-bills", 0
    )
    assert queried == 2  # the query, then the same create again for the package_info
    assert len(v3_sandbox.bills) == 1 and v3_sandbox.bills[w.withdrawal_no].amount == 2500
    assert Withdrawal.objects.get(pk=w.pk).status == "wait_confirm"


def test_a_create_wechat_never_received_is_sent_after_the_query_finds_nothing(
    earner, finance, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 2000, django_capture_on_commit_callbacks)
    control(wechat, "POST", "/sandbox/v3/faults", {"transfer_create": "system_error"})
    assert transfers.transfer_send(bill_id=bill.pk) == "sending"
    assert w.withdrawal_no not in v3_sandbox.bills
    assert transfers.transfer_send(bill_id=bill.pk) == "wait_confirm"
    assert TransferBill.objects.get(pk=bill.pk).queries == 1 and len(v3_sandbox.bills) == 1


def test_notification_with_a_bad_signature_or_key_is_refused(
    earner, finance, wechat, v3_sandbox, client, settings, django_capture_on_commit_callbacks
):
    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 3000, django_capture_on_commit_callbacks)
    transfers.transfer_send(bill_id=bill.pk)
    control(wechat, "POST", f"/sandbox/v3/transfers/{w.withdrawal_no}/confirm", {"result": "success", "notify": False})
    note = v3_sandbox.pending[0]
    tampered = json.loads(note["body"])
    tampered["summary"] = "x"
    headers = {k: v for k, v in note["headers"].items() if k != "Content-Type"}
    url = "/api/v1/payments/wechat/transfer-notify"
    assert (
        client.post(url, data=json.dumps(tampered), content_type="application/json", headers=headers).status_code == 400
    )
    assert client.post(url, data=note["body"], content_type="application/json").status_code == 400  # unsigned
    settings.WECHAT_PAY_V3_KEY = "x" * 32  # the signature verifies, the resource does not decrypt
    refused = client.post(url, data=note["body"], content_type="application/json", headers=headers)
    assert refused.status_code == 400 and refused.json()["code"] == "FAIL"
    assert Withdrawal.objects.get(pk=w.pk).status == "wait_confirm"
    settings.WECHAT_PAY_V3_KEY = pay_v3.DEMO_APIV3_KEY
    assert client.post(url, data=note["body"], content_type="application/json", headers=headers).status_code == 204
    assert Withdrawal.objects.get(pk=w.pk).status == "paid"


def test_sandbox_refuses_an_unsigned_or_badly_signed_request(wechat):
    import requests

    url = wechat.url + "v3/fund-app/mch-transfer/transfer-bills/out-bill-no/W1234567"
    answer = requests.get(url, timeout=5)
    assert answer.status_code == 401 and answer.json()["code"] == "SIGN_ERROR"
    from apps.payments import wechat_v3

    bad = wechat_v3.authorization("GET", "/v3/other", "")
    assert requests.get(url, headers={"Authorization": bad}, timeout=5).status_code == 401
    assert wechat_v3.transfer_query(out_bill_no="W1234567") is None  # signed: 404 NOT_FOUND


def test_withdrawals_command_approves_and_rejects_with_the_permission(earner, finance, capsys, v3_sandbox):
    customer = earner(5000)
    w = withdrawals.withdrawal_request(customer_id=customer.pk, amount_fen=2000)
    User.objects.create_user("clerk", is_staff=True)
    with pytest.raises(CommandError):
        call_command("withdrawals", "approve", w.withdrawal_no, "--by", "clerk")
    with pytest.raises(CommandError):
        call_command("withdrawals", "approve", "W000", "--by", "fin")
    call_command("withdrawals", "approve", w.withdrawal_no, "--by", "fin")
    assert w.withdrawal_no in capsys.readouterr().out
    assert Withdrawal.objects.get(pk=w.pk).status in ("approved", "wait_confirm")
    with pytest.raises(CommandError):
        call_command("withdrawals", "reject", w.withdrawal_no, "--reason", "x", "--by", "fin")
    other = earner(5000)
    w2 = withdrawals.withdrawal_request(customer_id=other.pk, amount_fen=2000)
    call_command("withdrawals", "reject", w2.withdrawal_no, "--reason", "资料不全", "--by", "fin")
    assert Withdrawal.objects.get(pk=w2.pk).status == "rejected" and dist(other).available_fen == 5000


def test_a_transfer_stuck_past_a_day_raises_one_alert(earner, finance, v3_sandbox, django_capture_on_commit_callbacks):
    from apps.alerts.models import Alert

    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 3000, django_capture_on_commit_callbacks)
    transfers.transfer_send(bill_id=bill.pk)
    later = TransferBill.objects.get(pk=bill.pk).created_at + transfers.dt.timedelta(hours=25)
    transfers.transfers_sweep(now=later)
    transfers.transfers_sweep(now=later)
    assert list(Alert.objects.values_list("key", flat=True)) == [f"transfer:{w.withdrawal_no}:stuck"]


def test_daily_transfer_reconciliation_settles_and_reports(
    earner, finance, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    from django.utils import timezone

    from apps.alerts.models import Alert

    customer, other = earner(3000), earner(3000)
    w, bill = approve_and_send(customer, finance, 3000, django_capture_on_commit_callbacks)
    w2, bill2 = approve_and_send(other, finance, 2000, django_capture_on_commit_callbacks)
    transfers.transfer_send(bill_id=bill.pk)
    transfers.transfer_send(bill_id=bill2.pk)
    # WeChat finished the first but its notification never came
    control(wechat, "POST", f"/sandbox/v3/transfers/{w.withdrawal_no}/confirm", {"result": "success", "notify": False})
    v3_sandbox.bills[w2.withdrawal_no].amount = 1999  # a difference only reconciliation can see
    result = transfers.transfers_reconcile(day=timezone.localdate())
    assert result == {"checked": 2, "settled": 1, "differences": 1}
    assert Withdrawal.objects.get(pk=w.pk).status == "paid" and dist(customer).withdrawn_fen == 3000
    alert = Alert.objects.get()
    assert alert.kind == "reconciliation" and w2.withdrawal_no in alert.text


def test_a_refused_create_fails_the_withdrawal_and_gives_the_money_back(
    earner, finance, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    from apps.alerts.models import Alert

    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 2500, django_capture_on_commit_callbacks)
    control(wechat, "POST", "/sandbox/v3/faults", {"transfer_create": "not_enough"})
    assert transfers.transfer_send(bill_id=bill.pk) == "sending"  # "not now": tried again later
    assert Withdrawal.objects.get(pk=w.pk).status == "approved"
    control(wechat, "POST", "/sandbox/v3/faults", {"transfer_create": "param_error"})
    assert transfers.transfer_send(bill_id=bill.pk) == "fail"  # queried (none), then refused for good
    assert Withdrawal.objects.get(pk=w.pk).status == "failed" and dist(customer).available_fen == 3000
    assert Alert.objects.filter(key=f"transfer:{w.withdrawal_no}:refused").count() == 1
    assert sums_match(customer)

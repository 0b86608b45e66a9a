"""WeChat's merchant-transfer notification goes through payments' table of callbacks
(apps.payments.notifications): the shared checks, one audit row per delivery, v3 answers
(204 handled; 400 + {"code": "FAIL"} so that WeChat sends it again)."""

import json

import pytest

from apps.distribution import transfers
from apps.distribution.models import Distributor, TransferBill, Withdrawal
from apps.payments import notifications
from apps.payments.models import InvalidNotificationDay, Notification
from tests.distribution.test_withdrawals import approve_and_send, control

pytestmark = pytest.mark.django_db

URL = "/api/v1/payments/wechat/transfer-notify"


def rows() -> list[tuple[str, str, str, int | None]]:
    return list(Notification.objects.order_by("id").values_list("kind", "outcome", "out_trade_no", "total_fee"))


def finished(wechat, v3_sandbox, out_bill_no: str) -> dict:
    """The user confirms; the sandbox's signed, encrypted SUCCESS notification (not delivered)."""
    control(wechat, "POST", f"/sandbox/v3/transfers/{out_bill_no}/confirm", {"result": "success", "notify": False})
    return next(n for n in v3_sandbox.pending if n["out_bill_no"] == out_bill_no)


def post(client, note: dict, body: str | None = None, headers: dict | None = None):
    headers = {k: v for k, v in (note["headers"] if headers is None else headers).items() if k != "Content-Type"}
    return client.post(
        URL, data=note["body"] if body is None else body, content_type="application/json", headers=headers
    )


def test_transfer_handler_is_registered_in_the_table():
    assert notifications.HANDLERS["transfer"] is transfers.TRANSFER_HANDLER
    assert transfers.TRANSFER_HANDLER.callback is notifications.TRANSFER_RESULT


def test_one_audit_row_per_delivery_applied_then_duplicate(
    earner, finance, client, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 2500, django_capture_on_commit_callbacks)
    assert transfers.transfer_send(bill_id=bill.pk) == "wait_confirm"
    note = finished(wechat, v3_sandbox, w.withdrawal_no)

    first = post(client, note)
    assert (first.status_code, first.content) == (204, b"")
    assert rows() == [("transfer", "applied", w.withdrawal_no, 2500)]
    assert Withdrawal.objects.get(pk=w.pk).status == "paid"
    assert TransferBill.objects.get(pk=bill.pk).state == "success"
    assert Distributor.objects.get(customer=customer).withdrawn_fen == 2500

    again = post(client, note)  # WeChat redelivers
    assert again.status_code == 204
    assert rows() == [("transfer", "applied", w.withdrawal_no, 2500), ("transfer", "duplicate", w.withdrawal_no, 2500)]
    assert Distributor.objects.get(customer=customer).withdrawn_fen == 2500  # booked once


def test_bad_signature_is_recorded_and_answered_4xx(
    earner, finance, client, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 3000, django_capture_on_commit_callbacks)
    transfers.transfer_send(bill_id=bill.pk)
    note = finished(wechat, v3_sandbox, w.withdrawal_no)
    tampered = json.loads(note["body"])
    tampered["summary"] = "x"

    refused = post(client, note, body=json.dumps(tampered))
    assert refused.status_code == 400 and refused["Content-Type"] == "application/json"
    assert refused.json() == {"code": "FAIL", "message": "bad signature", "detail": {}}
    unsigned = post(client, note, headers={})
    assert unsigned.status_code == 400 and unsigned.json()["code"] == "FAIL"
    assert rows() == [("transfer", "bad_signature", "", None)] * 2
    assert InvalidNotificationDay.objects.get(kind="transfer").count == 2
    assert Withdrawal.objects.get(pk=w.pk).status == "wait_confirm"

    assert post(client, note).status_code == 204  # the genuine one still applies
    assert [r[1] for r in rows()] == ["bad_signature", "bad_signature", "applied"]
    assert Withdrawal.objects.get(pk=w.pk).status == "paid"


def test_unknown_bill_and_wrong_amount_are_answered_fail_and_recorded(
    earner, finance, client, wechat, v3_sandbox, django_capture_on_commit_callbacks
):
    customer = earner(3000)
    w, bill = approve_and_send(customer, finance, 3000, django_capture_on_commit_callbacks)
    transfers.transfer_send(bill_id=bill.pk)
    note = finished(wechat, v3_sandbox, w.withdrawal_no)

    TransferBill.objects.filter(pk=bill.pk).update(amount_fen=2999)
    wrong = post(client, note)
    assert (wrong.status_code, wrong.json()["message"]) == (400, "transfer_amount does not match")
    TransferBill.objects.filter(pk=bill.pk).update(out_bill_no="W0000000000")
    unknown = post(client, note)
    assert (unknown.status_code, unknown.json()["message"]) == (400, "unknown out_bill_no")
    assert [r[1] for r in rows()] == ["amount_mismatch", "unknown_order"]
    assert Withdrawal.objects.get(pk=w.pk).status == "wait_confirm"


def test_xml_callbacks_keep_their_answers():
    assert notifications.PAY_RESULT.answer_fail("x").status == 200
    assert notifications.PAY_RESULT.answer_success() == notifications.Answer(
        notifications.wechat.SUCCESS_ACK, 200, "application/xml"
    )

"""The sandbox's Pay API v3 payments: JSAPI prepay and WeChat's validation, query, close, the
pay control's signed and encrypted TRANSACTION.SUCCESS notice, refunds and the trade bill."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from wechat_sandbox import pay_v3

KEYS = Path(pay_v3.__file__).resolve().parent / "keys"
BEIJING = timezone(timedelta(hours=8))


def call(sandbox, method: str, path: str, data: dict | None = None) -> requests.Response:
    """One request signed as the merchant (WECHATPAY2-SHA256-RSA2048)."""
    body = json.dumps(data) if data is not None else ""
    ts, nonce = str(int(time.time())), uuid.uuid4().hex
    key = serialization.load_pem_private_key((KEYS / "merchant_private.pem").read_bytes(), password=None)
    signature = key.sign(f"{method}\n{path}\n{ts}\n{nonce}\n{body}\n".encode(), padding.PKCS1v15(), hashes.SHA256())
    auth = (
        f'WECHATPAY2-SHA256-RSA2048 mchid="1900000109",nonce_str="{nonce}",'
        f'signature="{base64.b64encode(signature).decode()}",timestamp="{ts}",serial_no="{pay_v3.DEMO_MCH_SERIAL}"'
    )
    return requests.request(
        method,
        sandbox.url.rstrip("/") + path,
        data=body or None,
        headers={"Authorization": auth, "Content-Type": "application/json"},
        timeout=5,
    )


def verified(response: requests.Response) -> bool:
    """The answer's Wechatpay-Signature verifies with the platform public key."""
    public = serialization.load_pem_public_key((KEYS / "platform_public.pem").read_bytes())
    h = response.headers
    message = f"{h['Wechatpay-Timestamp']}\n{h['Wechatpay-Nonce']}\n{response.text}\n".encode()
    public.verify(base64.b64decode(h["Wechatpay-Signature"]), message, padding.PKCS1v15(), hashes.SHA256())
    return h["Wechatpay-Serial"] == pay_v3.public_key_id()


def prepay(sandbox, no: str = "SM20261206001", **changes) -> requests.Response:
    body = {
        "appid": "wx8d5f3c1a2b4e6f70",
        "mchid": "1900000109",
        "description": "星商城-青瓷盖碗",
        "out_trade_no": no,
        "time_expire": (datetime.now(BEIJING) + timedelta(minutes=30)).isoformat(timespec="seconds"),
        "notify_url": "https://shop.example/api/v1/payments/wechat/v3/notify",
        "amount": {"total": 10800, "currency": "CNY"},
        "payer": {"openid": "oUser"},
        **changes,
    }
    return call(sandbox, "POST", "/v3/pay/transactions/jsapi", body)


def test_jsapi_prepay_query_and_close(sandbox):
    first = prepay(sandbox)
    assert first.status_code == 200 and verified(first)
    assert prepay(sandbox).json()["prepay_id"] == first.json()["prepay_id"]  # same parameters: same prepay
    other = prepay(sandbox, amount={"total": 10801, "currency": "CNY"})
    assert (other.status_code, other.json()["code"]) == (400, "INVALID_REQUEST")
    found = call(sandbox, "GET", "/v3/pay/transactions/out-trade-no/SM20261206001?mchid=1900000109")
    assert found.status_code == 200 and verified(found)
    assert (found.json()["trade_state"], found.json()["amount"]["total"]) == ("NOTPAY", 10800)
    missing = call(sandbox, "GET", "/v3/pay/transactions/out-trade-no/SM20990101999?mchid=1900000109")
    assert (missing.status_code, missing.json()["code"]) == (404, "ORDER_NOT_EXIST")
    closed = call(sandbox, "POST", "/v3/pay/transactions/out-trade-no/SM20261206001/close", {"mchid": "1900000109"})
    assert closed.status_code == 204 and closed.text == "" and verified(closed)
    assert sandbox.state.trades["SM20261206001"].trade_state == "CLOSED"
    again = prepay(sandbox)
    assert (again.status_code, again.json()["code"]) == (400, "ORDER_CLOSED")


@pytest.mark.parametrize(
    "changes, code",
    [
        ({"description": "长" * 43}, "PARAM_ERROR"),  # 129 bytes
        ({"out_trade_no": "SM1"}, "PARAM_ERROR"),  # shorter than 6
        ({"time_expire": "2026-12-06 10:00:00"}, "PARAM_ERROR"),  # not RFC 3339
        ({"notify_url": "https://shop.example/notify?x=1"}, "PARAM_ERROR"),
        ({"amount": {"total": "10800"}}, "PARAM_ERROR"),
        ({"mchid": "1900000000"}, "APPID_MCHID_NOT_MATCH"),
    ],
)
def test_jsapi_refuses_what_wechat_refuses(sandbox, changes, code):
    response = prepay(sandbox, **changes)
    assert (response.status_code, response.json()["code"]) == (400, code)


def test_pay_sends_a_signed_encrypted_transaction_success_and_paid_is_orderpaid(sandbox):
    prepay(sandbox)
    got = []
    pay_v3.v3(sandbox.state).transport = lambda url, body, headers: got.append((url, body, headers)) or (204, "")
    sandbox.control.pay("SM20261206001")
    attempts = pay_v3.deliver(sandbox.state)
    assert [(a["event_type"], a["ok"]) for a in attempts] == [("TRANSACTION.SUCCESS", True)]
    url, body, headers = got[0]
    assert url == "https://shop.example/api/v1/payments/wechat/v3/notify"
    public = serialization.load_pem_public_key((KEYS / "platform_public.pem").read_bytes())
    message = f"{headers['Wechatpay-Timestamp']}\n{headers['Wechatpay-Nonce']}\n{body.decode()}\n".encode()
    public.verify(base64.b64decode(headers["Wechatpay-Signature"]), message, padding.PKCS1v15(), hashes.SHA256())
    resource = json.loads(body)["resource"]
    plain = AESGCM(pay_v3.apiv3_key().encode()).decrypt(
        resource["nonce"].encode(), base64.b64decode(resource["ciphertext"]), resource["associated_data"].encode()
    )
    paid = json.loads(plain)
    trade = sandbox.state.trades["SM20261206001"]
    assert (paid["trade_state"], paid["transaction_id"], paid["amount"]["total"]) == (
        "SUCCESS",
        trade.transaction_id,
        10800,
    )
    assert pay_v3.deliver(sandbox.state) == []  # acknowledged: not sent again
    again = prepay(sandbox)
    assert (again.status_code, again.json()["code"]) == (403, "ORDERPAID")
    closed = call(sandbox, "POST", "/v3/pay/transactions/out-trade-no/SM20261206001/close", {"mchid": "1900000109"})
    assert (closed.status_code, closed.json()["code"]) == (400, "ORDERPAID")


def test_refund_once_per_out_refund_no_and_the_trade_bill(sandbox):
    prepay(sandbox)
    pay_v3.v3(sandbox.state).transport = lambda url, body, headers: (204, "")
    sandbox.control.pay("SM20261206001")
    body = {
        "out_trade_no": "SM20261206001",
        "out_refund_no": "SM20261206001R1",
        "notify_url": "https://shop.example/api/v1/payments/wechat/v3/refund-notify",
        "amount": {"refund": 5000, "total": 10800, "currency": "CNY"},
    }
    first = call(sandbox, "POST", "/v3/refund/domestic/refunds", body)
    assert first.status_code == 200 and verified(first) and first.json()["status"] == "SUCCESS"
    assert call(sandbox, "POST", "/v3/refund/domestic/refunds", body).json()["refund_id"] == first.json()["refund_id"]
    too_much = call(sandbox, "POST", "/v3/refund/domestic/refunds", {**body, "out_refund_no": "SM20261206001R2",
                    "amount": {"refund": 5801, "total": 10800, "currency": "CNY"}})  # fmt: skip
    assert (too_much.status_code, too_much.json()["code"]) == (403, "NOT_ENOUGH")
    query = call(sandbox, "GET", "/v3/refund/domestic/refunds/SM20261206001R1")
    assert query.json()["status"] == "SUCCESS" and query.json()["amount"]["refund"] == 5000
    assert call(sandbox, "GET", "/v3/refund/domestic/refunds/NOPE0001").status_code == 404
    events = [a["event_type"] for a in pay_v3.deliver(sandbox.state)]
    assert events == ["TRANSACTION.SUCCESS", "REFUND.SUCCESS"]

    day = datetime.now(BEIJING).date().isoformat()
    bill = call(sandbox, "GET", f"/v3/bill/tradebill?bill_date={day}&bill_type=ALL")
    assert bill.status_code == 200 and verified(bill) and bill.json()["hash_type"] == "SHA1"
    path = bill.json()["download_url"].split(sandbox.url.rstrip("/"), 1)[1]
    text = call(sandbox, "GET", path).content
    assert hashlib.sha1(text).hexdigest() == bill.json()["hash_value"]
    lines = text.decode().splitlines()
    assert lines[0].startswith("交易时间,") and len(lines) == 5  # header, payment, refund, summary x2
    empty = call(sandbox, "GET", "/v3/bill/tradebill?bill_date=2020-01-01&bill_type=ALL")
    assert (empty.status_code, empty.json()["code"]) == (400, "NO_STATEMENT_EXIST")


def test_an_unsigned_v3_request_is_401(sandbox):
    response = requests.get(sandbox.url.rstrip("/") + "/v3/pay/transactions/out-trade-no/SM1?mchid=1", timeout=5)
    assert (response.status_code, response.json()["code"]) == (401, "SIGN_ERROR")


def test_the_notifier_thread_delivers_v3_notices_and_retries_on_the_schedule():
    from wechat_sandbox import SandboxConfig, SandboxServer

    answers = [(500, "busy"), (204, "")]  # the shop fails once, then acknowledges
    seen = []

    def transport(url, body, headers):
        seen.append(time.monotonic())
        return answers.pop(0) if answers else (204, "")

    with SandboxServer(config=SandboxConfig(retry_scale=0.01), auto_notify=True) as server:
        pay_v3.v3(server.state).transport = transport
        assert prepay(server).status_code == 200
        server.control.pay("SM20261206001")
        deadline = time.monotonic() + 10
        while (pay_v3.v3(server.state).pending or len(seen) < 2) and time.monotonic() < deadline:
            time.sleep(0.05)  # the retry is scheduled, not pending, while it waits its turn
        time.sleep(0.3)  # no third delivery after the 204
        notes = pay_v3.v3(server.state).notes
    assert len(seen) == 2 and seen[1] - seen[0] >= 0.15 * 0.9  # the first retry waits 15 s x 0.01
    assert [a["status"] for a in notes[0]["answers"]] == [500, 204]
    assert notes[0]["event_type"] == "TRANSACTION.SUCCESS"

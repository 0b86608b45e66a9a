"""Payment notifications: content, acknowledgement rule, retries on the scaled schedule."""

import threading
import time

import pytest
import requests
from sandbox_helpers import (
    FAIL_XML,
    NOTIFY_URL,
    OK_XML,
    Recorder,
    ShopStub,
    create_order,
    make_pay,
    paid_order,
)
from wechatpy.exceptions import InvalidSignatureException

from wechat_sandbox import SandboxConfig, SandboxServer, wire
from wechat_sandbox.notifier import is_acknowledged


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def test_pay_notification_verifies_with_wechatpy(sandbox, wxpay):
    trade = paid_order(wxpay, sandbox, "SM1", total_fee=19900, attach="order=SM1")
    recorder = Recorder()
    attempts = sandbox.deliver_pending(recorder)
    assert len(attempts) == 1 and attempts[0]["ok"] and attempts[0]["status"] == 200
    url, body = recorder.calls[0]
    assert url == NOTIFY_URL
    data = wxpay.parse_payment_result(body.decode())
    assert (data["return_code"], data["result_code"]) == ("SUCCESS", "SUCCESS")
    assert (data["appid"], data["mch_id"]) == ("wx8d5f3c1a2b4e6f70", "1900000109")
    assert (data["out_trade_no"], data["total_fee"], data["cash_fee"]) == ("SM1", 19900, 19900)
    assert data["transaction_id"] == trade["transaction_id"]
    assert data["time_end"] == trade["time_end"] and data["attach"] == "order=SM1"
    assert (data["openid"], data["trade_type"], data["fee_type"]) == ("oTestUser", "JSAPI", "CNY")
    assert data["bank_type"] and data["is_subscribe"] == "N" and "coupon_fee" not in data
    with pytest.raises(InvalidSignatureException):
        wxpay.parse_payment_result(body.decode().replace("19900", "1"))


def test_pay_notification_with_coupon_fields(sandbox, wxpay):
    create_order(wxpay, "SM1", total_fee=1000)
    trade = sandbox.control.pay("SM1", coupon_fee=300)
    assert (trade["cash_fee"], trade["coupon_fee"]) == (700, 300)
    data = wxpay.parse_payment_result(sandbox.state.notifications[1].body)
    assert (data["total_fee"], data["cash_fee"], data["coupon_fee"]) == (1000, 700, 300)
    assert data["coupon_count"] == 1 and data["coupon_fee_0"] == "300" and data["coupon_id_0"]
    query = wxpay.order.query(out_trade_no="SM1")
    assert (query["cash_fee"], query["coupon_fee"]) == ("700", "300")


def test_deliver_pending_sends_nothing_until_called(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1")
    time.sleep(0.05)
    assert sandbox.control.notifications()[0]["attempts"] == []
    recorder = Recorder()
    assert len(sandbox.deliver_pending(recorder)) == 1
    assert sandbox.deliver_pending(recorder) == []  # acknowledged: not sent again
    assert len(recorder.calls) == 1


@pytest.mark.parametrize(
    "status, text",
    [
        (200, "success"),
        (200, FAIL_XML),
        (500, OK_XML),
        (200, "<xml><return_code>SUCCESS</return_code>"),
        (200, '<!DOCTYPE xml [<!ENTITY s "SUCCESS">]><xml><return_code>&s;</return_code></xml>'),
    ],
)
def test_is_acknowledged_only_for_xml_success(status, text):
    assert not is_acknowledged(status, text)
    assert is_acknowledged(200, OK_XML)
    assert is_acknowledged(200, "<xml><return_code>SUCCESS</return_code></xml>")


def test_notifier_retries_on_scaled_schedule_until_success(wxpay):
    scale = 0.002  # waits: 30 ms, 30 ms, 60 ms
    recorder = Recorder((500, "oops"), (200, FAIL_XML), ConnectionError("refused"))
    with SandboxServer(SandboxConfig(retry_scale=scale), transport=recorder) as sandbox:
        client = make_pay(sandbox.url)
        paid_order(client, sandbox, "SM1")
        note = sandbox.state.notifications[1]
        assert wait_until(lambda: note.acknowledged)
        time.sleep(0.15)  # nothing more after the acknowledgement
        attempts = sandbox.control.notifications()[0]["attempts"]
    assert [a["ok"] for a in attempts] == [False, False, False, True]
    assert [a["status"] for a in attempts] == [500, 200, 0, 200]
    assert "ConnectionError" in attempts[2]["error"] and attempts[1]["response"] == FAIL_XML
    gaps = [b["ts"] - a["ts"] for a, b in zip(attempts, attempts[1:])]
    for gap, wait in zip(gaps, (15 * scale, 15 * scale, 30 * scale)):
        assert wait <= gap < wait + 0.5
    assert len(recorder.calls) == 4


def test_notifier_gives_up_after_the_last_retry():
    recorder = Recorder(*[(503, "down")] * 20)
    with SandboxServer(SandboxConfig(retry_scale=0.000005), transport=recorder) as sandbox:
        client = make_pay(sandbox.url)
        paid_order(client, sandbox, "SM1")
        note = sandbox.state.notifications[1]
        assert wait_until(lambda: note.gave_up)
        time.sleep(0.05)
        assert len(note.attempts) == 16 == len(recorder.calls)  # 1 + 15 retries
        assert sandbox.control.notifications()[0]["status"] == "gave_up"
        assert sandbox.deliver_pending(recorder) == []


def test_notification_over_http_to_shop(sandbox, wxpay):
    with ShopStub([(200, FAIL_XML)]) as shop:
        paid_order(wxpay, sandbox, "SM1", notify_url=shop.url)
        first = sandbox.control.deliver()
        second = sandbox.control.deliver()
    assert ([a["ok"] for a in first], [a["ok"] for a in second]) == ([False], [True])
    assert len(shop.bodies) == 2 and shop.bodies[0] == shop.bodies[1]  # same notice re-sent
    assert wxpay.parse_payment_result(shop.bodies[0].decode())["out_trade_no"] == "SM1"


def test_notification_to_unreachable_shop_is_a_failed_attempt(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1", notify_url="http://127.0.0.1:9/notify")
    attempt = sandbox.deliver_pending()[0]
    assert (attempt["ok"], attempt["status"]) == (False, 0) and attempt["error"]
    note = sandbox.control.notifications()[0]
    assert note["status"] == "pending" and note["attempt_count"] == 1


def test_resend_sends_same_body_again(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1")
    recorder = Recorder()
    sandbox.deliver_pending(recorder)
    note_id = sandbox.control.notifications()[0]["id"]
    sandbox.state.transport = recorder
    attempts = sandbox.control.resend(note_id)
    assert len(attempts) == 1 and attempts[0]["ok"] and attempts[0]["attempt_no"] == 2
    assert recorder.calls[0] == recorder.calls[1]
    with pytest.raises(Exception) as exc:
        sandbox.control.resend(999)
    assert exc.value.status == 404


def test_duplicate_fault_delivers_twice_concurrently(sandbox, wxpay):
    sandbox.control.set_faults(notify={"duplicate": True, "count": 1})
    paid_order(wxpay, sandbox, "SM1")
    paid_order(wxpay, sandbox, "SM2")
    inside, peak, lock = [0], [0], threading.Lock()

    def slow_shop(url, body):
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        time.sleep(0.05)
        with lock:
            inside[0] -= 1
        return 200, OK_XML

    attempts = sandbox.deliver_pending(slow_shop)
    assert [a["notification_id"] for a in attempts] == [1, 1, 2]  # count=1: only the first
    assert peak[0] == 2
    assert sandbox.control.faults() == {}


def test_late_seconds_fault_delays_first_attempt(wxpay):
    recorder = Recorder()
    with SandboxServer(SandboxConfig(), transport=recorder) as sandbox:
        sandbox.control.set_faults(notify={"late_seconds": 0.3})
        client = make_pay(sandbox.url)
        paid_order(client, sandbox, "SM1")
        started = time.time()
        note = sandbox.state.notifications[1]
        assert wait_until(lambda: note.acknowledged)
        assert note.attempts[0]["ts"] - started >= 0.25


def test_control_deliver_endpoint_uses_http(sandbox, wxpay):
    with ShopStub() as shop:
        paid_order(wxpay, sandbox, "SM1", notify_url=shop.url)
        response = requests.post(sandbox.url + "sandbox/notifications/deliver", timeout=10)
    attempts = response.json()["attempts"]
    assert attempts[0]["ok"] and attempts[0]["url"] == shop.url
    assert wire.parse_xml(shop.bodies[0])["out_trade_no"] == "SM1"

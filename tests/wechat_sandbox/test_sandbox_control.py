"""The control API and the Python API (SandboxServer, SandboxControl)."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from sandbox_helpers import create_order, paid_order

import wechat_sandbox
from wechat_sandbox import SandboxControl, SandboxControlError, SandboxServer


def test_control_health_and_unknown_path(sandbox):
    assert sandbox.control.health() == {"status": "ok"}
    missing = requests.get(sandbox.url + "sandbox/nope", timeout=5)
    assert missing.status_code == 404 and "error" in missing.json()


def test_control_users_and_login_codes(sandbox):
    control = sandbox.control
    generated = control.create_user(nickname="小明")
    assert re.fullmatch(r"o[A-Za-z0-9_-]{27}", generated["openid"])
    assert control.create_user("oFixed", nickname="A")["openid"] == "oFixed"
    control.create_user("oFixed", blocked=True)  # upsert: same user, flag set
    assert [u["blocked"] for u in control.users() if u["openid"] == "oFixed"] == [True]
    code = control.login_code()
    assert len(code["code"]) == 32 and code["expires_in"] == 300
    assert code["openid"] in sandbox.state.users
    assert control.login_code("oFixed")["openid"] == "oFixed"


def test_control_pay_errors(sandbox, wxpay):
    with pytest.raises(SandboxControlError) as exc:
        sandbox.control.pay("NOPE")
    assert exc.value.status == 404
    create_order(wxpay, "SM1", total_fee=100)
    for coupon in (100, -1):
        with pytest.raises(SandboxControlError) as exc:
            sandbox.control.pay("SM1", coupon_fee=coupon)
        assert exc.value.status == 400
    sandbox.control.pay("SM1")
    with pytest.raises(SandboxControlError) as exc:
        sandbox.control.pay("SM1")
    assert exc.value.status == 409 and "paid" in exc.value.message
    with pytest.raises(SandboxControlError) as exc:
        sandbox.control.cancel("SM1")
    assert exc.value.status == 409


def test_control_pay_refused_after_prepay_expiry(sandbox, wxpay):
    create_order(wxpay, "SM1")
    now = sandbox.state.clock()
    sandbox.state.clock = lambda: now + 7200
    with pytest.raises(SandboxControlError) as exc:
        sandbox.control.pay("SM1")
    assert exc.value.status == 409 and "expired" in exc.value.message


def test_control_listings(sandbox, wxpay):
    trade = paid_order(wxpay, sandbox, "SM1", total_fee=500)
    assert trade["trade_state"] == "SUCCESS" and trade["notification_id"] == 1
    wxpay.refund.apply(
        total_fee=500, refund_fee=200, out_refund_no="RF1", out_trade_no="SM1", notify_url="http://shop.invalid/refund"
    )
    assert [t["out_trade_no"] for t in sandbox.control.trades()] == ["SM1"]
    detail = sandbox.control.trade("SM1")
    assert detail["trade_state"] == "REFUND" and detail["refunds"][0]["refund_fee"] == 200
    assert [e["event"] for e in detail["events"]] == ["unifiedorder", "paid", "refund"]
    assert [n["kind"] for n in sandbox.control.notifications()] == ["payment", "refund"]
    assert [n["kind"] for n in sandbox.control.notifications(kind="refund")] == ["refund"]
    assert sandbox.control.refunds()[0]["refund_status"] == "SUCCESS"
    assert sandbox.control.messages() == []
    with pytest.raises(SandboxControlError) as exc:
        sandbox.control.trade("NOPE")
    assert exc.value.status == 404


def test_control_reset_forgets_everything(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1")
    sandbox.control.set_faults(orderquery={"system_error": True})
    sandbox.state.clock = lambda: 0.0
    sandbox.state.config.min_close_age_seconds = 300
    sandbox.control.reset()
    assert sandbox.control.trades() == [] and sandbox.control.notifications() == []
    assert sandbox.control.faults() == {} and sandbox.state.users == {}
    assert sandbox.state.clock() > 1e9  # the real clock again
    assert sandbox.state.config.min_close_age_seconds == 0
    assert sandbox.state.config.retry_scale == 0.001


def test_control_rejects_bad_json(sandbox):
    response = requests.post(sandbox.url + "sandbox/pay", data="{", timeout=5)
    assert response.status_code == 400 and "JSON" in response.json()["error"]
    response = requests.post(sandbox.url + "sandbox/pay", json={}, timeout=5)
    assert response.status_code == 400 and "out_trade_no" in response.json()["error"]


def test_server_context_manager_frees_port():
    with SandboxServer(auto_notify=False) as server:
        url = server.url
        assert url.endswith("/") and server.port > 0
        assert requests.get(url + "sandbox/health", timeout=5).ok
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "sandbox/health", timeout=1)


def test_cli_serves_and_stops_on_sigterm(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "WECHAT_MCH_ID": "1900000999", "SANDBOX_RETRY_SCALE": "0.5"}
    process = subprocess.Popen(
        [sys.executable, "-m", "wechat_sandbox", "--port", str(port), "--appid", "wxcli", "--log-level", "WARNING"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        control = SandboxControl(f"http://127.0.0.1:{port}/", timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                config = control.config()
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, process.stdout.read()
                time.sleep(0.05)
        assert (config["appid"], config["mch_id"], config["retry_scale"]) == ("wxcli", "1900000999", 0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_package_never_imports_django():
    package = Path(wechat_sandbox.__file__).parent
    for module in package.glob("*.py"):
        source = module.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import)\s+django", source, re.M), module.name

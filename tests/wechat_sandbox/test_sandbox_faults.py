"""Fault switches: system errors, dropped connections, late answers, self-clearing counts."""

import pytest
import requests
from sandbox_helpers import create_order, make_pay, paid_order
from wechatpy.exceptions import WeChatPayException

from wechat_sandbox import SandboxControlError


def test_fault_system_error_applies_count_times(sandbox, wxpay):
    create_order(wxpay, "SM1")
    faults = sandbox.control.set_faults({"pay/orderquery": {"system_error": True, "count": 2}})
    assert faults == {"pay/orderquery": {"system_error": True, "count": 2}}
    for _ in range(2):
        with pytest.raises(WeChatPayException) as exc:
            wxpay.order.query(out_trade_no="SM1")
        assert (exc.value.result_code, exc.value.errcode) == ("FAIL", "SYSTEMERROR")
    assert wxpay.order.query(out_trade_no="SM1")["trade_state"] == "NOTPAY"
    assert sandbox.control.faults() == {}


def test_fault_system_error_does_not_process_the_call(sandbox, wxpay):
    sandbox.control.set_faults(unifiedorder={"system_error": True, "count": 1})
    with pytest.raises(WeChatPayException):
        create_order(wxpay, "SM1")
    assert "SM1" not in sandbox.state.trades
    assert create_order(wxpay, "SM1")["prepay_id"]


def test_fault_drop_closes_connection_after_processing(sandbox, wxpay):
    sandbox.control.set_faults(unifiedorder={"drop": True, "count": 1})
    with pytest.raises(requests.ConnectionError):
        create_order(wxpay, "SM1")
    prepay_id = sandbox.state.trades["SM1"].prepay_id  # WeChat did the work; the answer was lost
    assert create_order(wxpay, "SM1")["prepay_id"] == prepay_id


def test_fault_drop_500_answers_http_500(sandbox, wxpay):
    create_order(wxpay, "SM1")
    sandbox.control.set_faults(orderquery={"drop": "500", "count": 1})
    with pytest.raises(WeChatPayException) as exc:
        wxpay.order.query(out_trade_no="SM1")
    assert exc.value.response.status_code == 500
    assert wxpay.order.query(out_trade_no="SM1")["trade_state"] == "NOTPAY"


def test_fault_delay_triggers_client_timeout(sandbox):
    impatient = make_pay(sandbox.url, timeout=0.2)
    sandbox.control.set_faults(unifiedorder={"delay_seconds": 0.5, "count": 1})
    with pytest.raises(requests.Timeout):
        create_order(impatient, "SM1")
    assert create_order(impatient, "SM1")["prepay_id"] == sandbox.state.trades["SM1"].prepay_id


def test_fault_err_code_on_refund_then_retry_same_out_refund_no(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1")
    sandbox.control.set_faults(refund={"err_code": "BIZERR_NEED_RETRY", "count": 1})
    with pytest.raises(WeChatPayException) as exc:
        wxpay.refund.apply(total_fee=100, refund_fee=100, out_refund_no="RF1", out_trade_no="SM1")
    assert exc.value.errcode == "BIZERR_NEED_RETRY"
    assert sandbox.control.refunds() == []
    again = wxpay.refund.apply(total_fee=100, refund_fee=100, out_refund_no="RF1", out_trade_no="SM1")
    assert again["result_code"] == "SUCCESS"


def test_fault_miniprogram_system_error(sandbox):
    sandbox.control.set_faults({"cgi-bin/token": {"system_error": True, "count": 1}})
    params = {"grant_type": "client_credential", "appid": sandbox.config.appid, "secret": sandbox.config.app_secret}
    assert requests.get(sandbox.url + "cgi-bin/token", params=params, timeout=5).json()["errcode"] == -1
    assert "access_token" in requests.get(sandbox.url + "cgi-bin/token", params=params, timeout=5).json()


def test_faults_control_set_get_delete_and_validation(sandbox):
    control = sandbox.control
    control.set_faults({"/pay/closeorder": {"delay_seconds": 1}}, notify={"duplicate": True})
    assert set(control.faults()) == {"pay/closeorder", "notify"}
    control.set_faults(closeorder=None)
    assert set(control.faults()) == {"notify"}
    control.clear_faults()
    assert control.faults() == {}
    for bad in (
        {"nope": {"drop": True}},
        {"unifiedorder": {"duplicate": True}},
        {"notify": {"drop": True}},
        {"unifiedorder": {"count": 0}},
        {"unifiedorder": {"delay_seconds": -1}},
    ):
        with pytest.raises(SandboxControlError) as exc:
            control.set_faults(bad)
        assert exc.value.status == 400
    assert control.faults() == {}

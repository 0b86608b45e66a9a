"""Pay V2 order endpoints through wechatpy: unifiedorder, orderquery, closeorder, checks."""

import threading

import pytest
import requests
import xmltodict
from sandbox_helpers import NOTIFY_URL, create_order, make_pay
from wechatpy.exceptions import WeChatPayException

from wechat_sandbox import DEMO_PAY_API_KEY, SandboxConfig, SandboxServer, wire


def post_xml(url, endpoint, fields, api_key=DEMO_PAY_API_KEY, sign=True):
    body = wire.to_xml(wire.signed(fields, api_key) if sign else fields)
    response = requests.post(url + endpoint, data=body.encode(), timeout=5)
    return response, wire.parse_xml(response.content)


def base_fields(**extra):
    return {"appid": "wx8d5f3c1a2b4e6f70", "mch_id": "1900000109", "nonce_str": "n0nce", **extra}


def test_unifiedorder_returns_signed_prepay_id_and_stores_trade(sandbox, wxpay):
    result = create_order(wxpay, "SM1", total_fee=19900, attach="order=1")
    assert result["result_code"] == "SUCCESS" and result["trade_type"] == "JSAPI"
    assert result["prepay_id"].startswith("wx") and len(result["prepay_id"]) == 36
    assert wire.verify_sign(result, DEMO_PAY_API_KEY)
    trade = sandbox.state.trades["SM1"]
    assert (trade.prepay_id, trade.total_fee, trade.trade_state) == (result["prepay_id"], 19900, "NOTPAY")
    assert (trade.openid, trade.notify_url, trade.attach) == ("oTestUser", NOTIFY_URL, "order=1")


def test_unifiedorder_accepts_hmac_sha256_and_signs_answer_alike(sandbox, wxpay):
    result = create_order(wxpay, "SM-HMAC", sign_type="HMAC-SHA256")
    assert result["prepay_id"] == sandbox.state.trades["SM-HMAC"].prepay_id
    assert wire.calculate_sign(result, DEMO_PAY_API_KEY, wire.SIGN_HMAC_SHA256) == result["sign"]


def test_unifiedorder_bad_signature_rejected(sandbox):
    impostor = make_pay(sandbox.url, api_key="another0merchant0key000000000032")
    with pytest.raises(WeChatPayException) as exc:
        create_order(impostor, "SM1")
    assert exc.value.return_code == "FAIL" and exc.value.return_msg == "签名错误"
    assert "SM1" not in sandbox.state.trades


def test_unifiedorder_wrong_mch_id_or_appid_rejected(sandbox):
    with pytest.raises(WeChatPayException) as exc:
        create_order(make_pay(sandbox.url, mch_id="1234567890"), "SM1")
    assert exc.value.return_code == "FAIL" and "mch_id" in exc.value.return_msg
    with pytest.raises(WeChatPayException) as exc:
        create_order(make_pay(sandbox.url, appid="wx0000000000000000"), "SM1")
    assert exc.value.return_code == "FAIL" and "appid" in exc.value.return_msg
    assert sandbox.state.trades == {}


def test_unifiedorder_missing_params_param_error(sandbox):
    fields = base_fields(
        body="b",
        out_trade_no="SM1",
        total_fee="1",
        spbill_create_ip="1.1.1.1",
        notify_url=NOTIFY_URL,
        trade_type="JSAPI",
    )
    _, answer = post_xml(sandbox.url, "pay/unifiedorder", fields)
    assert (answer["result_code"], answer["err_code"]) == ("FAIL", "PARAM_ERROR")
    assert "openid" in answer["err_code_des"]
    assert wire.verify_sign(answer, DEMO_PAY_API_KEY)
    del fields["body"]
    _, answer = post_xml(sandbox.url, "pay/unifiedorder", {**fields, "openid": "o1"})
    assert answer["err_code"] == "PARAM_ERROR" and "body" in answer["err_code_des"]


@pytest.mark.parametrize(
    "change, des",
    [
        ({"out_trade_no": "X" * 33}, "out_trade_no"),
        ({"total_fee": "0"}, "total_fee"),
        ({"total_fee": "1.5"}, "total_fee"),
        ({"trade_type": "NATIVE"}, "trade_type"),
        ({"notify_url": "ftp://x"}, "notify_url"),
    ],
)
def test_unifiedorder_invalid_params_param_error(sandbox, change, des):
    fields = base_fields(
        body="b",
        out_trade_no="SM1",
        total_fee="1",
        spbill_create_ip="1.1.1.1",
        notify_url=NOTIFY_URL,
        trade_type="JSAPI",
        openid="o1",
    )
    fields.update(change)
    _, answer = post_xml(sandbox.url, "pay/unifiedorder", fields)
    assert answer["err_code"] == "PARAM_ERROR" and des in answer["err_code_des"]
    assert sandbox.state.trades == {}


def test_unifiedorder_same_params_again_same_prepay_id(sandbox, wxpay):
    first = create_order(wxpay, "SM1")
    second = create_order(wxpay, "SM1")  # new nonce, time_start, time_expire: still the same
    assert second["prepay_id"] == first["prepay_id"]
    assert len(sandbox.state.trades) == 1


def test_unifiedorder_new_prepay_id_after_two_hours(sandbox, wxpay):
    first = create_order(wxpay, "SM1")
    now = sandbox.state.clock()
    sandbox.state.clock = lambda: now + 7201
    assert create_order(wxpay, "SM1")["prepay_id"] != first["prepay_id"]


def test_unifiedorder_changed_params_out_trade_no_used(sandbox, wxpay):
    create_order(wxpay, "SM1", total_fee=100)
    with pytest.raises(WeChatPayException) as exc:
        create_order(wxpay, "SM1", total_fee=200)
    assert (exc.value.result_code, exc.value.errcode) == ("FAIL", "OUT_TRADE_NO_USED")
    assert sandbox.state.trades["SM1"].total_fee == 100


def test_unifiedorder_paid_orderpaid_closed_orderclosed(sandbox, wxpay):
    create_order(wxpay, "SM1")
    sandbox.control.pay("SM1")
    with pytest.raises(WeChatPayException) as exc:
        create_order(wxpay, "SM1")
    assert exc.value.errcode == "ORDERPAID"
    create_order(wxpay, "SM2")
    wxpay.order.close("SM2")
    with pytest.raises(WeChatPayException) as exc:
        create_order(wxpay, "SM2")
    assert exc.value.errcode == "ORDERCLOSED"


def test_unifiedorder_strict_openid_rejects_unknown_user():
    with SandboxServer(SandboxConfig(strict_openid=True), auto_notify=False) as sandbox:
        client = make_pay(sandbox.url)
        with pytest.raises(WeChatPayException) as exc:
            create_order(client, "SM1", openid="oNeverLoggedIn")
        assert exc.value.errcode == "PARAM_ERROR"
        openid = sandbox.control.login_code()["openid"]
        assert create_order(client, "SM1", openid=openid)["result_code"] == "SUCCESS"


def test_orderquery_follows_trade_states(sandbox, wxpay):
    create_order(wxpay, "SM1", total_fee=250, attach="a1")
    notpay = wxpay.order.query(out_trade_no="SM1")
    assert (notpay["trade_state"], notpay["total_fee"], notpay["attach"]) == ("NOTPAY", "250", "a1")
    assert "transaction_id" not in notpay and wire.verify_sign(notpay, DEMO_PAY_API_KEY)
    sandbox.control.user_paying("SM1")
    assert wxpay.order.query(out_trade_no="SM1")["trade_state"] == "USERPAYING"
    sandbox.control.cancel("SM1")
    assert wxpay.order.query(out_trade_no="SM1")["trade_state"] == "NOTPAY"
    sandbox.control.pay_error("SM1")
    assert wxpay.order.query(out_trade_no="SM1")["trade_state"] == "PAYERROR"
    trade = sandbox.control.pay("SM1")
    paid = wxpay.order.query(out_trade_no="SM1")
    assert paid["trade_state"] == "SUCCESS" and paid["trade_state_desc"] == "支付成功"
    assert paid["transaction_id"] == trade["transaction_id"] and len(paid["transaction_id"]) == 28
    assert (paid["total_fee"], paid["cash_fee"], paid["openid"]) == ("250", "250", "oTestUser")
    assert paid["time_end"] == trade["time_end"] and len(paid["time_end"]) == 14
    by_txn = wxpay.order.query(transaction_id=trade["transaction_id"])
    assert by_txn["out_trade_no"] == "SM1"


def test_orderquery_unknown_orderNotExist(sandbox, wxpay):
    with pytest.raises(WeChatPayException) as exc:
        wxpay.order.query(out_trade_no="NOPE")
    assert exc.value.errcode == "ORDERNOTEXIST"


def test_closeorder_closes_and_blocks_payment(sandbox, wxpay):
    create_order(wxpay, "SM1")
    assert wxpay.order.close("SM1")["result_code"] == "SUCCESS"
    assert wxpay.order.query(out_trade_no="SM1")["trade_state"] == "CLOSED"
    with pytest.raises(WeChatPayException) as exc:
        wxpay.order.close("SM1")
    assert exc.value.errcode == "ORDERCLOSED"
    with pytest.raises(Exception) as exc:
        sandbox.control.pay("SM1")
    assert exc.value.status == 409


def test_closeorder_paid_orderpaid_and_unknown(sandbox, wxpay):
    create_order(wxpay, "SM1")
    sandbox.control.pay("SM1")
    with pytest.raises(WeChatPayException) as exc:
        wxpay.order.close("SM1")
    assert exc.value.errcode == "ORDERPAID"
    with pytest.raises(WeChatPayException) as exc:
        wxpay.order.close("NOPE")
    assert exc.value.errcode == "ORDERNOTEXIST"


def test_closeorder_min_close_age_enforced():
    with SandboxServer(SandboxConfig(min_close_age_seconds=300), auto_notify=False) as sandbox:
        client = make_pay(sandbox.url)
        create_order(client, "SM1")
        with pytest.raises(WeChatPayException) as exc:
            client.order.close("SM1")
        assert exc.value.errcode == "SYSTEMERROR"
        now = sandbox.state.clock()
        sandbox.state.clock = lambda: now + 300
        assert client.order.close("SM1")["result_code"] == "SUCCESS"


def test_pay_endpoints_reject_bad_xml_dtd_and_get(sandbox):
    attack = (
        '<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml><appid>&x;</appid></xml>'
    )
    for body in (attack, "<xml><appid>", "plain text"):
        answer = xmltodict.parse(requests.post(sandbox.url + "pay/orderquery", data=body, timeout=5).text)["xml"]
        assert answer == {"return_code": "FAIL", "return_msg": "XML格式错误"}
    got = xmltodict.parse(requests.get(sandbox.url + "pay/orderquery", timeout=5).text)["xml"]
    assert got["return_code"] == "FAIL"
    _, answer = post_xml(sandbox.url, "pay/orderquery", base_fields(out_trade_no="x"), sign=False)
    assert answer["return_code"] == "FAIL" and "sign" in answer["return_msg"]


def test_unifiedorder_concurrent_same_out_trade_no_one_trade(sandbox):
    clients = [make_pay(sandbox.url) for _ in range(8)]
    barrier = threading.Barrier(len(clients))
    results = []

    def order(client):
        barrier.wait()
        results.append(create_order(client, "SM-RACE")["prepay_id"])

    threads = [threading.Thread(target=order, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and len(set(results)) == 1
    assert list(sandbox.state.trades) == ["SM-RACE"]

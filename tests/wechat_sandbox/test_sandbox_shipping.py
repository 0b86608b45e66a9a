"""The shipping-information APIs (小程序发货信息管理): WeChat's checks, the uploads kept, the
jump path, is_trade_managed, get_order and the errcode fault."""

import pytest
import requests
from sandbox_helpers import create_order, make_pay

from wechat_sandbox import DEMO_APP_SECRET, DEMO_APPID, DEMO_MCH_ID

OPENID = "oShipUser"


@pytest.fixture
def token(sandbox):
    answer = requests.get(
        sandbox.url + "cgi-bin/token",
        params={"grant_type": "client_credential", "appid": DEMO_APPID, "secret": DEMO_APP_SECRET},
        timeout=5,
    ).json()
    return answer["access_token"]


@pytest.fixture
def post(sandbox, token):
    def call(path: str, body: dict, access_token: str | None = token) -> dict:
        params = {"access_token": access_token} if access_token else {}
        return requests.post(sandbox.url + path, json=body, params=params, timeout=5).json()

    return call


@pytest.fixture
def trade(sandbox):
    """``trade(no, paid=True)``: a unifiedorder'd trade of OPENID, paid by the user unless told."""

    def make(out_trade_no: str, paid: bool = True) -> None:
        create_order(make_pay(sandbox.url), out_trade_no, openid=OPENID)
        if paid:
            sandbox.control.pay(out_trade_no)

    return make


def body(out_trade_no: str = "SM1", **changes) -> dict:
    """An express (type 1, SF) upload of ``out_trade_no``, with ``changes``."""
    item = {
        "tracking_no": "SF1234567890",
        "express_company": "SF",
        "item_desc": "青瓷盖碗*2",
        "contact": {"receiver_contact": "138****1234"},
    }
    data = {
        "order_key": {"order_number_type": 1, "mchid": DEMO_MCH_ID, "out_trade_no": out_trade_no},
        "logistics_type": 1,
        "delivery_mode": 1,
        "shipping_list": [item],
        "upload_time": "2026-12-06T18:00:00+08:00",
        "payer": {"openid": OPENID},
    }
    data.update(changes)
    return data


UPLOAD = "wxa/sec/order/upload_shipping_info"


def test_upload_is_kept_and_read_back_by_get_order(sandbox, post, trade):
    trade("SM1")
    assert post(UPLOAD, body()) == {"errcode": 0, "errmsg": "ok"}
    order = post("wxa/sec/order/get_order", {"merchant_id": DEMO_MCH_ID, "merchant_trade_no": "SM1"})
    assert order["errcode"] == 0
    assert order["order"]["order_state"] == 2
    assert order["order"]["shipping"]["shipping_list"][0]["tracking_no"] == "SF1234567890"
    transaction_id = sandbox.state.trades["SM1"].transaction_id
    by_id = post("wxa/sec/order/get_order", {"transaction_id": transaction_id})
    assert by_id["order"]["merchant_trade_no"] == "SM1"
    # a re-upload corrects the order; both uploads are kept
    corrected = body(shipping_list=[{**body()["shipping_list"][0], "tracking_no": "SF999999999"}])
    assert post(UPLOAD, corrected)["errcode"] == 0
    shipping = sandbox.control.shipping()
    assert shipping["orders"]["SM1"]["uploads"] == 2
    assert shipping["orders"]["SM1"]["shipping"]["shipping_list"][0]["tracking_no"] == "SF999999999"
    assert [u["out_trade_no"] for u in shipping["uploads"]] == ["SM1", "SM1"]


def test_virtual_and_pickup_uploads_without_tracking(post, trade, sandbox):
    trade("SM2")
    trade("SM3")
    virtual = body("SM2", logistics_type=3, shipping_list=[{"item_desc": "咨询 60 分钟"}])
    pickup = body("SM3", logistics_type=4, shipping_list=[{"item_desc": "青瓷盖碗*1"}])
    assert post(UPLOAD, virtual)["errcode"] == 0
    assert post(UPLOAD, pickup)["errcode"] == 0
    assert {no: o["shipping"]["logistics_type"] for no, o in sandbox.control.shipping()["orders"].items()} == {
        "SM2": 3,
        "SM3": 4,
    }


def test_unknown_unpaid_and_other_merchants_payments(post, trade, sandbox):
    trade("SM4", paid=False)
    assert post(UPLOAD, body("NOPE"))["errcode"] == 10060001
    assert post(UPLOAD, body("SM4"))["errcode"] == 10060003
    other = body("SM4", order_key={"order_number_type": 1, "mchid": "1999999999", "out_trade_no": "SM4"})
    assert post(UPLOAD, other)["errcode"] == 10060001
    assert (
        post(UPLOAD, body("SM4", order_key={"order_number_type": 2, "transaction_id": "42000"}))["errcode"] == 10060001
    )
    assert sandbox.control.shipping()["uploads"] == []


ITEM = body()["shipping_list"][0]


@pytest.mark.parametrize(
    "changes, errcode",
    [
        ({"logistics_type": 5}, 10060014),
        ({"delivery_mode": 3}, 10060014),
        ({"delivery_mode": 2}, 10060014),  # split delivery needs is_all_delivered
        ({"upload_time": "2026-12-06 18:00:00"}, 10060014),  # not RFC 3339 (no zone)
        ({"payer": {"openid": "oSomeoneElse"}}, 10060014),
        ({"order_key": {"order_number_type": 3}}, 10060014),
        ({"shipping_list": []}, 10060019),
        ({"shipping_list": [ITEM] * 16}, 10060019),
        ({"shipping_list": [{**ITEM, "item_desc": "好" * 121}]}, 10060019),
        ({"shipping_list": [{**ITEM, "item_desc": ""}]}, 10060019),
        ({"shipping_list": [{**ITEM, "tracking_no": ""}]}, 10060019),
        ({"shipping_list": [{**ITEM, "express_company": "MOON"}]}, 10060012),
        ({"shipping_list": [{**ITEM, "contact": {}}]}, 10060019),  # SF without the phone
        ({"shipping_list": [{**ITEM, "contact": {"receiver_contact": "13800001234"}}]}, 10060019),  # not masked
        ({"logistics_type": 3}, 10060019),  # tracking_no / express_company only for type 1
    ],
)
def test_bad_requests_are_refused_and_not_kept(post, trade, sandbox, changes, errcode):
    trade("SM5")
    assert post(UPLOAD, body("SM5", **changes))["errcode"] == errcode
    assert sandbox.control.shipping()["orders"] == {}


def test_fifteen_items_and_a_non_sf_carrier_without_contact(post, trade):
    trade("SM6")
    zto = {"tracking_no": "ZT7700001", "express_company": "ZTO", "item_desc": "茶叶"}
    assert post(UPLOAD, body("SM6", shipping_list=[zto] * 15))["errcode"] == 0
    assert post(UPLOAD, body("SM6", shipping_list=[{**zto, "item_desc": "好" * 120}]))["errcode"] == 0


def test_token_checked_first(post, trade):
    trade("SM7")
    assert post(UPLOAD, body("SM7"), access_token=None)["errcode"] == 41001
    assert post(UPLOAD, body("SM7"), access_token="forged")["errcode"] == 40001


def test_jump_path_and_trade_managed(post, sandbox):
    assert post("wxa/sec/order/set_msg_jump_path", {"path": "pages/order/detail"}) == {"errcode": 0, "errmsg": "ok"}
    assert post("wxa/sec/order/set_msg_jump_path", {"path": ""})["errcode"] == 10060014
    assert sandbox.control.shipping()["jump_path"] == "pages/order/detail"
    assert post("wxa/sec/order/is_trade_managed", {"appid": DEMO_APPID})["is_trade_managed"] is True
    requests.post(sandbox.url + "sandbox/shipping", json={"trade_managed": False}, timeout=5)
    assert post("wxa/sec/order/is_trade_managed", {"appid": DEMO_APPID})["is_trade_managed"] is False


def test_errcode_fault_answers_n_times_then_uploads(post, trade, sandbox):
    trade("SM8")
    sandbox.control.set_faults(upload_shipping_info={"errcode": 10060001, "count": 2})
    assert [post(UPLOAD, body("SM8"))["errcode"] for _ in range(3)] == [10060001, 10060001, 0]
    assert len(sandbox.control.shipping()["uploads"]) == 1
    assert sandbox.state.api_calls[UPLOAD] == 3

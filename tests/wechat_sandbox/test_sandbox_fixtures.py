"""The static payloads in fixtures/wechat/: what they claim, and that they match the generator."""

from pathlib import Path

import pytest
from wechatpy.exceptions import InvalidSignatureException
from wechatpy.pay import WeChatPay

from wechat_sandbox import (
    DEMO_APPID,
    DEMO_MCH_ID,
    DEMO_PAY_API_KEY,
    fixtures,
    wire,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "wechat"
PAY = WeChatPay(DEMO_APPID, DEMO_PAY_API_KEY, DEMO_MCH_ID)


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_fixtures_match_the_generator():
    for name, text in fixtures.build().items():
        assert read(name) == text, f"{name}: rerun python -m wechat_sandbox.fixtures"


def test_fixture_payment_success_verifies():
    data = PAY.parse_payment_result(read("payment_notify_success.xml"))
    assert (data["out_trade_no"], data["total_fee"], data["cash_fee"]) == ("SM2026113000000001", 19900, 19900)
    assert data["transaction_id"] == "4200001234202611301234567890"


def test_fixture_payment_coupon_verifies():
    data = PAY.parse_payment_result(read("payment_notify_coupon.xml"))
    assert (data["total_fee"], data["cash_fee"], data["coupon_fee"]) == (19900, 17900, 2000)
    assert data["coupon_count"] == 1 and data["coupon_id_0"] == "20000000012345"


@pytest.mark.parametrize("name", ["payment_notify_bad_sign.xml", "payment_notify_wrong_key.xml"])
def test_fixture_bad_signatures_fail(name):
    with pytest.raises(InvalidSignatureException):
        PAY.parse_payment_result(read(name))


@pytest.mark.parametrize("name", ["payment_notify_xxe.xml", "payment_notify_entity_bomb.xml"])
def test_fixture_entity_attacks_are_refused(name):
    with pytest.raises(ValueError):  # wechatpy lets xmltodict's ValueError through
        PAY.parse_payment_result(read(name))
    with pytest.raises(wire.XMLFormatError):
        wire.parse_xml(read(name))


def test_fixture_refund_decrypts():
    data = PAY.parse_refund_notify_result(read("refund_notify_success.xml"))
    plain = wire.parse_xml(read("refund_notify_success.req_info.xml").replace("root>", "xml>"))
    assert {k: str(v) for k, v in data.items()} == plain
    assert (data["out_refund_no"], data["refund_fee"], data["refund_status"]) == (
        "RF2026113000000001",
        19900,
        "SUCCESS",
    )

"""Wire format: signatures, safe XML, refund encryption, ids, config."""

import re

import pytest
from wechatpy.crypto import WeChatRefundCrypto
from wechatpy.pay.utils import calculate_signature, calculate_signature_hmac

from wechat_sandbox import SandboxConfig, wire
from wechat_sandbox.config import DEMO_PAY_API_KEY

OFFICIAL_PARAMS = {
    "appid": "wxd930ea5d5a258f4f",
    "mch_id": "10000100",
    "device_info": "1000",
    "body": "test",
    "nonce_str": "ibuaiVcKdpRxkhJA",
}


def test_calculate_sign_official_vector():
    sign = wire.calculate_sign(OFFICIAL_PARAMS, "192006250b4c09247ec02edce69f6a2d")
    assert sign == "9A0A8659F005D6984697E2CA0A9CF3B7"
    assert calculate_signature(OFFICIAL_PARAMS, "192006250b4c09247ec02edce69f6a2d") == sign


def test_calculate_sign_skips_empty_values_and_sign_itself():
    params = {**OFFICIAL_PARAMS, "attach": "", "detail": None, "sign": "WHATEVER"}
    assert wire.calculate_sign(params, "192006250b4c09247ec02edce69f6a2d") == ("9A0A8659F005D6984697E2CA0A9CF3B7")


def test_calculate_sign_hmac_matches_wechatpy():
    params = {**OFFICIAL_PARAMS, "sign_type": "HMAC-SHA256", "body": "商品"}
    ours = wire.calculate_sign(params, DEMO_PAY_API_KEY, wire.SIGN_HMAC_SHA256)
    assert ours == calculate_signature_hmac(params, DEMO_PAY_API_KEY)
    assert len(ours) == 64 and ours == ours.upper()


def test_verify_sign_uses_sign_type_and_rejects_tampering():
    md5 = wire.signed(OFFICIAL_PARAMS, DEMO_PAY_API_KEY)
    hmac_signed = wire.signed({**OFFICIAL_PARAMS, "sign_type": "HMAC-SHA256"}, DEMO_PAY_API_KEY, wire.SIGN_HMAC_SHA256)
    assert wire.verify_sign(md5, DEMO_PAY_API_KEY)
    assert wire.verify_sign(hmac_signed, DEMO_PAY_API_KEY)
    assert not wire.verify_sign({**md5, "body": "tampered"}, DEMO_PAY_API_KEY)
    assert not wire.verify_sign(md5, "another0key0000000000000000000032")
    assert not wire.verify_sign({**OFFICIAL_PARAMS}, DEMO_PAY_API_KEY)  # no sign at all


def test_parse_xml_reads_cdata_and_keeps_whitespace():
    fields = wire.parse_xml("<xml>\n<body><![CDATA[ 商品 A ]]></body>\n<total_fee>1</total_fee><attach></attach></xml>")
    assert fields == {"body": " 商品 A ", "total_fee": "1", "attach": ""}


@pytest.mark.parametrize(
    "payload",
    [
        '<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml><a>&x;</a></xml>',
        '<!DOCTYPE xml [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><xml><a>&b;</a></xml>',
        '<!doctype xml SYSTEM "http://evil.invalid/x.dtd"><xml><a>1</a></xml>',
        "<xml><a>1</a>",
        "<root><a>1</a></root>",
        "<xml><a><b>1</b></a></xml>",
        "<xml><a>1</a><a>2</a></xml>",
        "",
        "not xml",
    ],
)
def test_parse_xml_rejects_unsafe_or_malformed(payload):
    with pytest.raises(wire.XMLFormatError):
        wire.parse_xml(payload)


def test_to_xml_writes_ints_bare_and_strings_in_cdata():
    xml = wire.to_xml({"total_fee": 100, "body": "a]]>b", "skip": None, "openid": "o1"})
    assert xml == (
        "<xml><total_fee>100</total_fee><body><![CDATA[a]]]]><![CDATA[>b]]></body><openid><![CDATA[o1]]></openid></xml>"
    )
    assert wire.parse_xml(xml) == {"total_fee": "100", "body": "a]]>b", "openid": "o1"}


def test_refund_req_info_roundtrip_and_wechatpy_decrypts():
    plain = "<root><out_refund_no><![CDATA[R1]]></out_refund_no><refund_fee>5</refund_fee></root>"
    encrypted = wire.refund_req_info_encrypt(plain, DEMO_PAY_API_KEY)
    assert wire.refund_req_info_decrypt(encrypted, DEMO_PAY_API_KEY) == plain
    decoded = WeChatRefundCrypto(DEMO_PAY_API_KEY).decrypt_message(
        {"req_info": encrypted, "appid": "a", "mch_id": "m"}, "a", "m"
    )
    assert decoded == {"out_refund_no": "R1", "refund_fee": "5"}


def test_ids_have_wechat_shapes():
    ts = wire.parse_compact_time("20261130120130")
    assert re.fullmatch(r"4200\d{6}20261130\d{10}", wire.new_transaction_id(ts))
    assert re.fullmatch(r"wx20261130120130[0-9a-f]{20}", wire.new_prepay_id(ts))
    assert re.fullmatch(r"500020261130\d{17}", wire.new_refund_id(ts))
    assert re.fullmatch(r"o[A-Za-z0-9_-]{27}", wire.new_openid())
    assert wire.compact_time(ts) == "20261130120130"
    assert wire.dashed_time(ts) == "2026-11-30 12:01:30"
    assert wire.beijing(ts).utcoffset().total_seconds() == 8 * 3600


def test_yuan_formats_fen_with_two_decimals():
    assert [wire.yuan(f) for f in (0, 1, 10, 1990, 19900, -5, -1234)] == [
        "0.00",
        "0.01",
        "0.10",
        "19.90",
        "199.00",
        "-0.05",
        "-12.34",
    ]


def test_config_from_env_reads_variables_and_flags_win():
    env = {"WECHAT_APPID": "wxenv", "WECHAT_MCH_ID": "123", "SANDBOX_RETRY_SCALE": "0.5", "WECHAT_PAY_API_KEY": ""}
    config = SandboxConfig.from_env(env, mch_id="456")
    assert (config.appid, config.mch_id, config.retry_scale) == ("wxenv", "456", 0.5)
    assert config.api_key == DEMO_PAY_API_KEY
    assert config.retry_delays()[:3] == [7.5, 7.5, 15.0]
    with pytest.raises(ValueError):
        SandboxConfig.from_env({"WECHAT_PAY_API_KEY": "short"})

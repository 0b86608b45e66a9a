"""Hand-made WeChat Pay payment results for the payments tests (the sandbox makes real ones;
these are for results WeChat would never send: wrong amount, foreign appid, bad signature)."""

from __future__ import annotations

from wechatpy.pay.utils import calculate_signature

API_KEY = "starmall0sandbox0pay0api0key0032"  # the sandbox merchant's Pay V2 key


def pay_result(
    out_trade_no: str, amount_fen: int, /, *, transaction_id: str = "4200001234202611301234567890", **changes: str
) -> dict[str, str]:
    """The fields of a successful JSAPI payment result of ``amount_fen`` fen, with ``changes``
    (any field, ``out_trade_no`` included)."""
    fields = {
        "appid": "wx8d5f3c1a2b4e6f70",
        "mch_id": "1900000109",
        "nonce_str": "n0nce",
        "result_code": "SUCCESS",
        "return_code": "SUCCESS",
        "openid": "oX",
        "trade_type": "JSAPI",
        "bank_type": "OTHERS",
        "total_fee": str(amount_fen),
        "cash_fee": str(amount_fen),
        "transaction_id": transaction_id,
        "out_trade_no": out_trade_no,
        "time_end": "20261130120000",
    }
    fields.update(changes)
    return fields


def signed_xml(fields: dict[str, str], key: str = API_KEY, sign: str | None = None) -> bytes:
    """``fields`` as WeChat's ``<xml>`` body, signed with ``key`` (or carrying ``sign`` as given)."""
    fields = dict(fields)
    fields["sign"] = sign or calculate_signature(fields, key)
    return ("<xml>" + "".join(f"<{k}><![CDATA[{v}]]></{k}>" for k, v in fields.items()) + "</xml>").encode()


def notify(client, fields: dict[str, str], key: str = API_KEY, sign: str | None = None):
    """POST the signed ``fields`` to the payment notification URL; returns the response."""
    return client.post("/api/v1/payments/wechat/notify", data=signed_xml(fields, key, sign), content_type="text/xml")

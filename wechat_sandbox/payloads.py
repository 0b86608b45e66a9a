"""Bodies of the notifications WeChat Pay POSTs to the merchant.

Also used to generate the static payloads in ``fixtures/wechat/``.
"""

from __future__ import annotations

from . import wire
from .config import SandboxConfig
from .models import R_SUCCESS, Refund, Trade


def paid_trade(
    *,
    out_trade_no: str,
    total_fee: int,
    openid: str,
    transaction_id: str,
    time_end: str,
    coupon_fee: int = 0,
    coupon_id: str | None = None,
    body: str = "Starmall-商品",
) -> Trade:
    """A JSAPI trade paid by ``openid`` at ``time_end`` (yyyyMMddHHmmss, Beijing), for building its
    notification without a running sandbox (fixtures, benchmarks). Amounts in fen."""
    return Trade(
        out_trade_no=out_trade_no,
        params={"trade_type": "JSAPI", "body": body, "fee_type": "CNY"},
        total_fee=total_fee,
        openid=openid,
        notify_url="",
        prepay_id="",
        prepay_expires_at=0,
        created_at=0,
        trade_state="SUCCESS",
        transaction_id=transaction_id,
        time_end=time_end,
        bank_type="CMB_DEBIT",
        cash_fee=total_fee - coupon_fee,
        coupon_fee=coupon_fee,
        coupon_id=coupon_id,
    )


def payment_notification_fields(config: SandboxConfig, trade: Trade, nonce: str | None = None) -> dict:
    """The signed fields of a payment result notice for a paid ``trade``.

    ``coupon_*`` fields appear only when the payer used a coupon (then ``cash_fee`` =
    ``total_fee`` - ``coupon_fee``); ``attach`` only if the order had one. Signed with MD5
    (wechatpy verifies notices with MD5 only). ``nonce``: fixed nonce_str (fixtures).
    """
    fields: dict = {
        "appid": config.appid,
        "attach": trade.attach,
        "bank_type": trade.bank_type,
        "cash_fee": trade.cash_fee,
        "device_info": trade.params.get("device_info") or None,
        "fee_type": trade.params.get("fee_type") or "CNY",
        "is_subscribe": "N",
        "mch_id": config.mch_id,
        "nonce_str": nonce or wire.nonce_str(),
        "openid": trade.openid,
        "out_trade_no": trade.out_trade_no,
        "result_code": "SUCCESS",
        "return_code": "SUCCESS",
        "time_end": trade.time_end,
        "total_fee": trade.total_fee,
        "trade_type": trade.params.get("trade_type") or "JSAPI",
        "transaction_id": trade.transaction_id,
    }
    if trade.coupon_fee:
        fields.update(
            coupon_count=1,
            coupon_fee=trade.coupon_fee,
            coupon_fee_0=trade.coupon_fee,
            coupon_id_0=trade.coupon_id,
        )
    fields = {k: v for k, v in sorted(fields.items()) if v is not None}
    return wire.signed(fields, config.api_key)


def payment_notification_xml(config: SandboxConfig, trade: Trade, nonce: str | None = None) -> str:
    return wire.to_xml(payment_notification_fields(config, trade, nonce), newlines=True)


def refund_info_fields(config: SandboxConfig, refund: Refund) -> dict:
    """The decrypted ``req_info`` content (``<root>``) of a refund notice."""
    fields: dict = {
        "out_refund_no": refund.out_refund_no,
        "out_trade_no": refund.out_trade_no,
        "refund_account": refund.refund_account,
        "refund_fee": refund.refund_fee,
        "refund_id": refund.refund_id,
        "refund_recv_accout": "支付用户零钱",  # sic: WeChat's spelling
        "refund_request_source": "API",
        "refund_status": refund.status,
        "settlement_refund_fee": refund.refund_fee if refund.status == R_SUCCESS else 0,
        "settlement_total_fee": refund.total_fee,
        "success_time": wire.dashed_time(refund.success_at) if refund.success_at else None,
        "total_fee": refund.total_fee,
        "transaction_id": refund.transaction_id,
    }
    return {k: v for k, v in fields.items() if v is not None}


def refund_notification_fields(config: SandboxConfig, refund: Refund, nonce: str | None = None) -> dict:
    """Outer fields of a refund notice: no ``sign``; ``req_info`` is AES-256-ECB encrypted."""
    inner = wire.to_xml(refund_info_fields(config, refund), root="root")
    return {
        "return_code": "SUCCESS",
        "appid": config.appid,
        "mch_id": config.mch_id,
        "nonce_str": nonce or wire.nonce_str(),
        "req_info": wire.refund_req_info_encrypt(inner, config.api_key),
    }


def refund_notification_xml(config: SandboxConfig, refund: Refund, nonce: str | None = None) -> str:
    return wire.to_xml(refund_notification_fields(config, refund, nonce), newlines=True)

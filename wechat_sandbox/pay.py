"""WeChat Pay V2 endpoints: request checks, business rules, signed answers.

``handle(state, endpoint, raw_body)`` returns the answer body (XML, or the bill text for a
successful ``pay/downloadbill``). Errors follow WeChat's two levels: ``return_code`` FAIL
(communication: bad XML, unknown merchant, bad signature; no sign on the answer) and
``result_code`` FAIL with ``err_code``/``err_code_des`` (business; signed answer).
"""

from __future__ import annotations

import re

from . import bill, trades, wire
from .models import CLOSED, REFUND, SUCCESS, TRADE_STATE_DESC, Refund, Trade
from .state import SandboxState


class ReturnFail(Exception):
    """``return_code`` FAIL: the request was not accepted at all (``extra``: more fields)."""

    def __init__(self, return_msg: str, **extra) -> None:
        super().__init__(return_msg)
        self.return_msg = return_msg
        self.extra = extra


class PayError(Exception):
    """``result_code`` FAIL with ``err_code`` / ``err_code_des``."""

    def __init__(self, err_code: str, err_code_des: str) -> None:
        super().__init__(f"{err_code}: {err_code_des}")
        self.err_code = err_code
        self.err_code_des = err_code_des


_OUT_NO = re.compile(r"^[A-Za-z0-9_\-|*@]+$")
_POSITIVE_INT = re.compile(r"^[1-9][0-9]{0,9}$")
# unifiedorder params whose change makes a repeated out_trade_no an OUT_TRADE_NO_USED; the
# rest (nonce_str, sign, spbill_create_ip, time_start/time_expire that wechatpy refills on every
# call, notify_url, scene_info) may change between retries.
_FINGERPRINT_KEYS = (
    "body",
    "total_fee",
    "fee_type",
    "openid",
    "trade_type",
    "attach",
    "detail",
    "goods_tag",
    "limit_pay",
    "product_id",
    "device_info",
)


def _require(params: dict, *keys: str) -> None:
    for key in keys:
        if not params.get(key):
            raise PayError("PARAM_ERROR", f"缺少参数{key}")


def _fen(params: dict, key: str) -> int:
    value = params.get(key, "")
    if not _POSITIVE_INT.match(value):
        raise PayError("PARAM_ERROR", f"{key}参数错误: 必须为正整数(单位分)")
    return int(value)


def _check_url(params: dict, key: str) -> None:
    if params.get(key) and not params[key].startswith(("http://", "https://")):
        raise PayError("PARAM_ERROR", f"{key}参数格式错误")


def _check_out_no(params: dict, key: str, max_len: int) -> None:
    value = params[key]
    if len(value) > max_len:
        raise PayError("PARAM_ERROR", f"{key}参数长度有误(最长{max_len}位)")
    if not _OUT_NO.match(value):
        raise PayError("PARAM_ERROR", f"{key}参数格式错误: 只能是数字、大小写字母_-|*@")


def _coupon_fields(trade: Trade) -> dict:
    if not trade.coupon_fee:
        return {}
    return {
        "coupon_fee": trade.coupon_fee,
        "coupon_count": 1,
        "coupon_fee_0": trade.coupon_fee,
        "coupon_id_0": trade.coupon_id,
    }


# --- endpoints --------------------------------------------------------------------------------


def unifiedorder(state: SandboxState, p: dict) -> dict:
    """Create (or repeat) an order; answers ``trade_type`` and ``prepay_id`` (valid 2 h)."""
    _require(p, "body", "out_trade_no", "total_fee", "spbill_create_ip", "notify_url", "trade_type")
    _check_out_no(p, "out_trade_no", 32)
    total_fee = _fen(p, "total_fee")
    if p["trade_type"] != "JSAPI":
        raise PayError("PARAM_ERROR", "trade_type参数错误(沙箱仅支持JSAPI)")
    if not p.get("openid"):
        raise PayError("PARAM_ERROR", "JSAPI支付必须传openid")
    if p.get("fee_type", "CNY") != "CNY":
        raise PayError("PARAM_ERROR", "fee_type参数错误: 仅支持CNY")
    if len(p["body"].encode("utf-8")) > 128:
        raise PayError("PARAM_ERROR", "body参数长度有误(最长128字节)")
    if len(p.get("attach", "").encode("utf-8")) > 127:
        raise PayError("PARAM_ERROR", "attach参数长度有误(最长127字节)")
    _check_url(p, "notify_url")
    fingerprint = {k: p.get(k, "") for k in _FINGERPRINT_KEYS}
    fingerprint["fee_type"] = fingerprint["fee_type"] or "CNY"
    with state.lock:
        if p["openid"] not in state.users:
            if state.config.strict_openid:
                raise PayError("PARAM_ERROR", "appid和openid不匹配")
            state.upsert_user(p["openid"])
        now = state.clock()
        trade = state.trades.get(p["out_trade_no"])
        if trade is not None:
            if trade.trade_state in (SUCCESS, REFUND):
                raise PayError("ORDERPAID", "该订单已支付")
            if trade.trade_state == CLOSED:
                raise PayError("ORDERCLOSED", "该订单已关闭")
            old = {k: trade.params.get(k, "") for k in _FINGERPRINT_KEYS}
            old["fee_type"] = old["fee_type"] or "CNY"
            if old != fingerprint:
                raise PayError("OUT_TRADE_NO_USED", "商户订单号重复")
            if now >= trade.prepay_expires_at:
                trade.prepay_id = wire.new_prepay_id(now)
                trade.prepay_expires_at = now + state.config.prepay_ttl_seconds
            trade.params = dict(p)
            trade.notify_url = p["notify_url"]
        else:
            trade = Trade(
                out_trade_no=p["out_trade_no"],
                params=dict(p),
                total_fee=total_fee,
                openid=p["openid"],
                notify_url=p["notify_url"],
                prepay_id=wire.new_prepay_id(now),
                prepay_expires_at=now + state.config.prepay_ttl_seconds,
                created_at=now,
            )
            state.trades[trade.out_trade_no] = trade
        trade.events.append(
            {"event": "unifiedorder", "at": wire.beijing(now).isoformat(), "prepay_id": trade.prepay_id}
        )
        return {"device_info": p.get("device_info") or None, "trade_type": "JSAPI", "prepay_id": trade.prepay_id}


def _trade_for_query(state: SandboxState, p: dict) -> Trade:
    if not (p.get("transaction_id") or p.get("out_trade_no")):
        raise PayError("PARAM_ERROR", "transaction_id和out_trade_no不能同时为空")
    trade = state.find_trade(p.get("out_trade_no"), p.get("transaction_id"))
    if trade is None:
        raise PayError("ORDERNOTEXIST", "订单不存在")
    return trade


def orderquery(state: SandboxState, p: dict) -> dict:
    """Answer the trade's ``trade_state`` and, once paid, its payment details."""
    with state.lock:
        t = _trade_for_query(state, p)
        paid = t.transaction_id is not None
        fields = {
            "device_info": t.params.get("device_info") or None,
            "openid": t.openid,
            "is_subscribe": "N",
            "trade_type": t.params.get("trade_type", "JSAPI"),
            "trade_state": t.trade_state,
            "bank_type": t.bank_type if paid else None,
            "total_fee": t.total_fee,
            "fee_type": t.params.get("fee_type") or "CNY",
            "cash_fee": t.cash_fee if paid else None,
            "cash_fee_type": "CNY" if paid else None,
            **_coupon_fields(t),
            "transaction_id": t.transaction_id,
            "out_trade_no": t.out_trade_no,
            "attach": t.attach,
            "time_end": t.time_end,
            "trade_state_desc": TRADE_STATE_DESC[t.trade_state],
        }
        return fields


def closeorder(state: SandboxState, p: dict) -> dict:
    """Close an unpaid order (``min_close_age_seconds`` after creation; WeChat: 5 min)."""
    _require(p, "out_trade_no")
    with state.lock:
        trade = state.trades.get(p["out_trade_no"])
        if trade is None:
            raise PayError("ORDERNOTEXIST", "订单不存在")
        if trade.trade_state in (SUCCESS, REFUND):
            raise PayError("ORDERPAID", "订单已支付，不能发起关单")
        if trade.trade_state == CLOSED:
            raise PayError("ORDERCLOSED", "订单已关闭，无法重复关闭")
        now = state.clock()
        if now - trade.created_at < state.config.min_close_age_seconds:
            raise PayError(
                "SYSTEMERROR", f"订单生成后需间隔{state.config.min_close_age_seconds:g}秒才能关单，请稍后再试"
            )
        trade.trade_state = CLOSED
        trade.closed_at = now
        trade.events.append({"event": "closed", "at": wire.beijing(now).isoformat()})
        return {"result_msg": "OK"}


def _refund_answer(trade: Trade, refund: Refund) -> dict:
    cash_refund = refund.refund_fee * (trade.cash_fee or 0) // trade.total_fee
    return {
        "transaction_id": refund.transaction_id,
        "out_trade_no": refund.out_trade_no,
        "out_refund_no": refund.out_refund_no,
        "refund_id": refund.refund_id,
        "refund_fee": refund.refund_fee,
        "settlement_refund_fee": refund.refund_fee,
        "total_fee": trade.total_fee,
        "settlement_total_fee": trade.total_fee,
        "fee_type": "CNY",
        "cash_fee": trade.cash_fee,
        "cash_refund_fee": cash_refund,
        "coupon_refund_fee": (refund.refund_fee - cash_refund) or None,
    }


def refund(state: SandboxState, p: dict) -> dict:
    """Apply for a refund; the same ``out_refund_no`` is refunded once; the sum of refunds of a
    trade never exceeds its total_fee. (Real WeChat also demands the merchant's client
    certificate; over plain HTTP the sandbox cannot check it.)"""
    _require(p, "out_refund_no", "total_fee", "refund_fee")
    if not (p.get("transaction_id") or p.get("out_trade_no")):
        raise PayError("PARAM_ERROR", "transaction_id和out_trade_no不能同时为空")
    _check_out_no(p, "out_refund_no", 64)
    total_fee, refund_fee = _fen(p, "total_fee"), _fen(p, "refund_fee")
    _check_url(p, "notify_url")
    with state.lock:
        trade = _trade_for_query(state, p)
        if trade.trade_state not in (SUCCESS, REFUND):
            raise PayError("TRADE_STATE_ERROR", f"订单状态错误({trade.trade_state})，不能退款")
        existing = state.refunds.get(p["out_refund_no"])
        if existing is not None:
            if existing.out_trade_no != trade.out_trade_no:
                raise PayError("INVALID_REQUEST", "商户退款单号已被其他订单使用")
            if existing.refund_fee != refund_fee or existing.total_fee != total_fee:
                raise PayError("REFUND_FEE_MISMATCH", "订单金额或退款金额与之前请求不一致，请核实后再试")
            return _refund_answer(trade, existing)
        if total_fee != trade.total_fee:
            raise PayError("INVALID_REQUEST", "订单金额total_fee与订单实际金额不一致")
        if refund_fee > total_fee:
            raise PayError("INVALID_REQUEST", "退款金额大于支付金额")
        already = trades.refunded_fee(state, trade.out_trade_no)
        if already >= trade.total_fee:
            raise PayError("NOTENOUGH", "订单已全额退款")
        if already + refund_fee > trade.total_fee:
            raise PayError("NOTENOUGH", "申请退款金额超过订单可退金额")
        now = state.clock()
        new = Refund(
            out_refund_no=p["out_refund_no"],
            refund_id=wire.new_refund_id(now),
            out_trade_no=trade.out_trade_no,
            transaction_id=trade.transaction_id or "",
            total_fee=trade.total_fee,
            refund_fee=refund_fee,
            notify_url=p.get("notify_url", ""),
            refund_account=p.get("refund_account") or "REFUND_SOURCE_UNSETTLED_FUNDS",
            refund_desc=p.get("refund_desc", ""),
            created_at=now,
            settle_at=now + state.config.refund_delay_seconds,
            api=p.get("_api", "v2"),  # pay_v3_trades.refund_create passes "v3"
        )
        state.refunds[new.out_refund_no] = new
        trade.trade_state = REFUND
        trade.events.append(
            {
                "event": "refund",
                "at": wire.beijing(now).isoformat(),
                "out_refund_no": new.out_refund_no,
                "refund_fee": refund_fee,
            }
        )
        if state.config.refund_delay_seconds <= 0:
            trades.settle_refunds(state, new.out_refund_no)
        return _refund_answer(trade, new)


def refundquery(state: SandboxState, p: dict) -> dict:
    """List a trade's refunds (or the one named by refund_id / out_refund_no) as ``*_$n``."""
    with state.lock:
        if p.get("refund_id"):
            found = [r for r in state.refunds.values() if r.refund_id == p["refund_id"]]
        elif p.get("out_refund_no"):
            one = state.refunds.get(p["out_refund_no"])
            found = [one] if one else []
        elif p.get("transaction_id") or p.get("out_trade_no"):
            trade = state.find_trade(p.get("out_trade_no"), p.get("transaction_id"))
            found = state.refunds_of(trade.out_trade_no) if trade else []
        else:
            raise PayError("PARAM_ERROR", "refund_id、out_refund_no、transaction_id、out_trade_no不能同时为空")
        if not found:
            raise PayError("REFUNDNOTEXIST", "退款订单查询失败")
        trade = state.trades[found[0].out_trade_no]
        fields: dict = {
            "transaction_id": trade.transaction_id,
            "out_trade_no": trade.out_trade_no,
            "total_fee": trade.total_fee,
            "settlement_total_fee": trade.total_fee,
            "fee_type": "CNY",
            "cash_fee": trade.cash_fee,
            "refund_count": len(found),
            "refund_fee": sum(r.refund_fee for r in found),
        }
        for n, r in enumerate(found):
            fields.update(
                {
                    f"out_refund_no_{n}": r.out_refund_no,
                    f"refund_id_{n}": r.refund_id,
                    f"refund_channel_{n}": "ORIGINAL",
                    f"refund_fee_{n}": r.refund_fee,
                    f"settlement_refund_fee_{n}": r.refund_fee,
                    f"refund_status_{n}": r.status,
                    f"refund_account_{n}": r.refund_account,
                    f"refund_recv_accout_{n}": "支付用户零钱",
                    f"refund_success_time_{n}": (wire.dashed_time(r.success_at) if r.success_at else None),
                }
            )
        return fields


def downloadbill(state: SandboxState, p: dict) -> str:
    """The day's bill as WeChat's text format; errors are ``return_code`` FAIL XML."""
    try:
        return bill.render(state, p.get("bill_date", ""), p.get("bill_type") or "ALL", api="v2")
    except bill.BillError as exc:
        raise ReturnFail(exc.message, error_code=exc.error_code) from exc


ENDPOINTS = {
    "pay/unifiedorder": unifiedorder,
    "pay/orderquery": orderquery,
    "pay/closeorder": closeorder,
    "secapi/pay/refund": refund,
    "pay/refundquery": refundquery,
    "pay/downloadbill": downloadbill,
}


# --- request checks and answers ---------------------------------------------------------------


def check_request(state: SandboxState, p: dict) -> None:
    """Merchant, appid and signature checks common to every endpoint; raises ReturnFail."""
    config = state.config
    for key in ("appid", "mch_id", "nonce_str", "sign"):
        if not p.get(key):
            raise ReturnFail(f"缺少参数{key}")
    if p["mch_id"] != config.mch_id:
        raise ReturnFail("商户号mch_id不存在")
    if p["appid"] != config.appid:
        raise ReturnFail("appid和mch_id不匹配")
    if p.get("sign_type", wire.SIGN_MD5) not in (wire.SIGN_MD5, wire.SIGN_HMAC_SHA256):
        raise ReturnFail("签名类型错误")
    if not wire.verify_sign(p, config.api_key):
        raise ReturnFail("签名错误")


def answer(
    state: SandboxState, fields: dict | None, error: PayError | None = None, sign_type: str = wire.SIGN_MD5
) -> str:
    """A signed ``return_code`` SUCCESS answer with business ``fields`` or a business error."""
    out: dict = {
        "return_code": "SUCCESS",
        "return_msg": "OK",
        "appid": state.config.appid,
        "mch_id": state.config.mch_id,
        "nonce_str": wire.nonce_str(),
    }
    if error is None:
        out["result_code"] = "SUCCESS"
        out.update({k: v for k, v in (fields or {}).items() if v is not None})
    else:
        out.update(result_code="FAIL", err_code=error.err_code, err_code_des=error.err_code_des)
    return wire.to_xml(wire.signed(out, state.config.api_key, sign_type))


def return_fail(exc: ReturnFail) -> str:
    return wire.to_xml({"return_code": "FAIL", "return_msg": exc.return_msg, **exc.extra})


def handle(state: SandboxState, endpoint: str, raw: bytes, forced_error: PayError | None = None) -> tuple[str, str]:
    """Process one Pay call. Returns ``(body, content_type)``; never raises for bad input.

    ``forced_error`` (a fault): answer that business error after the request checks, without
    processing the call.
    """
    try:
        params = wire.parse_xml(raw)
    except wire.XMLFormatError:
        return return_fail(ReturnFail("XML格式错误")), "text/xml; charset=utf-8"
    sign_type = params.get("sign_type") or wire.SIGN_MD5
    try:
        check_request(state, params)
        state.tick()
        if forced_error is not None:
            raise forced_error
        result = ENDPOINTS[endpoint](state, params)
    except ReturnFail as exc:
        return return_fail(exc), "text/xml; charset=utf-8"
    except PayError as exc:
        return answer(state, None, exc, sign_type), "text/xml; charset=utf-8"
    if isinstance(result, str):
        return result, "text/plain; charset=utf-8"
    return answer(state, result, None, sign_type), "text/xml; charset=utf-8"

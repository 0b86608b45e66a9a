"""WeChat Pay API v3 payments in the sandbox: JSAPI prepay, query, close, refunds, trade bills.

v3 trades live beside v2's in ``state.trades`` (``Trade.api == "v3"``), so the control API pays
them as it pays v2 trades (``POST /sandbox/pay``, ``/user-paying``, ...); their notices are v3's
(signed headers, AES-256-GCM resource) on pay_v3's queue (``POST /sandbox/v3/notifications/
deliver``, or the notifier thread under ``auto_notify``). Requests are signature-checked by
``pay_v3.dispatch`` first; answers are signed with the platform key. Errors are WeChat v3's
``{"code", "message"}`` with its HTTP status:

- ``POST /v3/pay/transactions/jsapi``: PARAM_ERROR (missing or bad field; description over 127
  bytes; out_trade_no not 6-32 of ``[0-9A-Za-z_-|*]``; time_expire not RFC 3339 or passed),
  APPID_MCHID_NOT_MATCH; the same out_trade_no with other description / amount / openid /
  attach: 400 INVALID_REQUEST; paid: 403 ORDERPAID; closed: 400 ORDER_CLOSED. Same
  parameters again: the same prepay_id (a new one after 2 h).
- ``GET /v3/pay/transactions/out-trade-no/{no}?mchid=`` (404 ORDER_NOT_EXIST);
  ``POST .../{no}/close`` ``{"mchid"}`` -> 204 (400 ORDERPAID; younger than
  ``min_close_age_seconds``: 400 INVALID_REQUEST).
- ``POST /v3/refund/domestic/refunds`` (v2's rules: the same out_refund_no is one refund, the sum
  never passes the total; 404 RESOURCE_NOT_EXISTS, 403 NOT_ENOUGH, 400 INVALID_REQUEST);
  ``GET /v3/refund/domestic/refunds/{out_refund_no}`` (404 RESOURCE_NOT_EXISTS). Final states
  are notified as ``REFUND.SUCCESS`` / ``REFUND.ABNORMAL`` (v2 CHANGE) / ``REFUND.CLOSED``.
- ``GET /v3/bill/tradebill?bill_date=YYYY-MM-DD&bill_type=ALL`` -> ``{"download_url",
  "hash_type": "SHA1", "hash_value"}`` (400 NO_STATEMENT_EXIST for a day without v3 trades);
  ``GET /v3/billdownload/file?token=`` answers the bill (v2's CSV of the v3 trades).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
import secrets
import uuid

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from werkzeug.wrappers import Request, Response

from . import bill, pay, wire
from .models import CLOSED, REFUND, SUCCESS, TRADE_STATE_DESC, Refund, Trade
from .pay_v3 import _answer, _error, _take_fault, apiv3_key, signed_headers, v3
from .state import SandboxState

_OUT_TRADE_NO = re.compile(r"^[0-9A-Za-z_\-|*]{6,32}$")
_REFUND_STATUS = {"SUCCESS": "SUCCESS", "PROCESSING": "PROCESSING", "CHANGE": "ABNORMAL", "REFUNDCLOSE": "CLOSED"}
_FINGERPRINT = ("body", "total_fee", "openid", "attach")
TRANSACTIONS = "/v3/pay/transactions"
REFUNDS = "/v3/refund/domestic/refunds"


def owns(path: str) -> bool:
    return path.startswith((TRANSACTIONS, REFUNDS, "/v3/bill/", "/v3/billdownload/"))


def dispatch(state: SandboxState, request: Request, path: str) -> Response:
    """Answer one signature-checked request under :func:`owns`."""
    if path == TRANSACTIONS + "/jsapi" and request.method == "POST":
        return _jsapi(state, request)
    match = re.fullmatch(TRANSACTIONS + r"/out-trade-no/([^/]+)(/close)?", path)
    if match and request.method == "GET" and not match.group(2):
        with state.lock:
            trade = state.trades.get(match.group(1))
            if trade is None or trade.api != "v3":
                return _error(404, "ORDER_NOT_EXIST", "订单不存在")
            return _answer(transaction(state, trade))
    if match and request.method == "POST" and match.group(2):
        return _close(state, match.group(1))
    if path == REFUNDS and request.method == "POST":
        return _refund(state, request)
    match = re.fullmatch(REFUNDS + r"/([^/]+)", path)
    if match and request.method == "GET":
        with state.lock:
            found = state.refunds.get(match.group(1))
            if found is None or found.api != "v3":
                return _error(404, "RESOURCE_NOT_EXISTS", "退款单不存在")
            return _answer(refund_resource(state, found))
    if path == "/v3/bill/tradebill" and request.method == "GET":
        return _tradebill(state, request)
    if path == "/v3/billdownload/file" and request.method == "GET":
        text = v3(state).files.get(request.args.get("token", ""))
        if text is None:
            return _error(404, "RESOURCE_NOT_EXISTS", "账单文件不存在")
        return Response(text.encode("utf-8"), content_type="text/plain; charset=utf-8")
    return _error(404, "NOT_FOUND", "无此接口")


def _body(request: Request) -> dict | None:
    try:
        data = json.loads(request.get_data(as_text=True))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _jsapi_params(state: SandboxState, body: dict) -> tuple[dict, float] | Response:
    """The checked prepay request as a Trade's ``params`` and its time_expire (epoch), or the
    error answer."""
    amount = body.get("amount") if isinstance(body.get("amount"), dict) else {}
    payer = body.get("payer") if isinstance(body.get("payer"), dict) else {}
    missing = [k for k in ("appid", "mchid", "description", "out_trade_no", "notify_url") if not body.get(k)]
    missing += [k for k, v in (("amount.total", amount.get("total")), ("payer.openid", payer.get("openid"))) if not v]
    if missing:
        return _error(400, "PARAM_ERROR", f"缺少参数 {', '.join(missing)}")
    if body["appid"] != state.config.appid or body["mchid"] != state.config.mch_id:
        return _error(400, "APPID_MCHID_NOT_MATCH", "appid 和 mchid 不匹配")
    total, description = amount.get("total"), str(body["description"])
    if not isinstance(total, int) or isinstance(total, bool) or total < 1 or amount.get("currency", "CNY") != "CNY":
        return _error(400, "PARAM_ERROR", "amount.total 必须为正整数（分），currency 为 CNY")
    if len(description.encode("utf-8")) > 127:
        return _error(400, "PARAM_ERROR", "description 超过 127 字节")
    if not _OUT_TRADE_NO.match(str(body["out_trade_no"])):
        return _error(400, "PARAM_ERROR", "out_trade_no 须为 6-32 位数字、大小写字母或 _-|*")
    url = str(body["notify_url"])
    if not url.startswith(("http://", "https://")) or "?" in url:
        return _error(400, "PARAM_ERROR", "notify_url 须为 http(s) 地址且不能带参数")
    try:
        expire = dt.datetime.fromisoformat(str(body.get("time_expire") or ""))
    except ValueError:
        expire = None
    if body.get("time_expire") and (expire is None or expire.tzinfo is None):
        return _error(400, "PARAM_ERROR", "time_expire 须为 RFC 3339 格式（yyyy-MM-DDTHH:mm:ss+TIMEZONE）")
    expire_at = expire.timestamp() if expire else state.clock() + state.config.prepay_ttl_seconds
    if expire_at <= state.clock():
        return _error(400, "PARAM_ERROR", "time_expire 已过")
    params = {
        "body": description,
        "total_fee": str(total),
        "openid": str(payer["openid"]),
        "attach": str(body.get("attach") or ""),
        "trade_type": "JSAPI",
        "fee_type": "CNY",
        "notify_url": url,
        "time_expire": wire.compact_time(expire_at),
    }
    return params, expire_at


def _jsapi(state: SandboxState, request: Request) -> Response:
    body = _body(request)
    if body is None:
        return _error(400, "PARAM_ERROR", "请求体不是 JSON 对象")
    checked = _jsapi_params(state, body)
    if isinstance(checked, Response):
        return checked
    params, _ = checked
    with state.lock:
        now, no = state.clock(), str(body["out_trade_no"])
        trade = state.trades.get(no)
        if trade is not None:
            if trade.trade_state in (SUCCESS, REFUND):
                return _error(403, "ORDERPAID", "该订单已支付")
            if trade.trade_state == CLOSED:
                return _error(400, "ORDER_CLOSED", "订单已关闭")
            if trade.api != "v3" or any(trade.params.get(k) != params[k] for k in _FINGERPRINT):
                return _error(400, "INVALID_REQUEST", "商户订单号重复：参数与首次请求时不一致")
            if now >= trade.prepay_expires_at:
                trade.prepay_id = wire.new_prepay_id(now)
                trade.prepay_expires_at = now + state.config.prepay_ttl_seconds
            trade.params, trade.notify_url = params, params["notify_url"]
        else:
            if params["openid"] not in state.users:
                state.upsert_user(params["openid"])
            trade = Trade(
                out_trade_no=no,
                params=params,
                total_fee=int(params["total_fee"]),
                openid=params["openid"],
                notify_url=params["notify_url"],
                prepay_id=wire.new_prepay_id(now),
                prepay_expires_at=now + state.config.prepay_ttl_seconds,
                created_at=now,
                api="v3",
            )
            state.trades[no] = trade
        trade.events.append({"event": "jsapi", "at": wire.beijing(now).isoformat(), "prepay_id": trade.prepay_id})
        return _answer({"prepay_id": trade.prepay_id})


def _rfc3339(ts: float | None) -> str | None:
    return wire.beijing(ts).isoformat(timespec="seconds") if ts is not None else None


def transaction(state: SandboxState, trade: Trade) -> dict:
    """A trade as v3's query and ``TRANSACTION.SUCCESS`` resource show it (caller holds the lock)."""
    paid = trade.transaction_id is not None
    answer = {
        "appid": state.config.appid,
        "mchid": state.config.mch_id,
        "out_trade_no": trade.out_trade_no,
        "trade_type": "JSAPI",
        "trade_state": trade.trade_state,
        "trade_state_desc": TRADE_STATE_DESC[trade.trade_state],
        "attach": trade.attach or "",
        "payer": {"openid": trade.openid},
        "amount": {"total": trade.total_fee, "currency": "CNY"},
    }
    if paid:
        answer.update(
            transaction_id=trade.transaction_id, bank_type=trade.bank_type, success_time=_rfc3339(trade.paid_at)
        )
        answer["amount"].update(payer_total=trade.cash_fee, payer_currency="CNY")
    return answer


def _close(state: SandboxState, out_trade_no: str) -> Response:
    with state.lock:
        trade = state.trades.get(out_trade_no)
        if trade is None or trade.api != "v3":
            return _error(404, "ORDER_NOT_EXIST", "订单不存在")
        if trade.trade_state in (SUCCESS, REFUND):
            return _error(400, "ORDERPAID", "订单已支付，不能关单")
        now = state.clock()
        if trade.trade_state != CLOSED:
            if now - trade.created_at < state.config.min_close_age_seconds:
                return _error(
                    400, "INVALID_REQUEST", f"订单生成后需间隔{state.config.min_close_age_seconds:g}秒才能关单"
                )
            trade.trade_state, trade.closed_at = CLOSED, now
            trade.events.append({"event": "closed", "at": wire.beijing(now).isoformat()})
    return Response("", status=204, headers=signed_headers(""))


def refund_resource(state: SandboxState, refund: Refund) -> dict:
    """A refund as v3's answers and ``REFUND.*`` resources show it (caller holds the lock)."""
    trade = state.trades[refund.out_trade_no]
    payer_refund = refund.refund_fee * (trade.cash_fee or 0) // trade.total_fee
    return {
        "mchid": state.config.mch_id,
        "refund_id": refund.refund_id,
        "out_refund_no": refund.out_refund_no,
        "transaction_id": refund.transaction_id,
        "out_trade_no": refund.out_trade_no,
        "channel": "ORIGINAL",
        "user_received_account": "支付用户零钱",
        "create_time": _rfc3339(refund.created_at),
        "success_time": _rfc3339(refund.success_at),
        "status": _REFUND_STATUS[refund.status],
        "refund_status": _REFUND_STATUS[refund.status],
        "funds_account": "AVAILABLE",
        "amount": {
            "total": trade.total_fee,
            "refund": refund.refund_fee,
            "payer_total": trade.cash_fee or 0,
            "payer_refund": payer_refund,
            "currency": "CNY",
        },
    }


_REFUND_ERRORS = {
    "ORDERNOTEXIST": (404, "RESOURCE_NOT_EXISTS"),
    "NOTENOUGH": (403, "NOT_ENOUGH"),
    "PARAM_ERROR": (400, "PARAM_ERROR"),
}


def _refund(state: SandboxState, request: Request) -> Response:
    """v2's refund rules (``pay.refund``) behind v3's request and answer."""
    body = _body(request)
    if body is None:
        return _error(400, "PARAM_ERROR", "请求体不是 JSON 对象")
    amount = body.get("amount") if isinstance(body.get("amount"), dict) else {}
    values = {"total_fee": amount.get("total"), "refund_fee": amount.get("refund")}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values.values()):
        return _error(400, "PARAM_ERROR", "amount.refund 和 amount.total 必须为整数（分）")
    p = {
        "out_trade_no": str(body.get("out_trade_no") or ""),
        "transaction_id": str(body.get("transaction_id") or ""),
        "out_refund_no": str(body.get("out_refund_no") or ""),
        "notify_url": str(body.get("notify_url") or ""),
        "refund_desc": str(body.get("reason") or ""),
        **{k: str(v) for k, v in values.items()},
        "_api": "v3",
    }
    with state.lock:
        try:
            pay.refund(state, {k: v for k, v in p.items() if v != ""})
        except pay.PayError as exc:
            status, code = _REFUND_ERRORS.get(exc.err_code, (400, "INVALID_REQUEST"))
            return _error(status, code, exc.err_code_des)
        return _answer(refund_resource(state, state.refunds[p["out_refund_no"]]))


def _tradebill(state: SandboxState, request: Request) -> Response:
    try:
        day = dt.date.fromisoformat(request.args.get("bill_date", ""))
    except ValueError:
        return _error(400, "PARAM_ERROR", "bill_date 格式须为 yyyy-MM-DD")
    try:
        text = bill.render(state, day.strftime("%Y%m%d"), request.args.get("bill_type") or "ALL", api="v3")
    except bill.BillError as exc:
        if exc.error_code == "20002":
            return _error(400, "NO_STATEMENT_EXIST", "账单不存在")
        return _error(400, "PARAM_ERROR", exc.message)
    token = secrets.token_urlsafe(16)
    with state.lock:
        v3(state).files[token] = text
    corrupt = _take_fault(state, "tradebill") == "bad_hash"
    digest = hashlib.sha1((text + ("x" if corrupt else "")).encode("utf-8")).hexdigest()
    return _answer(
        {
            "download_url": f"{request.host_url.rstrip('/')}/v3/billdownload/file?token={token}",
            "hash_type": "SHA1",
            "hash_value": digest,
        }
    )


# --- notifications ---------------------------------------------------------------------------


def notice(url: str, event_type: str, summary: str, original_type: str, resource: dict, **keys: str) -> dict:
    """A signed notice with its resource AES-256-GCM encrypted under the APIv3 key."""
    nonce = secrets.token_hex(6)
    cipher = AESGCM(apiv3_key().encode()).encrypt(
        nonce.encode(), json.dumps(resource, ensure_ascii=False).encode(), original_type.encode()
    )
    envelope = {
        "id": str(uuid.uuid4()),
        "create_time": wire.beijing().isoformat(timespec="seconds"),
        "event_type": event_type,
        "resource_type": "encrypt-resource",
        "summary": summary,
        "resource": {
            "original_type": original_type,
            "algorithm": "AEAD_AES_256_GCM",
            "ciphertext": base64.b64encode(cipher).decode(),
            "associated_data": original_type,
            "nonce": nonce,
        },
    }
    body = json.dumps(envelope, ensure_ascii=False)
    return {
        "url": url,
        "body": body,
        "out_bill_no": "",
        "event_type": event_type,
        "attempts": 0,
        "headers": {**signed_headers(body), "Content-Type": "application/json"},
        **keys,
    }


def _queue(state: SandboxState, note: dict) -> None:
    v3(state).pending.append(note)
    v3(state).notes.append(note)
    state.changed.notify_all()


def queue_paid(state: SandboxState, trade: Trade) -> None:
    """Queue the ``TRANSACTION.SUCCESS`` notice of a v3 trade just paid (caller holds the lock)."""
    note = notice(
        trade.notify_url, "TRANSACTION.SUCCESS", "支付成功", "transaction", transaction(state, trade),
        out_trade_no=trade.out_trade_no,
    )  # fmt: skip
    _queue(state, note)


def queue_refund(state: SandboxState, refund: Refund, url: str) -> None:
    """Queue the ``REFUND.*`` notice of a v3 refund that reached a final state (lock held)."""
    event = {"SUCCESS": "REFUND.SUCCESS", "CHANGE": "REFUND.ABNORMAL"}.get(refund.status, "REFUND.CLOSED")
    summary = {"REFUND.SUCCESS": "退款成功", "REFUND.ABNORMAL": "退款异常"}.get(event, "退款关闭")
    note = notice(
        url, event, summary, "refund", refund_resource(state, refund),
        out_trade_no=refund.out_trade_no, out_refund_no=refund.out_refund_no,
    )  # fmt: skip
    _queue(state, note)

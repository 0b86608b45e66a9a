"""The mini-program's shipping-information APIs (小程序发货信息管理), JSON like the other
mini-program APIs (HTTP 200; errors ``{"errcode", "errmsg"}``), all ``?access_token=``:

- ``POST wxa/sec/order/upload_shipping_info`` ``{"order_key": {"order_number_type": 1, "mchid",
  "out_trade_no"} | {"order_number_type": 2, "transaction_id"}, "logistics_type": 1-4,
  "delivery_mode": 1|2, "is_all_delivered"? (mode 2), "shipping_list": [{"tracking_no"?,
  "express_company"?, "item_desc", "contact"?: {"consignor_contact"?, "receiver_contact"?}}],
  "upload_time" (RFC 3339), "payer": {"openid"}}`` -> ``{"errcode": 0, "errmsg": "ok"}``.
  Checked as WeChat does (the codes of docs/WECHAT.md): 10060001 no such payment (or another
  merchant's), 10060003 the payment is not paid, 10060012 an express company WeChat does not
  know, 10060014 a bad request field (order_key, logistics_type, delivery_mode,
  is_all_delivered, upload_time, payer), 10060019 a bad shipping_list (1-15 items; item_desc
  1-120 chars; tracking_no and express_company required for logistics_type 1 and refused
  otherwise; SF needs a contact phone masked as ``138****0000``). An upload again replaces the
  order's shipping (WeChat: a correction); every accepted upload is kept in order.
- ``POST wxa/sec/order/is_trade_managed`` ``{"appid"}`` -> ``{"errcode": 0, "is_trade_managed"}``.
- ``POST wxa/sec/order/set_msg_jump_path`` ``{"path"}`` -> ``{"errcode": 0}`` (10060014 empty).
- ``POST wxa/sec/order/get_order`` ``{"transaction_id"} | {"merchant_id", "merchant_trade_no"}``
  -> ``{"errcode": 0, "order": {..., "order_state": 1 unshipped / 2 shipped, "shipping"}}``.

A payment counts as paid when the shared trade store (``state.trades``, whatever API made the
trade) holds it in SUCCESS or REFUND. Faults: these paths are API endpoints of ``faults.py``
(``upload_shipping_info``, ...): ``errcode: N`` with ``count`` answers that errcode N times.

Control: ``GET /sandbox/shipping`` -> ``{"orders": {out_trade_no: {...}}, "uploads": [...],
"jump_path", "trade_managed"}``; ``POST {"trade_managed": bool}``; ``DELETE`` forgets them.
"""

from __future__ import annotations

import datetime as dt
import json
import re

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from .miniprogram import error, json_object
from .models import REFUND, SUCCESS

UPLOAD = "wxa/sec/order/upload_shipping_info"
ENDPOINTS = (
    UPLOAD,
    "wxa/sec/order/is_trade_managed",
    "wxa/sec/order/set_msg_jump_path",
    "wxa/sec/order/get_order",
)
#: WeChat's delivery ids (a subset of its express-company list)
EXPRESS_COMPANIES = frozenset({"SF", "ZTO", "YTO", "STO", "YD", "JTSD", "EMS", "JD", "YZPY", "DBL", "ZJS", "BEST"})
MASKED_PHONE = re.compile(r"\d{3}\*{4}\d{4}")
NO_PAYMENT, NOT_PAID, BAD_COMPANY, BAD_PARAM, BAD_LIST = 10060001, 10060003, 10060012, 10060014, 10060019


class Refused(Exception):
    def __init__(self, errcode: int, errmsg: str) -> None:
        super().__init__(errmsg)
        self.answer = error(errcode, errmsg)


def _store(state) -> dict:
    return state.extras.setdefault("shipping", {"orders": {}, "uploads": [], "jump_path": None, "trade_managed": True})


def rules() -> list[Rule]:
    return [Rule("/sandbox/shipping", endpoint="shipping:control", methods=["GET", "POST", "DELETE"])]


def handle(state, request: Request, name: str) -> Response:
    """The control API (``/sandbox/shipping``)."""
    with state.lock:
        if request.method == "DELETE":
            state.extras.pop("shipping", None)
        elif request.method == "POST":
            body = json_object(request.get_data() or b"{}") or {}
            if "trade_managed" in body:
                _store(state)["trade_managed"] = bool(body["trade_managed"])
        data = json.loads(json.dumps(_store(state)))
    return Response(json.dumps(data, ensure_ascii=False), content_type="application/json; charset=utf-8")


def api(state, name: str, access_token: str | None, raw: bytes) -> dict:
    """One call of ``name`` (one of :data:`ENDPOINTS`), the token checked first."""
    if not access_token:
        return error(41001, "access_token missing")
    status = state.token_status(access_token)
    if status != "ok":
        return error(40001 if status == "invalid" else 42001, "invalid credential, access_token is invalid")
    body = json_object(raw)
    if body is None:
        return error(47001, "data format error")
    try:
        with state.lock:
            if name == UPLOAD:
                return _upload(state, body)
            if name.endswith("is_trade_managed"):
                if body.get("appid") != state.config.appid:
                    raise Refused(BAD_PARAM, "invalid appid")
                return {"errcode": 0, "errmsg": "ok", "is_trade_managed": _store(state)["trade_managed"]}
            if name.endswith("set_msg_jump_path"):
                path = body.get("path")
                if not isinstance(path, str) or not path.strip():
                    raise Refused(BAD_PARAM, "invalid path")
                _store(state)["jump_path"] = path
                return {"errcode": 0, "errmsg": "ok"}
            return _get_order(state, body)
    except Refused as refused:
        return refused.answer


def _trade(state, order_key: object):
    """The paid trade ``order_key`` names; Refused 10060014 / 10060001 / 10060003."""
    if not isinstance(order_key, dict) or order_key.get("order_number_type") not in (1, 2):
        raise Refused(BAD_PARAM, "invalid order_key.order_number_type")
    if order_key["order_number_type"] == 1:
        mchid, out_trade_no = order_key.get("mchid"), order_key.get("out_trade_no")
        if not (isinstance(mchid, str) and mchid and isinstance(out_trade_no, str) and out_trade_no):
            raise Refused(BAD_PARAM, "order_key needs mchid and out_trade_no")
        trade = state.find_trade(out_trade_no=out_trade_no) if mchid == state.config.mch_id else None
    else:
        transaction_id = order_key.get("transaction_id")
        if not (isinstance(transaction_id, str) and transaction_id):
            raise Refused(BAD_PARAM, "order_key needs transaction_id")
        trade = state.find_trade(transaction_id=transaction_id)
    if trade is None:
        raise Refused(NO_PAYMENT, "支付单不存在")
    if trade.trade_state not in (SUCCESS, REFUND):
        raise Refused(NOT_PAID, "支付单未完成支付")
    return trade


def _check_request(body: dict, trade) -> None:
    """The request's own fields (Refused 10060014)."""
    if body.get("logistics_type") not in (1, 2, 3, 4):
        raise Refused(BAD_PARAM, "invalid logistics_type")
    if body.get("delivery_mode") not in (1, 2):
        raise Refused(BAD_PARAM, "invalid delivery_mode")
    if body["delivery_mode"] == 2 and not isinstance(body.get("is_all_delivered"), bool):
        raise Refused(BAD_PARAM, "is_all_delivered is required when delivery_mode is 2")
    upload_time = body.get("upload_time")
    try:
        parsed = dt.datetime.fromisoformat(upload_time) if isinstance(upload_time, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise Refused(BAD_PARAM, "invalid upload_time, RFC 3339 expected")
    payer = body.get("payer")
    openid = payer.get("openid") if isinstance(payer, dict) else None
    if not isinstance(openid, str) or not openid or (getattr(trade, "openid", None) and openid != trade.openid):
        raise Refused(BAD_PARAM, "invalid payer.openid")


def _check_item(item: object, express: bool) -> None:
    """One shipping_list entry (Refused 10060019, or 10060012 for the express company)."""
    if not isinstance(item, dict):
        raise Refused(BAD_LIST, "invalid shipping_list item")
    desc = item.get("item_desc")
    if not isinstance(desc, str) or not desc.strip() or len(desc) > 120:
        raise Refused(BAD_LIST, "item_desc must be 1-120 characters")
    tracking_no, company = item.get("tracking_no"), item.get("express_company")
    if not express:
        if tracking_no or company:
            raise Refused(BAD_LIST, "tracking_no and express_company are only for logistics_type 1")
        return
    if not isinstance(tracking_no, str) or not tracking_no.strip() or len(tracking_no) > 128:
        raise Refused(BAD_LIST, "tracking_no is required for logistics_type 1")
    if company not in EXPRESS_COMPANIES:
        raise Refused(BAD_COMPANY, "invalid express_company")
    if company == "SF":
        contact = item.get("contact") if isinstance(item.get("contact"), dict) else {}
        phones = [contact.get(k) for k in ("receiver_contact", "consignor_contact") if contact.get(k)]
        if not phones or not all(isinstance(p, str) and MASKED_PHONE.fullmatch(p) for p in phones):
            raise Refused(BAD_LIST, "SF needs contact.receiver_contact masked like 138****0000")


def _upload(state, body: dict) -> dict:
    """``upload_shipping_info``: checked, then kept (the order's shipping replaced)."""
    trade = _trade(state, body.get("order_key"))
    _check_request(body, trade)
    items = body.get("shipping_list")
    if not isinstance(items, list) or not 1 <= len(items) <= 15:
        raise Refused(BAD_LIST, "shipping_list must have 1-15 items")
    for item in items:
        _check_item(item, body["logistics_type"] == 1)
    store = _store(state)
    now = dt.datetime.fromtimestamp(state.clock(), dt.timezone(dt.timedelta(hours=8))).isoformat()
    store["uploads"].append({"out_trade_no": trade.out_trade_no, "received_at": now, "body": body})
    previous = store["orders"].get(trade.out_trade_no)
    store["orders"][trade.out_trade_no] = {
        "out_trade_no": trade.out_trade_no,
        "transaction_id": trade.transaction_id,
        "order_state": 2,
        "uploads": (previous["uploads"] if previous else 0) + 1,
        "uploaded_at": now,
        "shipping": body,
    }
    return {"errcode": 0, "errmsg": "ok"}


def _get_order(state, body: dict) -> dict:
    """``get_order``: the payment and what was uploaded for it (order_state 1 when nothing)."""
    if body.get("transaction_id"):
        trade = _trade(state, {"order_number_type": 2, "transaction_id": body["transaction_id"]})
    else:
        key = {"order_number_type": 1, "mchid": body.get("merchant_id"), "out_trade_no": body.get("merchant_trade_no")}
        trade = _trade(state, key)
    record = _store(state)["orders"].get(trade.out_trade_no)
    shipping = (record or {}).get("shipping") or {}
    return {
        "errcode": 0,
        "errmsg": "ok",
        "order": {
            "transaction_id": trade.transaction_id,
            "merchant_id": state.config.mch_id,
            "merchant_trade_no": trade.out_trade_no,
            "paid_amount": trade.total_fee,
            "openid": getattr(trade, "openid", None),
            "order_state": 2 if record else 1,
            "shipping": {
                "delivery_mode": shipping.get("delivery_mode"),
                "logistics_type": shipping.get("logistics_type"),
                "shipping_list": shipping.get("shipping_list", []),
                "upload_time": shipping.get("upload_time"),
            }
            if record
            else None,
        },
    }

"""WeChat Pay API v3 payments (JSAPI), refunds and trade bills — the calls, through the signed
request of :mod:`apps.payments.wechat_v3` (wechatpayv3's helpers; WECHAT.md "Pay API v3
payments (JSAPI), refunds, bills").

Amounts are integer fen (``amount.total``, ``amount.refund``); times RFC 3339 in Beijing time
(``+08:00``). Errors are wechat_v3's: :class:`~apps.payments.wechat_v3.V3Refused` (a definite
4xx, ``code`` as WeChat spells it: ``ORDERPAID``, ``ORDER_CLOSED``, ``INVALID_REQUEST``...) and
:class:`~apps.payments.wechat_v3.V3Unavailable` (no trustworthy answer). The shop reaches these
only through ``apps.payments.gateway``'s v3 implementation.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import time
import uuid
from urllib.parse import quote, urlsplit

from django.conf import settings
from django.utils import timezone
from wechatpayv3.utils import rsa_sign

from apps.payments import wechat_v3
from apps.payments.wechat_v3 import V3Refused, V3Unavailable

NOTIFY_PATH = "/api/v1/payments/wechat/v3/notify"
REFUND_NOTIFY_PATH = "/api/v1/payments/wechat/v3/refund-notify"
DESCRIPTION_MAX_BYTES = 127


def rfc3339(moment: dt.datetime) -> str:
    """An aware moment as WeChat v3 writes it: ``2026-12-06T18:30:00+08:00`` (Shanghai)."""
    return timezone.localtime(moment).isoformat(timespec="seconds")


def parse_rfc3339(text: str) -> dt.datetime | None:
    """WeChat's RFC 3339 time (``success_time``) as an aware datetime; None when unreadable."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else None


def description_of(text: str) -> str:
    """``text`` cut to WeChat's 127 UTF-8 bytes without splitting a character."""
    return text.encode("utf-8")[:DESCRIPTION_MAX_BYTES].decode("utf-8", "ignore")


def jsapi_prepay(*, out_trade_no: str, total_fen: int, description: str, openid: str, expires_at: dt.datetime) -> str:
    """``POST /v3/pay/transactions/jsapi`` of ``total_fen`` fen payable until ``expires_at`` (the
    order's pay deadline, sent as ``time_expire``); returns the ``prepay_id`` (valid 2 hours).
    The same ``out_trade_no`` with the same parameters answers again; other parameters: 400
    ``INVALID_REQUEST``; paid: ``ORDERPAID``; closed: ``ORDER_CLOSED``."""
    answer = wechat_v3.request(
        "POST",
        "/v3/pay/transactions/jsapi",
        {
            "appid": settings.WECHAT_APPID,
            "mchid": settings.WECHAT_MCH_ID,
            "description": description_of(description),
            "out_trade_no": out_trade_no,
            "time_expire": rfc3339(expires_at),
            "notify_url": settings.SITE_URL + NOTIFY_PATH,
            "amount": {"total": total_fen, "currency": "CNY"},
            "payer": {"openid": openid},
        },
    )
    prepay_id = answer.get("prepay_id")
    if not isinstance(prepay_id, str) or not prepay_id:
        raise V3Unavailable(f"jsapi answered without a prepay_id: {answer!r:.200}")
    return prepay_id


def pay_params(prepay_id: str, *, timestamp: int | None = None, nonce: str | None = None) -> dict:
    """``wx.requestPayment`` parameters under v3: ``{"appId", "timeStamp", "nonceStr", "package",
    "signType": "RSA", "paySign"}``; paySign = RSA-SHA256 by the merchant key over
    ``appId\\ntimeStamp\\nnonceStr\\npackage\\n``."""
    params = {
        "appId": settings.WECHAT_APPID,
        "timeStamp": str(timestamp or int(time.time())),
        "nonceStr": nonce or uuid.uuid4().hex,
        "package": f"prepay_id={prepay_id}",
        "signType": "RSA",
    }
    message = f"{params['appId']}\n{params['timeStamp']}\n{params['nonceStr']}\n{params['package']}\n"
    params["paySign"] = rsa_sign(wechat_v3._private_key(), message)
    return params


def transaction_query(*, out_trade_no: str) -> dict | None:
    """``GET /v3/pay/transactions/out-trade-no/{no}?mchid=``: the transaction (``trade_state``,
    ``transaction_id``, ``success_time``, ``amount.total``...), or None for 404 ``ORDER_NOT_EXIST``."""
    try:
        return wechat_v3.request(
            "GET", f"/v3/pay/transactions/out-trade-no/{quote(out_trade_no)}?mchid={settings.WECHAT_MCH_ID}"
        )
    except V3Refused as exc:
        if exc.code == "ORDER_NOT_EXIST" or (exc.status == 404 and not exc.code):
            return None
        raise


def transaction_close(*, out_trade_no: str) -> None:
    """``POST /v3/pay/transactions/out-trade-no/{no}/close`` ``{"mchid"}`` (204: closed)."""
    wechat_v3.request(
        "POST", f"/v3/pay/transactions/out-trade-no/{quote(out_trade_no)}/close", {"mchid": settings.WECHAT_MCH_ID}
    )


def refund_create(*, out_trade_no: str, out_refund_no: str, total_fen: int, refund_fen: int, reason: str) -> dict:
    """``POST /v3/refund/domestic/refunds`` of ``refund_fen`` of the ``total_fen`` paid; the answer
    (``refund_id``, ``status`` SUCCESS / PROCESSING / CLOSED / ABNORMAL). The same
    ``out_refund_no`` is one refund; its notification goes to the v3 refund URL."""
    return wechat_v3.request(
        "POST",
        "/v3/refund/domestic/refunds",
        {
            "out_trade_no": out_trade_no,
            "out_refund_no": out_refund_no,
            "reason": reason[:80] or "退款",
            "notify_url": settings.SITE_URL + REFUND_NOTIFY_PATH,
            "amount": {"refund": refund_fen, "total": total_fen, "currency": "CNY"},
        },
    )


def refund_query(*, out_refund_no: str) -> dict | None:
    """``GET /v3/refund/domestic/refunds/{out_refund_no}``: the refund, or None when WeChat has
    none (404)."""
    try:
        return wechat_v3.request("GET", f"/v3/refund/domestic/refunds/{quote(out_refund_no)}")
    except V3Refused as exc:
        if exc.status == 404 or exc.code == "RESOURCE_NOT_EXISTS":
            return None
        raise


def trade_bill(*, bill_date: dt.date) -> str:
    """The ALL trade bill of a Beijing date: ``GET /v3/bill/tradebill`` -> ``download_url``, a
    signed GET of it, its SHA1 checked against ``hash_value``; the text (the same CSV as v2's
    ``pay/downloadbill``), ``""`` for a day without trades (400 ``NO_STATEMENT_EXIST``).
    Raises V3Unavailable (also for a download whose hash differs) or V3Refused."""
    try:
        answer = wechat_v3.request("GET", f"/v3/bill/tradebill?bill_date={bill_date.isoformat()}&bill_type=ALL")
    except V3Refused as exc:
        if exc.code == "NO_STATEMENT_EXIST":
            return ""
        raise
    url = urlsplit(str(answer.get("download_url") or ""))
    if not url.path:
        raise V3Unavailable("tradebill answered without a download_url")
    content = wechat_v3.download(url.path + (f"?{url.query}" if url.query else ""))
    if str(answer.get("hash_type", "SHA1")).upper() != "SHA1":
        raise V3Unavailable(f"unknown bill hash_type {answer.get('hash_type')!r}")
    if not hmac.compare_digest(hashlib.sha1(content).hexdigest(), str(answer.get("hash_value", "")).lower()):
        raise V3Unavailable("the downloaded bill does not match its hash_value")
    return content.decode("utf-8")

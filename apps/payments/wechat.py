"""The one place that talks to WeChat Pay (API v2, MD5 signatures) — through wechatpy.

Every call goes to ``settings.WECHAT_PAY_API_BASE`` (the local sandbox by default,
``https://api.mch.weixin.qq.com/`` in production) with ``settings.WECHAT_TIMEOUT_SECONDS``.
Facts and pitfalls this module handles are in docs WECHAT.md: wechatpy has no default timeout;
network errors come out as ``requests`` exceptions, not ``WeChatPayException``; synchronous
answers are not signature-checked by wechatpy (we check the ones we act on); notification XML
must be parsed without DTDs/entities and verified over exactly the fields received.
"""

from __future__ import annotations

import datetime as dt
import hmac
import logging
from dataclasses import dataclass

import requests
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException
from django.conf import settings
from django.utils import timezone
from wechatpy.exceptions import WeChatPayException
from wechatpy.pay import WeChatPay
from wechatpy.pay.utils import calculate_signature, calculate_signature_hmac

logger = logging.getLogger(__name__)

SUCCESS_ACK = (
    b"<xml><return_code><![CDATA[SUCCESS]]></return_code>"
    b"<return_msg><![CDATA[OK]]></return_msg></xml>"
)


def fail_ack(message: str) -> bytes:
    """The answer that makes WeChat send the notification again."""
    safe = message.replace("]]>", "")
    return (
        f"<xml><return_code><![CDATA[FAIL]]></return_code>"
        f"<return_msg><![CDATA[{safe}]]></return_msg></xml>"
    ).encode()


class PayUnavailable(Exception):
    """WeChat did not answer in time, or the connection failed: the outcome is UNKNOWN."""


class PayRejected(Exception):
    """WeChat answered with an error: ``err_code`` (e.g. ORDERPAID, ORDERCLOSED, SYSTEMERROR)."""

    def __init__(self, err_code: str, message: str = "") -> None:
        self.err_code = err_code or "FAIL"
        super().__init__(f"{self.err_code}: {message}")


class BadSignature(Exception):
    """A notification or an answer whose ``sign`` does not match its fields."""


def client() -> WeChatPay:
    """A WeChatPay client pointed at the configured base URL, with a timeout."""
    pay = WeChatPay(
        settings.WECHAT_APPID,
        settings.WECHAT_PAY_API_KEY,
        settings.WECHAT_MCH_ID,
        mch_cert=settings.WECHAT_MCH_CERT or None,
        mch_key=settings.WECHAT_MCH_KEY or None,
        timeout=settings.WECHAT_TIMEOUT_SECONDS,
    )
    pay.API_BASE_URL = settings.WECHAT_PAY_API_BASE  # WECHAT.md: don't use sandbox=True
    return pay


def _call(fn, *args, **kwargs) -> dict:
    """Run a wechatpy call; map its failures to PayUnavailable / PayRejected."""
    try:
        result = fn(*args, **kwargs)
    except WeChatPayException as exc:
        if exc.return_code != "SUCCESS":
            # Communication-level failure (bad request, signature...): not a business answer.
            raise PayRejected(exc.errcode or exc.return_code, exc.return_msg or "") from exc
        raise PayRejected(exc.errcode, exc.errmsg or "") from exc
    except requests.RequestException as exc:
        raise PayUnavailable(str(exc)) from exc
    if not isinstance(result, dict):  # wechatpy returns the raw text when it is not XML
        raise PayUnavailable("WeChat answered with something that is not XML")
    return result


def verify_signature(fields: dict[str, str]) -> bool:
    """True when ``fields["sign"]`` matches the other non-empty fields (constant-time compare).

    MD5 unless ``sign_type`` is HMAC-SHA256 (WECHAT.md, "Signing (v2)").
    """
    given = fields.get("sign", "")
    unsigned = {k: v for k, v in fields.items() if k != "sign"}
    if fields.get("sign_type") == "HMAC-SHA256":
        expected = calculate_signature_hmac(unsigned, settings.WECHAT_PAY_API_KEY)
    else:
        expected = calculate_signature(unsigned, settings.WECHAT_PAY_API_KEY)
    return hmac.compare_digest(given.encode(), expected.encode())


def parse_xml(body: bytes) -> dict[str, str]:
    """Parse a flat WeChat ``<xml>`` document into ``{field: text}`` safely.

    defusedxml refuses DTDs, entities and external references. Raises ValueError for a body
    that is not a flat ``<xml>`` document.
    """
    try:
        root = ElementTree.fromstring(body, forbid_dtd=True)
    except (ElementTree.ParseError, DefusedXmlException, TypeError) as exc:
        raise ValueError(f"not acceptable XML: {exc}") from exc
    if root.tag != "xml":
        raise ValueError("the root element must be <xml>")
    fields = {}
    for child in root:
        if len(child):
            raise ValueError(f"field {child.tag} is not flat")
        fields[child.tag] = (child.text or "").strip()
    return fields


@dataclass(frozen=True)
class Prepay:
    prepay_id: str
    expires_at: dt.datetime  # WeChat keeps a prepay_id valid for 2 hours


def unified_order(
    *, out_trade_no: str, total_fee: int, body: str, openid: str,
    starts_at: dt.datetime, expires_at: dt.datetime,
) -> Prepay:
    """``pay/unifiedorder`` for a JSAPI (mini-program) payment of ``total_fee`` fen.

    ``starts_at`` / ``expires_at`` (aware; sent as Beijing ``time_start`` / ``time_expire``) are
    the order's creation time and pay deadline, so repeating the call sends identical
    parameters (no OUT_TRADE_NO_USED) and WeChat refuses payment after the deadline. Raises
    PayUnavailable or PayRejected (ORDERPAID, ORDERCLOSED, OUT_TRADE_NO_USED...).
    """
    now = timezone.localtime()
    result = _call(
        client().order.create,
        trade_type="JSAPI",
        body=body[:128],
        total_fee=total_fee,
        notify_url=settings.SITE_URL + "/api/v1/payments/wechat/notify",
        client_ip=settings.WECHAT_SPBILL_CREATE_IP,
        user_id=openid,
        out_trade_no=out_trade_no,
        time_start=timezone.localtime(starts_at),
        time_expire=timezone.localtime(expires_at),
    )
    return Prepay(prepay_id=result["prepay_id"], expires_at=now + dt.timedelta(hours=2))


def jsapi_params(prepay_id: str) -> dict:
    """``wx.requestPayment`` parameters: appId, timeStamp, nonceStr, package, signType, paySign."""
    return client().jsapi.get_jsapi_params(prepay_id)


@dataclass(frozen=True)
class TradeState:
    """What orderquery says. ``state``: SUCCESS, REFUND, NOTPAY, CLOSED, REVOKED, USERPAYING,
    PAYERROR, or NOTEXIST (ORDERNOTEXIST). ``total_fee`` in fen."""

    state: str
    transaction_id: str = ""
    total_fee: int | None = None
    time_end: str = ""


def order_query(*, out_trade_no: str) -> TradeState:
    """``pay/orderquery``; the answer's signature is checked before we act on it.

    Raises PayUnavailable, PayRejected, BadSignature.
    """
    try:
        result = _call(client().order.query, out_trade_no=out_trade_no)
    except PayRejected as exc:
        if exc.err_code == "ORDERNOTEXIST":
            return TradeState(state="NOTEXIST")
        raise
    if not verify_signature({k: v for k, v in result.items() if v is not None}):
        raise BadSignature(f"orderquery answer for {out_trade_no}")
    return TradeState(
        state=result.get("trade_state", ""),
        transaction_id=result.get("transaction_id", "") or "",
        total_fee=int(result["total_fee"]) if result.get("total_fee") else None,
        time_end=result.get("time_end", "") or "",
    )


def close_order(*, out_trade_no: str) -> str:
    """``pay/closeorder``: "CLOSED", or "ORDERPAID" / "ORDERCLOSED" / "ORDERNOTEXIST" as WeChat says.

    Raises PayUnavailable, or PayRejected for other errors.
    """
    try:
        _call(client().order.close, out_trade_no=out_trade_no)
    except PayRejected as exc:
        if exc.err_code in ("ORDERPAID", "ORDERCLOSED", "ORDERNOTEXIST"):
            return exc.err_code
        raise
    return "CLOSED"


def parse_time_end(value: str) -> dt.datetime | None:
    """``time_end`` (yyyyMMddHHmmss, Beijing time) as an aware datetime."""
    try:
        naive = dt.datetime.strptime(value, "%Y%m%d%H%M%S")
    except (TypeError, ValueError):
        return None
    return naive.replace(tzinfo=timezone.get_current_timezone())

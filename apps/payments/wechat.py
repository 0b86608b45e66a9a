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

MIN_EXPIRE = dt.timedelta(minutes=5, seconds=30)  # WeChat: time_expire >= 5 min after the call
SUCCESS_ACK = b"<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>"


def fail_ack(message: str) -> bytes:
    """The answer that makes WeChat send the notification again."""
    safe = message.replace("]]>", "")
    return (
        f"<xml><return_code><![CDATA[FAIL]]></return_code><return_msg><![CDATA[{safe}]]></return_msg></xml>"
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
        if child.tag in fields:  # WeChat never repeats a field; "last one wins" would be a trap
            raise ValueError(f"field {child.tag} appears twice")
        fields[child.tag] = (child.text or "").strip()
    return fields


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes without splitting a character
    (WeChat's ``body`` limit is 128 bytes, about 42 Chinese characters)."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


@dataclass(frozen=True)
class Prepay:
    prepay_id: str
    expires_at: dt.datetime  # WeChat keeps a prepay_id valid for 2 hours


def unified_order(
    *,
    out_trade_no: str,
    total_fee: int,
    body: str,
    openid: str,
    starts_at: dt.datetime,
    expires_at: dt.datetime,
) -> Prepay:
    """``pay/unifiedorder`` for a JSAPI (mini-program) payment of ``total_fee`` fen.

    ``starts_at`` / ``expires_at`` (aware; sent as Beijing ``time_start`` / ``time_expire``) are
    the order's creation time and pay deadline, so repeating the call sends identical
    parameters (no OUT_TRADE_NO_USED) and WeChat refuses payment after the deadline. Raises
    PayUnavailable or PayRejected (ORDERPAID, ORDERCLOSED, OUT_TRADE_NO_USED...).
    """
    now = timezone.localtime()
    # WeChat refuses a JSAPI time_expire less than 5 minutes away: a customer paying in the
    # last minutes gets a little longer at WeChat; the timeout task asks WeChat before cancelling.
    expires_at = max(expires_at, now + MIN_EXPIRE)
    result = _call(
        client().order.create,
        trade_type="JSAPI",
        body=truncate_utf8(body, 128),
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


def order_query_checked(*, out_trade_no: str, total_fee: int) -> TradeState | None:
    """:func:`order_query` for our trade of ``total_fee`` fen, as the sync code acts on it: None
    when WeChat could not be asked (unreachable, an error answer, a bad signature; a warning)
    or says SUCCESS / REFUND for another amount (an error: never applied)."""
    try:
        state = order_query(out_trade_no=out_trade_no)
    except (PayUnavailable, PayRejected, BadSignature) as exc:
        logger.warning("orderquery %s failed: %s", out_trade_no, exc)
        return None
    if state.state in ("SUCCESS", "REFUND") and state.total_fee != total_fee:
        logger.error("orderquery amount mismatch on %s: %s != %s", out_trade_no, state.total_fee, total_fee)
        return None
    return state


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
    """``time_end`` (yyyyMMddHHmmss, Beijing time) as an aware datetime; None when unreadable
    or not a moment PostgreSQL can store (the first hours of year 1 are before year 1 in UTC:
    the paying transaction would fail on it, and the notify gate already answered SUCCESS)."""
    try:
        naive = dt.datetime.strptime(value, "%Y%m%d%H%M%S")
        aware = naive.replace(tzinfo=timezone.get_current_timezone())
        aware.astimezone(dt.UTC)
    except (TypeError, ValueError, OverflowError):
        return None
    return aware


def refund_apply(*, out_trade_no: str, out_refund_no: str, total_fee: int, refund_fee: int, reason: str) -> str:
    """``secapi/pay/refund`` (client certificate) of ``refund_fee`` fen; returns WeChat's refund_id.

    Calling again with the same ``out_refund_no`` is safe: WeChat refunds it once. Raises
    PayUnavailable (retry with the same number), PayRejected (``err_code`` SYSTEMERROR /
    BIZERR_NEED_RETRY: retry; NOTENOUGH, INVALID_REQUEST...: staff must look).
    """
    result = _call(
        client().refund.apply,
        total_fee=total_fee,
        refund_fee=refund_fee,
        out_refund_no=out_refund_no,
        out_trade_no=out_trade_no,
        refund_desc=reason[:80] or None,
        notify_url=settings.SITE_URL + "/api/v1/payments/wechat/refund-notify",
    )
    return result.get("refund_id", "") or ""


def refund_query(*, out_refund_no: str) -> str:
    """``pay/refundquery``: SUCCESS, PROCESSING, REFUNDCLOSE, CHANGE or NOTEXIST.

    Raises PayUnavailable, PayRejected, BadSignature.
    """
    try:
        result = _call(client().refund.query, out_refund_no=out_refund_no)
    except PayRejected as exc:
        if exc.err_code == "REFUNDNOTEXIST":
            return "NOTEXIST"
        raise
    if not verify_signature({k: v for k, v in result.items() if v is not None}):
        raise BadSignature(f"refundquery answer for {out_refund_no}")
    return result.get("refund_status_0", "") or ""


def parse_refund_notification(body: bytes) -> dict[str, str]:
    """Decrypt a refund notification's ``req_info`` (AES-256-ECB, key = md5(API key)).

    The outer XML is parsed safely first and its appid / mch_id checked (WECHAT.md, "Refund
    notification"). Returns the inner fields (out_refund_no, refund_fee, refund_status...).
    Raises ValueError for anything malformed, foreign or undecryptable.
    """
    from wechatpy.crypto import WeChatRefundCrypto

    outer = parse_xml(body)
    if outer.get("return_code") != "SUCCESS" or not outer.get("req_info"):
        raise ValueError("not a successful refund notification")
    try:
        inner = WeChatRefundCrypto(settings.WECHAT_PAY_API_KEY).decrypt_message(
            outer, settings.WECHAT_APPID, settings.WECHAT_MCH_ID
        )
    except Exception as exc:  # wrong appid/mch_id, bad base64, bad padding, not XML
        raise ValueError(f"cannot decrypt req_info: {type(exc).__name__}") from exc
    if not isinstance(inner, dict):
        raise ValueError("req_info is not a flat XML document")
    return {k: str(v) for k, v in inner.items() if v is not None and not isinstance(v, dict)}


def download_bill(*, bill_date: dt.date) -> str:
    """``pay/downloadbill`` (ALL) for a Beijing date: the bill as text ("" when WeChat has none).

    Raises PayUnavailable or PayRejected.
    """
    try:
        result = client().tools.download_bill(bill_date, bill_type="ALL")
    except WeChatPayException as exc:
        if "No Bill Exist" in (exc.return_msg or "") or exc.errcode == "20002":
            return ""
        raise PayRejected(exc.errcode or exc.return_code, exc.return_msg or "") from exc
    except requests.RequestException as exc:
        raise PayUnavailable(str(exc)) from exc
    if isinstance(result, dict):  # an XML answer that was not an error
        return ""
    return result

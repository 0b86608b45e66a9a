"""The one WeChat Pay gateway for payments and refunds: API v2 (``apps/payments/wechat.py``,
wechatpy, MD5) or API v3 (``apps/payments/wechat_v3_pay.py``, wechatpayv3, RSA).

``WECHAT_PAY_API`` (``v2`` default, or ``v3``) chooses the api of a NEW payment
(:func:`gateway_new`); the Payment / Recharge row records it (``api``) and every later query,
close and refund of it goes through that api (:func:`gateway_for`), so a shop may switch with
paid orders in flight (API.md "Going live: WeChat Pay API v3"). Answers in v2's words (listed on
:class:`Gateway`); errors :class:`PayUnavailable` (outcome unknown), :class:`PayRejected`
(``err_code``, v2's spelling: SYSTEMERROR, NOTENOUGH...), :class:`BadSignature`. Amounts in fen.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from apps.payments import wechat, wechat_v3, wechat_v3_pay

logger = logging.getLogger(__name__)

API_V2, API_V3 = "v2", "v3"
APIS = (API_V2, API_V3)
PayUnavailable = wechat.PayUnavailable
PayRejected = wechat.PayRejected
BadSignature = wechat.BadSignature
Prepay = wechat.Prepay
PREPAY_VALID = dt.timedelta(hours=2)  # WeChat keeps a prepay_id valid for 2 hours (both apis)

# v3 error codes in v2's spelling, so callers decide once (refunds retry SYSTEMERROR...).
_V3_CODES = {
    "ORDER_CLOSED": "ORDERCLOSED",
    "ORDER_NOT_EXIST": "ORDERNOTEXIST",
    "SYSTEM_ERROR": "SYSTEMERROR",
    "NOT_ENOUGH": "NOTENOUGH",
    "RESOURCE_NOT_EXISTS": "REFUNDNOTEXIST",
}
_V3_REFUND_STATUS = {"SUCCESS": "SUCCESS", "PROCESSING": "PROCESSING", "CLOSED": "REFUNDCLOSE", "ABNORMAL": "CHANGE"}


@dataclass(frozen=True)
class TradeState:
    """What WeChat says of a trade: ``state`` (v2's words, NOTEXIST for none), WeChat's
    ``transaction_id``, ``total_fee`` (fen) and ``paid_at`` (aware; None when not paid)."""

    state: str
    transaction_id: str = ""
    total_fee: int | None = None
    paid_at: dt.datetime | None = None


class Gateway:
    """The interface; ``api`` is "v2" or "v3". Every call goes out of the process: never call
    it inside a database transaction."""

    api = ""

    def prepay(
        self,
        *,
        out_trade_no: str,
        total_fee: int,
        description: str,
        openid: str,
        starts_at: dt.datetime,
        expires_at: dt.datetime,
    ) -> Prepay:
        """A JSAPI prepay of ``total_fee`` fen, payable until ``expires_at`` (the pay deadline)."""
        raise NotImplementedError

    def pay_params(self, prepay_id: str) -> dict:
        """``wx.requestPayment`` parameters of ``prepay_id``."""
        raise NotImplementedError

    def query(self, *, out_trade_no: str) -> TradeState:
        """The trade's ``state``: SUCCESS / REFUND / NOTPAY / CLOSED / REVOKED / USERPAYING /
        PAYERROR / NOTEXIST."""
        raise NotImplementedError

    def close(self, *, out_trade_no: str) -> str:
        """ "CLOSED", or ORDERPAID / ORDERCLOSED / ORDERNOTEXIST as WeChat says."""
        raise NotImplementedError

    def refund(self, *, out_trade_no: str, out_refund_no: str, total_fee: int, refund_fee: int, reason: str) -> str:
        """Apply for a refund (the same ``out_refund_no`` is one refund); WeChat's refund_id."""
        raise NotImplementedError

    def refund_query(self, *, out_refund_no: str) -> str:
        """SUCCESS / PROCESSING / REFUNDCLOSE / CHANGE / NOTEXIST."""
        raise NotImplementedError

    def download_bill(self, *, bill_date: dt.date) -> str:
        """The ALL bill of a Beijing date as text ("" for a day without trades)."""
        raise NotImplementedError

    def query_checked(self, *, out_trade_no: str, total_fee: int) -> TradeState | None:
        """:meth:`query` as the sync code acts on it: None when WeChat could not be asked (a
        warning) or says SUCCESS / REFUND for another amount than ``total_fee`` (an error)."""
        try:
            state = self.query(out_trade_no=out_trade_no)
        except (PayUnavailable, PayRejected, BadSignature) as exc:
            logger.warning("%s query %s failed: %s", self.api, out_trade_no, exc)
            return None
        if state.state in ("SUCCESS", "REFUND") and state.total_fee != total_fee:
            logger.error("%s query amount mismatch on %s: %s != %s", self.api, out_trade_no, state.total_fee, total_fee)
            return None
        return state


class V2Gateway(Gateway):
    """API v2 through ``apps/payments/wechat.py`` (wechatpy, MD5)."""

    api = API_V2

    def prepay(self, *, out_trade_no, total_fee, description, openid, starts_at, expires_at) -> Prepay:
        return wechat.unified_order(
            out_trade_no=out_trade_no,
            total_fee=total_fee,
            body=description,
            openid=openid,
            starts_at=starts_at,
            expires_at=expires_at,
        )

    def pay_params(self, prepay_id: str) -> dict:
        return wechat.jsapi_params(prepay_id)

    def query(self, *, out_trade_no: str) -> TradeState:
        state = wechat.order_query(out_trade_no=out_trade_no)
        return TradeState(
            state=state.state,
            transaction_id=state.transaction_id,
            total_fee=state.total_fee,
            paid_at=wechat.parse_time_end(state.time_end),
        )

    def close(self, *, out_trade_no: str) -> str:
        return wechat.close_order(out_trade_no=out_trade_no)

    def refund(self, *, out_trade_no, out_refund_no, total_fee, refund_fee, reason) -> str:
        return wechat.refund_apply(
            out_trade_no=out_trade_no,
            out_refund_no=out_refund_no,
            total_fee=total_fee,
            refund_fee=refund_fee,
            reason=reason,
        )

    def refund_query(self, *, out_refund_no: str) -> str:
        return wechat.refund_query(out_refund_no=out_refund_no)

    def download_bill(self, *, bill_date: dt.date) -> str:
        return wechat.download_bill(bill_date=bill_date)


@contextmanager
def _v3_errors() -> Iterator[None]:
    """wechat_v3's errors as the gateway's (codes in v2's spelling)."""
    try:
        yield
    except wechat_v3.V3Unavailable as exc:
        raise PayUnavailable(str(exc)) from exc
    except wechat_v3.V3Refused as exc:
        raise PayRejected(_V3_CODES.get(exc.code, exc.code or f"HTTP{exc.status}"), exc.message) from exc


class V3Gateway(Gateway):
    """API v3 through ``apps/payments/wechat_v3_pay.py`` (wechatpayv3, RSA; answers verified)."""

    api = API_V3

    def prepay(self, *, out_trade_no, total_fee, description, openid, starts_at, expires_at) -> Prepay:
        with _v3_errors():
            prepay_id = wechat_v3_pay.jsapi_prepay(
                out_trade_no=out_trade_no,
                total_fen=total_fee,
                description=description,
                openid=openid,
                expires_at=expires_at,
            )
        return Prepay(prepay_id=prepay_id, expires_at=timezone.now() + PREPAY_VALID)

    def pay_params(self, prepay_id: str) -> dict:
        return wechat_v3_pay.pay_params(prepay_id)

    def query(self, *, out_trade_no: str) -> TradeState:
        with _v3_errors():
            found = wechat_v3_pay.transaction_query(out_trade_no=out_trade_no)
        if found is None:
            return TradeState(state="NOTEXIST")
        amount = found.get("amount") if isinstance(found.get("amount"), dict) else {}
        total = amount.get("total")
        return TradeState(
            state=str(found.get("trade_state", "")),
            transaction_id=str(found.get("transaction_id") or ""),
            total_fee=total if isinstance(total, int) and not isinstance(total, bool) else None,
            paid_at=wechat_v3_pay.parse_rfc3339(str(found.get("success_time") or "")),
        )

    def close(self, *, out_trade_no: str) -> str:
        try:
            with _v3_errors():
                wechat_v3_pay.transaction_close(out_trade_no=out_trade_no)
        except PayRejected as exc:
            if exc.err_code in ("ORDERPAID", "ORDERCLOSED", "ORDERNOTEXIST"):
                return exc.err_code
            raise
        return "CLOSED"

    def refund(self, *, out_trade_no, out_refund_no, total_fee, refund_fee, reason) -> str:
        with _v3_errors():
            answer = wechat_v3_pay.refund_create(
                out_trade_no=out_trade_no,
                out_refund_no=out_refund_no,
                total_fen=total_fee,
                refund_fen=refund_fee,
                reason=reason,
            )
        return str(answer.get("refund_id") or "")

    def refund_query(self, *, out_refund_no: str) -> str:
        with _v3_errors():
            found = wechat_v3_pay.refund_query(out_refund_no=out_refund_no)
        if found is None:
            return "NOTEXIST"
        return _V3_REFUND_STATUS.get(str(found.get("status", "")), str(found.get("status", "")))

    def download_bill(self, *, bill_date: dt.date) -> str:
        with _v3_errors():
            return wechat_v3_pay.trade_bill(bill_date=bill_date)


_GATEWAYS = {API_V2: V2Gateway(), API_V3: V3Gateway()}


def gateway_for(api: str) -> Gateway:
    """The gateway of ``api`` ("v2" or "v3"; a row's recorded ``api``). Raises ValueError."""
    try:
        return _GATEWAYS[api]
    except KeyError:
        raise ValueError(f"unknown WeChat Pay api {api!r}") from None


def api_new() -> str:
    """The api a NEW payment is made with: ``settings.WECHAT_PAY_API``, read at each call."""
    return settings.WECHAT_PAY_API


def gateway_new() -> Gateway:
    """The gateway for a new payment (:func:`api_new`)."""
    return gateway_for(api_new())

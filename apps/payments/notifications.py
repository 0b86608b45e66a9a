"""WeChat Pay's notifications (its callbacks): one table of handlers, the shared checks once.

Each URL WeChat calls (API.md) is a :class:`Callback`: how its body is read and trusted and the
answers WeChat understands (v2: XML; Pay API v3: JSON, its payment and refund results read into
v2's fields). What a notification confirms is a :class:`Handler` in ``HANDLERS``; adding one is
one entry (:func:`register`). :func:`notification_handle` runs every notification through the
same checks in the same order (DESIGN.md flow 5) and leaves exactly one audit row
(``Notification``). Most re-sent payment results are answered before Django by the notify gate
(docs/GATES.md "PaymentNotifyGate"; beat writes their rows: ``notify_duplicates``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.members import selectors as member_selectors
from apps.members import services as members
from apps.orders.models import PayMethod
from apps.payments import member_cards, recharges, refunds, services, wechat, wechat_v3, wechat_v3_pay
from apps.payments.models import Notification, Payment, PaymentStatus, Recharge, Refund
from starmall.locking import retry_on_lock_conflict

logger = logging.getLogger(__name__)


class Untrusted(Exception):
    """A notification we cannot read or trust: recorded with ``outcome``, answered FAIL ``reason``."""

    def __init__(self, outcome: str, reason: str, fields: dict | None = None):
        super().__init__(reason)
        self.outcome, self.reason, self.fields = outcome, reason, fields or {}


@dataclass(frozen=True)
class Callback:
    """One of WeChat's callback URLs.

    ``kind``: the ``Notification.Kind`` of its audit rows. ``read(body, headers)`` returns the
    fields read from a body it trusts and the text kept on the audit row (the raw body, or the
    decrypted fields); it raises :class:`Untrusted` for anything else. ``success`` is the answer
    to a handled notification, ``fail(reason)`` the one that makes WeChat send it again, sent
    with HTTP ``success_status`` / ``fail_status`` and ``content_type`` (the XML callbacks: 200
    both, XML; Pay API v3: 204 / 400, JSON).
    """

    kind: str
    read: Callable[[bytes, Mapping[str, str]], tuple[dict, bytes | str]]
    success: bytes = wechat.SUCCESS_ACK
    fail: Callable[[str], bytes] = wechat.fail_ack
    success_status: int = 200
    fail_status: int = 200
    content_type: str = "application/xml"

    def answer_success(self) -> Answer:
        """The answer to a handled notification (applied, duplicate or late)."""
        return Answer(self.success, self.success_status, self.content_type)

    def answer_fail(self, reason: str) -> Answer:
        """The answer that makes WeChat send the notification again; ``reason`` in English."""
        return Answer(self.fail(reason), self.fail_status, self.content_type)


@dataclass(frozen=True)
class Answer:
    """What a callback's view sends back: ``body`` bytes with HTTP ``status`` and ``content_type``."""

    body: bytes
    status: int = 200
    content_type: str = "application/xml"


@dataclass(frozen=True)
class Handler:
    """One thing a notification can confirm (a payment, a recharge, a refund).

    ``callback``: the URL it arrives on. ``claims(fields)``: True when the notification is about
    this handler's rows (the first handler in ``HANDLERS`` that claims it takes it). ``find``:
    our row, or None. ``number``: the field naming our row (for the FAIL "unknown ..." answer).
    ``amount`` / ``expected_fen(row)``: the field with WeChat's amount in fen and the amount our
    row must carry. ``apply(row, fields)``: the owning module's apply function; it returns the
    ``Notification.Outcome`` and runs inside the transaction that writes the audit row.
    ``applied_before(row, fields)``: True for a re-sent copy already applied (no transaction).
    """

    callback: Callback
    claims: Callable[[dict], bool]
    find: Callable[[dict], Any]
    number: str
    amount: str
    expected_fen: Callable[[Any], int]
    apply: Callable[[Any, dict], str]
    applied_before: Callable[[Any, dict], bool] = field(default=lambda row, fields: False)
    #: Further callbacks it takes notifications from (Pay API v3's URLs, read into the same fields).
    also: tuple[Callback, ...] = ()

    def takes(self, callback: Callback) -> bool:
        """True when notifications arriving on ``callback`` may be this handler's."""
        return self.callback is callback or any(c is callback for c in self.also)


# --- the two callbacks: reading and trusting a body -----------------------------------------


def _read_pay_result(body: bytes, headers: Mapping[str, str]) -> tuple[dict, bytes]:
    """A payment result (orders and recharges): safe parse, signature over exactly the fields
    received, then return_code / appid / mch_id / result_code / transaction_id."""
    try:
        fields = wechat.parse_xml(body)
    except ValueError as exc:
        raise Untrusted(Notification.Outcome.MALFORMED, "malformed XML") from exc
    if not wechat.verify_signature(fields):
        raise Untrusted(Notification.Outcome.BAD_SIGNATURE, "bad signature", fields)
    if (
        fields.get("return_code") != "SUCCESS"
        or fields.get("appid") != settings.WECHAT_APPID
        or fields.get("mch_id") != settings.WECHAT_MCH_ID
        or fields.get("result_code") != "SUCCESS"
        or not fields.get("transaction_id")
    ):
        raise Untrusted(Notification.Outcome.BAD_FIELDS, "unexpected appid, mch_id or result", fields)
    return fields, body


def _read_refund_result(body: bytes, headers: Mapping[str, str]) -> tuple[dict, str]:
    """A refund result: safe parse, appid / mch_id, ``req_info`` decrypted (wechat.py); the
    audit row keeps the decrypted fields, one ``key=value`` a line."""
    try:
        fields = wechat.parse_refund_notification(body)
    except ValueError as exc:
        logger.warning("refund notification rejected: %s", exc)
        raise Untrusted(Notification.Outcome.MALFORMED, "cannot read req_info") from exc
    return fields, "\n".join(f"{k}={v}" for k, v in sorted(fields.items()))


def _v3_parsed(body: bytes, headers: Mapping[str, str]) -> dict:
    """``wechat_v3.notification_parse`` with its refusals as Untrusted (bad signature, or a
    resource that cannot be read)."""
    try:
        parsed = wechat_v3.notification_parse(headers, body)
    except wechat_v3.V3BadSignature as exc:
        raise Untrusted(Notification.Outcome.BAD_SIGNATURE, "bad signature") from exc
    except wechat_v3.V3BadNotification as exc:
        logger.warning("v3 notification rejected: %s", exc)
        raise Untrusted(Notification.Outcome.MALFORMED, "cannot read the resource") from exc
    return parsed


def _read_v3(body: bytes, headers: Mapping[str, str]) -> tuple[dict, str]:
    """A Pay API v3 notification (JSON): ``Wechatpay-*`` signature, serial and timestamp, then
    the AES-256-GCM ``resource`` decrypted with the APIv3 key (``wechat_v3.notification_parse``).
    The fields are the decrypted resource's (numbers as text, like the XML fields) plus
    ``event_type``; the audit row keeps the decrypted resource as JSON."""
    parsed = _v3_parsed(body, headers)
    resource = parsed["resource"] if isinstance(parsed["resource"], dict) else {}
    fields = {
        key: str(value)
        for key, value in resource.items()
        if isinstance(value, str | int) and not isinstance(value, bool)
    }
    fields["event_type"] = str(parsed.get("event_type") or "")
    return fields, json.dumps(resource, ensure_ascii=False, sort_keys=True)


def _v3_resource(body: bytes, headers: Mapping[str, str], original_type: str) -> tuple[str, dict]:
    """A Pay API v3 payment or refund notification verified (signature with WeChat Pay's public
    key, serial = its id, 5-minute timestamp window), decrypted (AES-256-GCM, APIv3 key) and of
    ``original_type`` (``transaction`` or ``refund``: the resource's ``original_type`` and
    ``associated_data``, WECHAT.md): ``(event_type, resource)``; Untrusted for anything else."""
    parsed = _v3_parsed(body, headers)
    resource = parsed["resource"] if isinstance(parsed["resource"], dict) else {}
    if parsed["original_type"] != original_type or parsed["associated_data"] != original_type:
        raise Untrusted(Notification.Outcome.BAD_FIELDS, "unknown notification")
    return str(parsed.get("event_type") or ""), resource


def _v3_fields(event_type: str, resource: dict, amounts: dict[str, str]) -> dict[str, str]:
    """The decrypted resource's text and integer fields, ``event_type``, ``openid`` (payer) and
    ``amounts`` (our field name -> key of ``resource["amount"]``, integers only: never
    ``payer_total`` for ``total_fee``), in the XML callbacks' shape (numbers as text)."""
    fields = {k: str(v) for k, v in resource.items() if isinstance(v, str | int) and not isinstance(v, bool)}
    amount = resource.get("amount") if isinstance(resource.get("amount"), dict) else {}
    payer = resource.get("payer") if isinstance(resource.get("payer"), dict) else {}
    for name, key in amounts.items():
        value = amount.get(key)
        fields[name] = str(value) if isinstance(value, int) and not isinstance(value, bool) else ""
    fields["openid"] = str(payer.get("openid") or "")
    fields["event_type"] = event_type
    return fields


def _read_v3_pay(body: bytes, headers: Mapping[str, str]) -> tuple[dict, str]:
    """A Pay API v3 payment result (orders and recharges): verified and decrypted
    (:func:`_v3_resource`), then ``TRANSACTION.SUCCESS``, appid / mchid, ``trade_state``
    SUCCESS and a transaction_id. ``total_fee`` = ``amount.total``; the audit row keeps the
    decrypted resource as JSON."""
    event_type, resource = _v3_resource(body, headers, "transaction")
    fields = _v3_fields(event_type, resource, {"total_fee": "total", "payer_total": "payer_total"})
    if (
        event_type != "TRANSACTION.SUCCESS"
        or fields.get("appid") != settings.WECHAT_APPID
        or fields.get("mchid") != settings.WECHAT_MCH_ID
        or fields.get("trade_state") != "SUCCESS"
        or not fields.get("transaction_id")
    ):
        raise Untrusted(Notification.Outcome.BAD_FIELDS, "unexpected appid, mchid or result", fields)
    return fields, json.dumps(resource, ensure_ascii=False, sort_keys=True)


def _read_v3_refund(body: bytes, headers: Mapping[str, str]) -> tuple[dict, str]:
    """A Pay API v3 refund result (``REFUND.SUCCESS`` / ``ABNORMAL`` / ``CLOSED``): verified,
    decrypted, mchid checked; ``refund_fee`` = ``amount.refund``, ``total_fee`` = ``amount.total``."""
    event_type, resource = _v3_resource(body, headers, "refund")
    fields = _v3_fields(event_type, resource, {"refund_fee": "refund", "total_fee": "total"})
    if not event_type.startswith("REFUND.") or fields.get("mchid") != settings.WECHAT_MCH_ID:
        raise Untrusted(Notification.Outcome.BAD_FIELDS, "unexpected mchid or event", fields)
    return fields, json.dumps(resource, ensure_ascii=False, sort_keys=True)


# The v3 payment and refund callbacks answer in Chinese (API.md); the reasons are the handle's.
_V3_REASONS_ZH = {
    "bad signature": "签名验证失败",
    "cannot read the resource": "通知内容无法解密",
    "unexpected appid, mchid or result": "通知的 appid、商户号或支付结果不符",
    "unexpected mchid or event": "通知的商户号或事件类型不符",
    "unknown notification": "无法识别的通知",
    "unknown out_trade_no": "商户订单号不存在",
    "unknown out_refund_no": "商户退款单号不存在",
    "total_fee does not match": "订单金额不符",
    "refund_fee does not match": "退款金额不符",
    "body too large": "通知内容过大",
}


def _v3_fail_zh(reason: str) -> bytes:
    """Pay API v3's failure answer with a Chinese ``message`` (``{"code": "FAIL", "message",
    "detail": {}}``, sent with a 4xx status): WeChat sends the notification again."""
    message = _V3_REASONS_ZH.get(reason, "通知无法处理")
    return json.dumps({"code": "FAIL", "message": message, "detail": {}}, ensure_ascii=False).encode()


def _v3_fail(reason: str) -> bytes:
    """Pay API v3's failure answer ``{"code": "FAIL", "message": reason}`` (with a 4xx status),
    plus an empty ``detail`` so that it is also the shop's error body (API.md, the schema)."""
    return json.dumps({"code": "FAIL", "message": reason, "detail": {}}).encode()


#: ``payments/wechat/notify``: a signed XML payment result (an order's, a recharge's, a member
#: card's); ``payments/wechat/refund-notify``: an XML refund result whose ``req_info`` is encrypted.
PAY_RESULT = Callback(kind=Notification.Kind.PAYMENT, read=_read_pay_result)
REFUND_RESULT = Callback(kind=Notification.Kind.REFUND, read=_read_refund_result)


def _v3_callback(kind: str, read, fail) -> Callback:
    """A Pay API v3 callback: 204 with an empty body when handled, 400 + ``fail``'s JSON to be
    sent again."""
    return Callback(
        kind=kind,
        read=read,
        success=b"",
        fail=fail,
        success_status=204,
        fail_status=400,
        content_type="application/json",
    )


#: WeChat Pay v3's merchant-transfer result (``MCHTRANSFER.BILL.FINISHED``) on
#: ``payments/wechat/transfer-notify``: 204 handled, 400 + FAIL JSON to be sent again. Its
#: handler is distribution's (registered from its AppConfig.ready()).
TRANSFER_RESULT = _v3_callback(Notification.Kind.TRANSFER, _read_v3, _v3_fail)


#: Pay API v3's payment result (``TRANSACTION.SUCCESS``, orders and recharges) on
#: ``payments/wechat/v3/notify`` and refund result on ``payments/wechat/v3/refund-notify``,
#: failures answered ``{"code": "FAIL", "message": Chinese}``. Their handlers are the v2 ones
#: ("recharge", "payment", "refund": ``Handler.also``).
PAY_RESULT_V3 = _v3_callback(Notification.Kind.PAYMENT, _read_v3_pay, _v3_fail_zh)
REFUND_RESULT_V3 = _v3_callback(Notification.Kind.REFUND, _read_v3_refund, _v3_fail_zh)


# --- the handlers: which row, which amount, which apply function ------------------------------


def _paid_at(fields: dict) -> dt.datetime:
    """WeChat's ``time_end`` (v2, Shanghai) or ``success_time`` (v3, RFC 3339), or now when it
    is missing or unreadable."""
    return (
        wechat.parse_time_end(fields.get("time_end", ""))
        or wechat_v3_pay.parse_rfc3339(fields.get("success_time", ""))
        or timezone.now()
    )


def _payment_find(fields: dict) -> Payment | None:
    # [:1], not .first(): out_trade_no is UNIQUE, and no ORDER BY is compiled per notification
    # (measured under a notification storm: docs/PERFORMANCE.md).
    return next(
        iter(Payment.objects.filter(out_trade_no=fields.get("out_trade_no", ""), method=PayMethod.WECHAT)[:1]), None
    )


def _payment_apply(payment: Payment, fields: dict) -> str:
    applied = services.payment_apply_paid(
        payment=payment, transaction_id=fields["transaction_id"], paid_at=_paid_at(fields), actor="wechat"
    )
    return Notification.Outcome(applied.value)


def _payment_applied_before(payment: Payment, fields: dict) -> bool:
    # Racing copies that read it unpaid still meet the conditional UPDATE in payment_apply_paid.
    return payment.status == PaymentStatus.PAID and payment.transaction_id == fields["transaction_id"]


def _recharge_apply(recharge: Recharge, fields: dict) -> str:
    applied = recharges.recharge_apply_paid(
        recharge=recharge, transaction_id=fields["transaction_id"], paid_at=_paid_at(fields)
    )
    return Notification.Outcome(applied.value)


def _member_card_apply(purchase, fields: dict) -> str:
    applied = member_cards.card_apply_paid(
        purchase=purchase, transaction_id=fields["transaction_id"], paid_at=_paid_at(fields)
    )
    return Notification.Outcome(applied.value)


def _refund_apply(refund: Refund, fields: dict) -> str:
    """SUCCESS confirms the refund once; CHANGE / REFUNDCLOSE (v3: ABNORMAL / CLOSED) mark it
    FAILED (one alert); any other refund_status is recorded as unexpected and answered SUCCESS
    (nothing to retry)."""
    status = fields.get("refund_status")
    if status == "SUCCESS":
        done = refunds.refund_succeeded(refund=refund)
        return Notification.Outcome.APPLIED if done else Notification.Outcome.DUPLICATE
    if status in ("CHANGE", "REFUNDCLOSE", "ABNORMAL", "CLOSED"):
        refunds.refund_mark_failed(refund, f"WeChat refund_status {status}")
        return Notification.Outcome.REFUND_CLOSED
    return Notification.Outcome.BAD_FIELDS


HANDLERS: dict[str, Handler] = {
    # A recharge shares the payment URL; its out_trade_no is "R..." (order numbers are digits),
    # so it comes before "payment", which claims every other payment result.
    "recharge": Handler(
        callback=PAY_RESULT,
        claims=lambda fields: recharges.is_recharge_no(fields.get("out_trade_no", "")),
        find=lambda fields: Recharge.objects.filter(recharge_no=fields.get("out_trade_no", "")).first(),
        number="out_trade_no",
        amount="total_fee",
        expected_fen=lambda recharge: recharge.pay_fen,
        apply=_recharge_apply,
        also=(PAY_RESULT_V3,),
    ),
    # A member card purchase too: "M..." (apps.payments.member_cards), before "payment".
    "member_card": Handler(
        callback=PAY_RESULT,
        claims=lambda fields: members.is_purchase_no(fields.get("out_trade_no", "")),
        find=lambda fields: member_selectors.purchase_by_no(fields.get("out_trade_no", "")),
        number="out_trade_no",
        amount="total_fee",
        expected_fen=lambda purchase: purchase.pay_fen,
        apply=_member_card_apply,
        also=(PAY_RESULT_V3,),
    ),
    "payment": Handler(
        callback=PAY_RESULT,
        claims=lambda fields: True,
        find=_payment_find,
        number="out_trade_no",
        amount="total_fee",
        expected_fen=lambda payment: payment.total_fee,
        apply=_payment_apply,
        applied_before=_payment_applied_before,
        also=(PAY_RESULT_V3,),
    ),
    "refund": Handler(
        callback=REFUND_RESULT,
        claims=lambda fields: True,
        find=lambda fields: Refund.objects.filter(out_refund_no=fields.get("out_refund_no", "")).first(),
        number="out_refund_no",
        amount="refund_fee",
        expected_fen=lambda refund: refund.refund_fen,
        apply=_refund_apply,
        also=(REFUND_RESULT_V3,),
    ),
}


def register(name: str, handler: Handler, *, before: str | None = None) -> None:
    """Add a handler to ``HANDLERS``. An app above payments registers from its
    ``AppConfig.ready()``, since payments may not import it (``tests/test_layers.py``).

    ``before``: the name of a handler that must come after it (one that claims more broadly on
    the same callback, as "payment" does). Raises ValueError for a name already taken. A
    notification on a URL of its own also needs a :class:`Callback`, whose view calls
    :func:`notification_handle` and sends the :class:`Answer`: e.g. distribution's
    ``transfers.TRANSFER_HANDLER`` on :data:`TRANSFER_RESULT` (``views.transfer_notify``).
    """
    if name in HANDLERS:
        raise ValueError(f"a notification handler named {name!r} exists")
    entries = list(HANDLERS.items())
    at = next((i for i, (key, _) in enumerate(entries) if key == before), len(entries))
    entries.insert(at, (name, handler))
    HANDLERS.clear()
    HANDLERS.update(entries)


# --- the shared checks ------------------------------------------------------------------------


def handler_for(callback: Callback, fields: dict) -> Handler | None:
    """The first handler in ``HANDLERS`` on ``callback`` that claims the trusted ``fields``;
    None when none does. The ASGI gate (``starmall.gates.payment_notify``) asks it too."""
    return next((h for h in HANDLERS.values() if h.takes(callback) and h.claims(fields)), None)


def notification_handle(
    callback: Callback,
    body: bytes,
    headers: Mapping[str, str] | None = None,
    *,
    received_at: dt.datetime | None = None,
) -> Answer:
    """Check and apply one notification that arrived on ``callback``; return WeChat's answer
    (the callback's success or fail body, status and content type). ``received_at``: when it
    arrived, if before now (aware; the worker applying what the notify gate queued); its audit
    row carries it.

    Exactly one ``Notification`` row is written (invalid ones are counted per day and sampled).
    Raises DatabaseBusy when the applying transaction lost a lock conflict twice (nothing was
    applied or recorded; the view answers FAIL so that WeChat sends it again).
    """
    record = partial(Notification.record, kind=callback.kind, received_at=received_at)
    try:
        fields, kept = callback.read(body, headers or {})
    except Untrusted as exc:
        # FAIL for anything we cannot trust or match, so WeChat keeps sending while staff look at
        # the audit row; SUCCESS for applied, duplicate and late ones (sending again would not help).
        record(body=body, fields=exc.fields, outcome=exc.outcome)
        return callback.answer_fail(exc.reason)
    handler = handler_for(callback, fields)
    if handler is None:
        record(body=kept, fields=fields, outcome=Notification.Outcome.UNKNOWN_ORDER)
        return callback.answer_fail("unknown notification")
    row = handler.find(fields)
    if row is None:
        record(body=kept, fields=fields, outcome=Notification.Outcome.UNKNOWN_ORDER)
        return callback.answer_fail(f"unknown {handler.number}")
    expected = handler.expected_fen(row)
    if fields.get(handler.amount) != str(expected):
        logger.error(
            "amount mismatch on %s %s: got %s fen, expected %s",
            handler.number,
            fields.get(handler.number),
            fields.get(handler.amount),
            expected,
        )
        record(body=kept, fields=fields, outcome=Notification.Outcome.AMOUNT_MISMATCH)
        return callback.answer_fail(f"{handler.amount} does not match")
    if handler.applied_before(row, fields):
        record(body=kept, fields=fields, outcome=Notification.Outcome.DUPLICATE)
        return callback.answer_success()
    _apply_and_record(handler, row, fields, kept, received_at)
    return callback.answer_success()


@retry_on_lock_conflict
@transaction.atomic
def _apply_and_record(
    handler: Handler, row: Any, fields: dict, kept: bytes | str, received_at: dt.datetime | None = None
) -> str:
    """The handler's apply and the audit row, in one transaction (run once more after a lock
    conflict; the apply functions join it): a worker killed between the two cannot leave a paid
    order without the row of the notification that paid it, nor a row of a rolled-back payment.
    Returns the outcome recorded."""
    outcome = handler.apply(row, fields)
    Notification.record(kind=handler.callback.kind, body=kept, fields=fields, outcome=outcome, received_at=received_at)
    return outcome


def payment_notification_handle(body: bytes) -> bytes:
    """WeChat Pay's payment notification (an order's payment or a balance recharge); returns the
    XML answer. Checks: safe parse; signature over exactly the fields received;
    return_code / appid / mch_id / result_code; known out_trade_no; ``total_fee`` equal to what
    we asked for; then the payment (or recharge) is applied once. SUCCESS for applied, duplicate
    and late payments; FAIL for anything we could not trust or match (WeChat sends it again)."""
    return notification_handle(PAY_RESULT, body).body


def refund_notification_handle(body: bytes) -> bytes:
    """WeChat's refund notification: decrypt, match our refund and amount, confirm it once.

    Every notification is kept (admin: Notifications, kind refund) with what was done.
    """
    return notification_handle(REFUND_RESULT, body).body

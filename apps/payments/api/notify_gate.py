"""WeChat Pay's re-sent payment notifications answered before Django: an ASGI gate on
``POST /api/v1/payments/wechat/notify``.

WeChat delivers every payment result more than once; in a notification storm (``make bench``:
1,000 payments, each delivered 3 times) two deliveries in three are of a payment already
applied, and Django spends a whole request on each (a request thread, the middleware, the
payment's queries, an audit row) to answer SUCCESS and change nothing. :class:`NotifyGate`
wraps the HTTP application (``starmall/asgi.py``) and answers exactly those in the event loop,
after the checks Django makes and ONE Redis round trip; everything else goes to Django untouched.

It answers only where Django would answer the same, byte for byte
(``tests/payments/test_notify_gate.py`` compares the two):

- ``POST`` to exactly :data:`NOTIFY_PATH`, no query string, a Host Django allows, no HTTPS
  redirect due, an ``Accept`` DRF takes as it is, single plain headers, a ``Content-Length``
  equal to the body of at most :data:`MAX_BODY` bytes (``starmall.api.gate``);
- a body Django's own reader trusts: ``notifications.PAY_RESULT.read`` — defusedxml (no DTD,
  no entities), ``wechat.verify_signature`` over exactly the fields received, return_code /
  appid / mch_id / result_code / transaction_id — claimed by the "payment" handler (not a
  recharge's ``R...`` number, not a handler registered before it);
- the marker ``apps.payments.notify_duplicates`` wrote after the commit that paid this
  out_trade_no says: paid with this transaction_id, ``total_fee`` equal to this one as text.
  Django then finds the payment paid with that transaction_id and that amount and answers
  SUCCESS (outcome ``duplicate``): the gate sends the same bytes, status and headers.

The script that compares the marker also appends the delivery to the audit backlog, from which
beat writes its ``Notification`` row (outcome ``duplicate``): every notification still leaves
one row (``notify_duplicates.notify_duplicates_record``).

No marker (the first delivery, a payment not applied, a marker lost), another transaction_id or
amount, an unknown out_trade_no, a bad signature, malformed or oversized XML, a full backlog,
a Redis error or an answer slower than :data:`REDIS_TIMEOUT_SECONDS`: Django answers, as before.
What the gate does not do that Django would: look at the database, which for a duplicate of a
paid payment changes nothing (a paid payment stays paid with its transaction_id and amount).
"""

from __future__ import annotations

import logging
import time

from redis.exceptions import NoScriptError

from apps.payments import notifications, notify_duplicates
from apps.payments.api.views import MAX_NOTIFY_BYTES, wechat_notify
from starmall.api import gate

logger = logging.getLogger(__name__)

NOTIFY_PATH = "/api/v1/payments/wechat/notify"  # urls: "wechat-notify" (held equal by a test)
MAX_BODY = 8192  # bytes; WeChat's payment result is about 1 KB
REDIS_TIMEOUT_SECONDS = 0.25  # slower than this, Django answers (and meets Redis's trouble itself)
MAX_OUT_TRADE_NO = 32  # WeChat's limit; a longer one is not ours (Django: unknown out_trade_no)


def duplicate_candidate(body: bytes) -> dict[str, str] | None:
    """The fields of a payment notification Django would trust and give to the "payment"
    handler, or None (Django judges it). CPU only: the safe parse and the MD5/HMAC check."""
    try:
        fields, _kept = notifications.PAY_RESULT.read(body, {})
    except notifications.Untrusted:
        return None
    if notifications.handler_for(notifications.PAY_RESULT, fields) is not notifications.HANDLERS.get("payment"):
        return None  # a recharge (or another handler's): never marked
    if not 0 < len(fields.get("out_trade_no", "")) <= MAX_OUT_TRADE_NO or not fields.get("total_fee"):
        return None
    return fields


class NotifyGate(gate.RedisGate):
    """ASGI middleware: a re-sent payment notification already applied is answered SUCCESS
    from Redis; everything else is passed to ``app`` (Django behind a2wsgi) with its body."""

    paths = (NOTIFY_PATH,)
    label = "notify gate"
    logger = logger

    def __init__(self, app) -> None:
        super().__init__(app)
        self._drf_headers = gate.view_headers(wechat_notify.cls)  # this process's Allow, as Django sends it

    def body_limit(self) -> int:
        return min(MAX_BODY, MAX_NOTIFY_BYTES)

    def redis_timeout(self) -> float:
        return REDIS_TIMEOUT_SECONDS

    async def answer(self, scope, body: bytes) -> tuple[int, list, bytes] | None:
        """``(200, headers, SUCCESS)`` for a duplicate of an applied payment, or None: Django answers."""
        headers = gate.plain_headers(scope, body, self.body_limit())
        if headers is None:
            return None
        secure = gate.is_secure(scope, headers)
        if not gate.django_passes(headers, secure):
            return None
        fields = duplicate_candidate(body)
        if fields is None:
            return None
        keys = [notify_duplicates.applied_key(fields["out_trade_no"]), notify_duplicates.backlog_key()]
        args = [
            notify_duplicates.applied_value(fields["transaction_id"], fields["total_fee"]),
            notify_duplicates.backlog_entry(body, time.time()),
            notify_duplicates.BACKLOG_MAX,
        ]
        if await self._duplicate(keys, args) != 1:
            return None
        ack = notifications.PAY_RESULT.answer_success()  # what Django's view sends for a duplicate
        headers = gate.response_headers(ack.content_type.encode(), secure, len(ack.body), self._drf_headers)
        return ack.status, headers, ack.body

    async def _duplicate(self, keys: list[str], args: list) -> int | None:
        """``notify_duplicates.DUPLICATE``'s answer (1: a recorded duplicate), or None when Redis
        failed (one warning per interval). A Redis without the script (restarted) runs it by EVAL."""
        client = self.client()
        try:
            try:
                return await client.evalsha(notify_duplicates.DUPLICATE_SHA, len(keys), *keys, *args)
            except NoScriptError:
                return await client.eval(notify_duplicates.DUPLICATE, len(keys), *keys, *args)
        except Exception as exc:  # noqa: BLE001 - down, slow, refusing or pool full: Django answers
            self.warn("Redis unavailable", exc)
            return None

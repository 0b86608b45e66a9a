"""WeChat Pay's payment notifications answered before Django (``POST /api/v1/payments/wechat/notify``,
and Pay API v3's ``POST /api/v1/payments/wechat/v3/notify``).

WeChat delivers every result more than once (in a storm, two deliveries in three are copies). The gate,
:class:`PaymentNotifyGate`, answers a copy of an applied (or queued) result in the event loop after ONE Redis
script (which also appends it to the audit backlog beat writes as ``Notification`` rows), and queues a first
delivery of a pending payment of exactly that ``total_fee`` for the worker in one statement (``notify_queue``;
v3's with its signed headers). It trusts only what Django's readers (``notifications.PAY_RESULT``, ``PAY_RESULT_V3``)
trust, and answers only where Django would answer the same, byte for byte (v3: 204). The list and tests: docs/GATES.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg

from apps.payments import notifications, notify_duplicates, notify_queue, tasks
from apps.payments.api.views import MAX_NOTIFY_BYTES, wechat_notify, wechat_v3_notify
from starmall import dispatch
from starmall.gates import http, postgres, redis_batch

logger = logging.getLogger(__name__)

NOTIFY_PATH = "/api/v1/payments/wechat/notify"  # urls: "wechat-notify" (held equal by a test)
V3_NOTIFY_PATH = "/api/v1/payments/wechat/v3/notify"  # urls: "wechat-v3-notify" (held equal by a test)
# The headers a v3 result is signed in, as wechat_v3.signature_valid reads them.
V3_HEADERS = {
    name.lower().encode(): name
    for name in ("Wechatpay-Timestamp", "Wechatpay-Nonce", "Wechatpay-Signature", "Wechatpay-Serial")
}
MAX_BODY = 8192  # bytes; WeChat's payment result is about 1 KB
REDIS_TIMEOUT_SECONDS = 0.25  # slower than this, Django answers (and meets Redis's trouble itself)
MAX_OUT_TRADE_NO = 32  # WeChat's limit; a longer one is not ours (Django: unknown out_trade_no)
CONNECTION_WAIT_SECONDS = 1.0  # no free PostgreSQL connection by then: Django applies the result
# A first delivery queued wakes the worker at once when no wake-up went out in the last
# WAKE_SECONDS, else at the end of that interval, by ONE task for every row this process queued
# meanwhile: a lone payment is applied without delay, a storm costs ten pushes a second.
WAKE_SECONDS = 0.1
QUEUED, COPY = "queued", "copy"


def duplicate_candidate(body: bytes) -> dict[str, str] | None:
    """The fields of a payment notification Django would trust and give to the "payment"
    handler, or None (Django judges it). CPU only: the safe parse and the MD5/HMAC check."""
    try:
        fields, _kept = notifications.PAY_RESULT.read(body, {})
    except notifications.Untrusted:
        return None
    return fields if _payments(notifications.PAY_RESULT, fields) else None


def v3_candidate(body: bytes, scope) -> tuple[dict[str, str], str, dict[str, str]] | None:
    """A Pay API v3 payment result Django would trust and give to the "payment" handler:
    ``(fields, the audit row's text, the Wechatpay-* headers)``, or None (Django judges it). CPU
    only: ``PAY_RESULT_V3.read`` (RSA verification, AES-GCM decryption). A ``Wechatpay-*``
    header sent twice is Django's (a2wsgi joins the values)."""
    signed: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name in V3_HEADERS:
            if V3_HEADERS[name] in signed:
                return None
            signed[V3_HEADERS[name]] = value.decode("latin-1")  # as WSGI's environ holds it
    try:
        fields, kept = notifications.PAY_RESULT_V3.read(body, signed)
    except notifications.Untrusted:
        return None
    return (fields, kept, signed) if _payments(notifications.PAY_RESULT_V3, fields) else None


def _payments(callback: notifications.Callback, fields: dict[str, str]) -> bool:
    """True when the "payment" handler takes ``fields`` (never a recharge's) with an
    out_trade_no of WeChat's length and an amount."""
    if notifications.handler_for(callback, fields) is not notifications.HANDLERS.get("payment"):
        return False  # a recharge (or another handler's): never marked
    return 0 < len(fields.get("out_trade_no", "")) <= MAX_OUT_TRADE_NO and bool(fields.get("total_fee"))


class PaymentNotifyGate(http.RedisGate):
    """ASGI middleware: a re-sent payment notification already applied is answered SUCCESS
    from Redis (v3: 204), a first delivery queued; everything else is passed to ``app`` (Django
    behind a2wsgi) with its body."""

    paths = (NOTIFY_PATH, V3_NOTIFY_PATH)
    label = "notify gate"
    logger = logger

    def __init__(self, app) -> None:
        super().__init__(app)
        self._drf_headers = http.view_headers(wechat_notify.cls)  # this process's Allow, as Django sends it
        self._v3_drf_headers = http.view_headers(wechat_v3_notify.cls)
        self._database = postgres.Database("notify-gate", "NOTIFY_GATE_CONNECTIONS")  # first deliveries queued
        # First deliveries arriving together: one statement; a failed one warned as Redis's trouble is.
        self._accepts = postgres.BatchQueue(self._database, self._accept, warn=self.warn)
        # Copies read in one turn of the loop: their DUPLICATE (or COPY) scripts in one pipeline.
        self._duplicates = redis_batch.ScriptBatch(notify_duplicates.DUPLICATE, self.client, warn=self.warn)
        self._copies = redis_batch.ScriptBatch(notify_duplicates.COPY, self.client, warn=self.warn)
        self._later: set[asyncio.Future] = set()  # markers' writes and wake-ups, not waited for by WeChat
        self._wake: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None  # a wake-up due
        self._pushed_at = float("-inf")  # the last wake-up's loop time
        # The wake-ups' one thread, warmed at start: a Celery publish from a new thread first
        # loads its result backend (8 ms of CPU; 29 ms the process's first) in the middle of a storm.
        self._publisher = ThreadPoolExecutor(1, thread_name_prefix="broker-push")

    def body_limit(self) -> int:
        return min(MAX_BODY, MAX_NOTIFY_BYTES)

    def redis_timeout(self) -> float:
        return REDIS_TIMEOUT_SECONDS

    async def answer(self, scope, body: bytes) -> tuple[int, list, bytes] | None:
        """``(200, headers, SUCCESS)`` (v3: ``(204, headers, b"")``) for a copy of an applied or
        queued payment or a first delivery now queued, or None: Django answers."""
        headers = http.plain_headers(scope, body, self.body_limit())
        if headers is None:
            return None
        secure = http.is_secure(scope, headers)
        if not http.django_passes(headers, secure):
            return None
        if scope["path"] == V3_NOTIFY_PATH:
            trusted = v3_candidate(body, scope)
            callback, drf = notifications.PAY_RESULT_V3, self._v3_drf_headers
        else:
            fields = duplicate_candidate(body)
            trusted = None if fields is None else (fields, body, None)
            callback, drf = notifications.PAY_RESULT, self._drf_headers
        if trusted is None or not await self._hold(body, *trusted):
            return None
        ack = callback.answer_success()  # what Django's view sends for a duplicate
        headers = http.response_headers(ack.content_type.encode(), secure, len(ack.body), drf)
        return ack.status, headers, ack.body

    async def _hold(self, body: bytes, fields: dict[str, str], kept: bytes | str, signed: dict | None) -> bool:
        """True once the result is held as Django would hold it: a copy matching the applied or
        queued marker (recorded in the audit backlog as ``kept``, the text Django's audit row
        keeps), or a first delivery queued (its copy racing the row: recorded too)."""
        no = fields["out_trade_no"]
        kept = kept.encode() if isinstance(kept, str) else kept
        keys = [notify_duplicates.applied_key(no), notify_duplicates.backlog_key(), notify_duplicates.queued_key(no)]
        args = [
            notify_duplicates.applied_value(fields["transaction_id"], fields["total_fee"]),
            notify_duplicates.backlog_entry(kept, time.time()),
            notify_duplicates.BACKLOG_MAX,
        ]
        marked = await self._duplicates.call(keys, args)
        if marked == 0:  # no marker: a first delivery, or a copy racing its queued marker
            queued = await self._queue(fields, body, signed)
            return queued == QUEUED or (queued == COPY and await self._copy(kept) == 1)
        return marked == 1

    async def aclose(self) -> None:
        """Finish the pipelines and statements under way, push a wake-up still due, then close
        the worker's PostgreSQL pool and Redis client."""
        await self._duplicates.drain()
        await self._accepts.drain()
        await self._copies.drain()  # after the statements: a copy's COPY follows its statement
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(task for task in self._later if task.get_loop() is loop), return_exceptions=True)
        if self._wake is not None and self._wake[0] is asyncio.get_running_loop():
            self._wake[1].cancel()
            await self._push()
        await super().aclose()

    async def _queue(self, fields: dict[str, str], body: bytes, signed: dict[str, str] | None) -> str | None:
        """Queue a first delivery (``notify_queue.ACCEPT``, with the others arriving meanwhile):
        :data:`QUEUED` (committed; the worker's wake-up due, the sweep's if that is lost),
        :data:`COPY` (the same result is queued already) or None (no pool, no qualifying
        payment, a database error or no connection within :data:`CONNECTION_WAIT_SECONDS`:
        Django)."""
        item = notify_queue.accept_item(fields, body, signed)
        if item is None:
            return None
        answer = await self._accepts.submit(item, CONNECTION_WAIT_SECONDS)
        if answer is None:
            return None
        queued_id, qualified = answer
        if queued_id is not None:
            self._wake_worker()
            return QUEUED
        return COPY if qualified else None

    def _wake_worker(self) -> None:
        """Push ``notifications_queued_drain`` now, or :data:`WAKE_SECONDS` after the last push
        when that was more recent; nothing when a push is already due in this loop. Every row
        committed before a push is in its drain's reach."""
        loop = asyncio.get_running_loop()
        if self._wake is None or self._wake[0] is not loop:
            delay = max(0.0, self._pushed_at + WAKE_SECONDS - loop.time())
            self._wake = (loop, loop.call_later(delay, self._push))

    def _push(self) -> asyncio.Future:
        """The wake-up, on the wake-ups' thread (a broker publish is blocking I/O); not awaited
        by the timer but by :meth:`aclose`: a failed push leaves the rows to the sweep."""
        self._wake = None
        self._pushed_at = asyncio.get_running_loop().time()
        pushed = asyncio.get_running_loop().run_in_executor(
            self._publisher, dispatch.push, tasks.notifications_queued_drain
        )
        self._later.add(pushed)
        pushed.add_done_callback(self._later.discard)
        return pushed

    async def warm(self) -> None:
        """The Redis and PostgreSQL connections (``RedisGate.warm``), then the wake-ups' thread."""
        await super().warm()
        await asyncio.get_running_loop().run_in_executor(self._publisher, dispatch.warm)

    async def _accept(self, conn: psycopg.AsyncConnection, items: list[tuple[str, ...]]) -> list[tuple]:
        """Run ``notify_queue.ACCEPT`` for ``items`` on ``conn`` (autocommit: committed when it
        returns); ``(queued row id or None, qualified)`` per item, in order. Bound client-side,
        one simple query message: nothing prepared that a transaction-pooling PgBouncer could
        hand to another server connection. The rows it queued get their queued markers
        (:meth:`_remember_queued`) after the answers, not before."""
        cursor = psycopg.AsyncClientCursor(conn)
        await cursor.execute(*notify_queue.accept_statement(items))
        rows = await cursor.fetchall()
        markers = [
            (no, txn, notify_duplicates.applied_value(txn, fee))
            for (no, txn, fee, *_body), (queued_id, _qualified) in zip(items, rows, strict=False)
            if queued_id is not None
        ]
        if markers:
            task = asyncio.get_running_loop().create_task(self._remember_queued(markers))
            self._later.add(task)
            task.add_done_callback(self._later.discard)
        return rows

    async def _remember_queued(self, markers: list[tuple[str, str, str]]) -> None:
        """Store the queued markers of rows just committed ((out_trade_no, transaction_id,
        marker) each; ``notify_duplicates.REMEMBER``, which leaves out a result the apply has
        refused already), in one round trip: from then on their copies are answered by the
        DUPLICATE script. A Redis failure only sends the copies to the queue's statement
        (:data:`COPY`)."""
        try:
            async with self.client().pipeline(transaction=False) as pipe:
                for no, txn, value in markers:
                    keys = (notify_duplicates.queued_key(no), notify_duplicates.refused_key(no))
                    pipe.eval(notify_duplicates.REMEMBER, 2, *keys, value, txn, notify_duplicates.QUEUED_TTL_SECONDS)
                await pipe.execute()
        except Exception as exc:  # noqa: BLE001 - the rows are committed: SUCCESS all the same
            self.warn("Redis unavailable", exc)

    async def _copy(self, body: bytes) -> int | None:
        """``notify_duplicates.COPY``'s answer (1: recorded ``body``, the audit row's text), or
        None when Redis failed."""
        entry = notify_duplicates.backlog_entry(body, time.time())
        return await self._copies.call([notify_duplicates.backlog_key()], [entry, notify_duplicates.BACKLOG_MAX])

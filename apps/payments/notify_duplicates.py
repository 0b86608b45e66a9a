"""Re-sent payment notifications answered before Django (docs/GATES.md "PaymentNotifyGate"): the
markers in Redis, the gate's one script, and the audit rows of the duplicates it answered.

After the commit that marks a WeChat payment paid, :func:`applied_remember` stores its applied
marker (:func:`applied_key`, ``["<transaction_id>", "<total_fee>"]``); the gate stores the same
value as the queued marker (:func:`queued_key`) once it has queued a first delivery
(``notify_queue``). A signed copy matching either is one Django would answer SUCCESS and record
as ``duplicate``: :data:`DUPLICATE` answers it in one round trip and appends it to a backlog whose
``Notification`` rows beat writes (:func:`notify_duplicates_record`). No marker: Django answers.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from functools import partial

from django.db import transaction
from django.utils import timezone

from apps.payments import wechat
from apps.payments.models import Notification
from starmall import cache_client
from starmall.cache_client import redis_client

logger = logging.getLogger(__name__)

# WeChat re-sends an unanswered notification for about 24 hours (15 s ... 6 h apart), and may
# send a copy later still: three days covers them with room.
APPLIED_TTL_SECONDS = 3 * 24 * 3600
# The queued marker (the gate's, after it queued a first delivery) needs to outlive the wait for
# the worker only; a row still queued after this is stuck and alerted on (notify_queue).
QUEUED_TTL_SECONDS = 3600
BACKLOG_MAX = 20_000  # entries of about 1 KB; past it the gate leaves duplicates to Django
FLUSH_BATCH = 500  # rows per INSERT
FLUSH_MAX_BATCHES = 200  # per run: a run ends even while a storm keeps filling the backlog
PAUSE_SECONDS = 5.0  # after a failed marker write this process tries again no sooner
_paused_until = 0.0  # time.monotonic(); per process, as starmall.dispatch

# KEYS: the out_trade_no's applied marker, the backlog, its queued marker. ARGV: the marker the
# notification must match, the backlog entry, BACKLOG_MAX. 1: either marker matched and the
# delivery is recorded; 0: no match; -1: backlog full (Django answers and writes its own row, so a
# stopped beat never turns into lost audit rows).
DUPLICATE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] and redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[3]) then return -1 end
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1
"""

# A copy of a result still queued for the worker (apps/payments/notify_queue.py) that met no
# queued marker (Redis failed at its write, or the copy raced it): recorded all the same.
# KEYS: the backlog. ARGV: the entry, BACKLOG_MAX. 1: recorded; -1: full.
COPY = """
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
redis.call('RPUSH', KEYS[1], ARGV[1])
return 1
"""

# The queued marker written (the gate, after the row's commit) and forgotten (the apply refused
# the row, after its commit), in whichever order they reach Redis: the refusal wins.
# REMEMBER  KEYS: queued marker, refusal. ARGV: the marker, its transaction_id, the TTL (s).
# FORGET    KEYS: queued marker, refusal. ARGV: the refused transaction_id, the TTL (s).
REMEMBER = """
if redis.call('GET', KEYS[2]) == ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', tonumber(ARGV[3]))
return 1
"""
FORGET = """
redis.call('SET', KEYS[2], ARGV[1], 'EX', tonumber(ARGV[2]))
redis.call('DEL', KEYS[1])
return 1
"""

# KEYS: the backlog. ARGV: how many. Takes (returns and removes) up to that many oldest entries
# at once, so two runs of the flush never take the same entry.
_TAKE = """
local entries = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #entries > 0 then redis.call('LTRIM', KEYS[1], #entries, -1) end
return entries
"""


def applied_key(out_trade_no: str) -> str:
    """The marker's key for ``out_trade_no``, with the cache's KEY_PREFIX."""
    return cache_client.make_key(f"payments:notify:applied:{out_trade_no}")


def queued_key(out_trade_no: str) -> str:
    """The key of the marker that a result for ``out_trade_no`` waits in the notify queue."""
    return cache_client.make_key(f"payments:notify:queued:{out_trade_no}")


def refused_key(out_trade_no: str) -> str:
    """The transaction_id of ``out_trade_no``'s queued result the apply refused (:data:`FORGET`)."""
    return cache_client.make_key(f"payments:notify:refused:{out_trade_no}")


def backlog_key() -> str:
    """The list of duplicates the gate answered whose audit rows are not written yet."""
    return cache_client.make_key("payments:notify:duplicates")


def applied_value(transaction_id: str, total_fee: str) -> str:
    """The marker's value: WeChat's number and the amount in fen as text, unambiguous (JSON)."""
    return json.dumps([transaction_id, total_fee])


def backlog_entry(body: bytes, received_at: float) -> bytes:
    """One backlog entry: the epoch seconds the gate answered at, a newline, the raw body."""
    return b"%.6f\n" % received_at + body


def applied_remember_on_commit(*, out_trade_no: str, transaction_id: str, total_fee: int) -> None:
    """After the current transaction commits, :func:`applied_remember` (nothing on a rollback).

    Called by ``services.payment_apply_paid`` in the transaction that marks the payment paid;
    ``total_fee`` in fen.
    """
    transaction.on_commit(
        partial(applied_remember, out_trade_no=out_trade_no, transaction_id=transaction_id, total_fee=total_fee)
    )


def applied_remember(*, out_trade_no: str, transaction_id: str, total_fee: int) -> bool:
    """Store the marker that ``out_trade_no`` was paid with ``transaction_id`` and ``total_fee``
    fen. False when Redis failed (one warning, then no try for :data:`PAUSE_SECONDS`): the
    notification's re-sent copies then go to Django, which answers them as before.

    Sound because a paid payment never changes status, transaction_id or ``total_fee`` again; the
    amount is the text Django compares (``total_fee == str(payment.total_fee)``). A database
    restored to before the payment must lose the markers too (docs/DEPLOY.md, backups)."""
    global _paused_until
    if time.monotonic() < _paused_until:
        return False
    try:
        redis_client().set(
            applied_key(out_trade_no), applied_value(transaction_id, str(total_fee)), ex=APPLIED_TTL_SECONDS
        )
    except Exception:  # noqa: BLE001 - an optimisation: Django still answers every copy
        _paused_until = time.monotonic() + PAUSE_SECONDS
        logger.warning("could not mark %s applied for the notify gate", out_trade_no, exc_info=True)
        return False
    return True


def queued_forget_on_commit(out_trade_no: str, transaction_id: str) -> None:
    """After the current transaction commits, :data:`FORGET` ``out_trade_no``'s queued marker:
    the result with ``transaction_id`` was refused at the apply, and later copies must be judged
    by Django again. The refusal is remembered (:func:`refused_key`) so that the gate's marker
    write, when it comes after this (a worker elsewhere refused the row before the gate's loop
    ran its write), does not bring the marker back. A failure is logged only: the marker then
    expires after :data:`QUEUED_TTL_SECONDS`."""

    def forget() -> None:
        try:
            redis_client().eval(
                FORGET, 2, queued_key(out_trade_no), refused_key(out_trade_no), transaction_id, QUEUED_TTL_SECONDS
            )
        except Exception:  # noqa: BLE001 - the copies it lets through were answered SUCCESS by the queue already
            logger.warning("could not forget the queued marker of %s", out_trade_no, exc_info=True)

    transaction.on_commit(forget)


def resume() -> None:
    """Forget an earlier marker failure (tests, or once Redis is known to be back)."""
    global _paused_until
    _paused_until = 0.0


def notify_duplicates_record() -> int:
    """Beat: write the audit rows of the duplicates the gate answered; returns the rows written.

    Batches of :data:`FLUSH_BATCH`, each taken from Redis atomically and inserted in one
    transaction; a batch the database refused goes back to the front of the backlog and the
    error propagates (the next run tries again). Safe to run twice, also at once. Until written,
    a duplicate's row is only in Redis: a Redis that loses its data loses those rows (never a
    payment), as does a worker killed between taking a batch and its commit. A Redis answer that
    times out after the script ran sends the delivery to Django too: two rows for one delivery.
    """
    conn = redis_client()
    take = conn.register_script(_TAKE)
    written = 0
    for _ in range(FLUSH_MAX_BATCHES):
        entries = take(keys=[backlog_key()], args=[FLUSH_BATCH])
        if not entries:
            break
        try:
            _insert(entries)
        except BaseException:
            conn.lpush(backlog_key(), *reversed(entries))
            raise
        written += len(entries)
    return written


def _entry_fields(body: bytes) -> dict:
    """The fields an audit row takes from a backlog entry's body (verified by the gate before
    it answered): a v2 result's XML fields, or a v3 result's decrypted resource (JSON) as
    ``notifications.PAY_RESULT_V3`` reads it (``total_fee`` = ``amount.total``); {} for neither."""
    if body.startswith(b"{"):
        try:
            resource = json.loads(body)
        except ValueError:
            return {}
        amount = resource.get("amount") if isinstance(resource, dict) else None
        if not isinstance(amount, dict):
            return {}
        fields = {key: str(resource.get(key) or "") for key in ("out_trade_no", "transaction_id")}
        return {**fields, "total_fee": str(amount.get("total", ""))}
    try:
        return wechat.parse_xml(body)
    except ValueError:
        return {}


@transaction.atomic
def _insert(entries: list[bytes]) -> None:
    """One batch's rows, ``received_at`` the time the gate answered (not the time of the flush)."""
    rows = []
    for entry in entries:
        stamp, _, body = entry.partition(b"\n")
        fields = _entry_fields(body)
        try:
            received_at = dt.datetime.fromtimestamp(float(stamp), tz=dt.UTC)
        except (ValueError, OverflowError, OSError):  # not the gate's entry: never block the backlog on it
            received_at = timezone.now()
        rows.append(
            Notification.build(
                kind=Notification.Kind.PAYMENT,
                body=body,
                fields=fields,
                outcome=Notification.Outcome.DUPLICATE,
                received_at=received_at,
            )
        )
    Notification.objects.bulk_create(rows)

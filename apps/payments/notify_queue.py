"""A payment result's first delivery queued by the notify gate and applied by a worker.

WeChat asks only that the merchant answer SUCCESS once it holds the result safely. The gate
(``starmall.gates.payment_notify``; docs/GATES.md) trusts a first delivery as Django does, then
:data:`ACCEPT` commits it as a :class:`QueuedNotification` only when Django would apply it (a
pending WeChat payment with exactly that ``total_fee``, its transaction_id paying no other);
anything else goes to Django. Woken after the commit, a worker applies the rows
(:func:`queued_drain`; beat's :func:`queued_sweep` after a lost wake-up): the order turns paid
then; until then ``GET /api/v1/orders/{order_no}/pay-status`` asks WeChat itself.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

from django.db import transaction
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_raise
from apps.orders.models import PayMethod
from apps.payments import notifications, notify_duplicates, wechat_v3
from apps.payments.models import Payment, PaymentStatus, QueuedNotification
from starmall.locking import retry_on_lock_conflict

logger = logging.getLogger(__name__)

SWEEP_AFTER_SECONDS = 10  # a row this old was not applied by its wake-up: the sweep applies it
STUCK_AFTER_SECONDS = 300  # a row still queued this long raises an alert (the worker is down or failing)
MAX_TRANSACTION_ID = QueuedNotification._meta.get_field("transaction_id").max_length
DRAIN_MAX = 5000  # rows per drain or sweep run: a run ends even while a storm keeps queuing

_QUEUED = QueuedNotification._meta.db_table
_PAYMENT = Payment._meta.db_table

# ONE statement (its own transaction) for a batch of results (the gate's first deliveries that
# arrived together, starmall.gates.postgres.BatchQueue): for each, the pending payment with exactly its
# amount, its row queued unless the same result is queued already — by an earlier statement or
# by an earlier item of this batch (the copies that raced the queued marker: one row, the
# others are copies). Answers, one row per item in order: (queued row id or NULL, whether the
# payment qualified).
ACCEPT = f"""
WITH item AS (
    SELECT * FROM unnest(
        %(out_trade_no)s::text[], %(transaction_id)s::text[], %(total_fee)s::text[], %(body)s::text[],
        %(headers)s::text[]
    ) WITH ORDINALITY AS item(out_trade_no, transaction_id, total_fee, body, headers, n)
), qualified AS (
    SELECT item.* FROM item
    WHERE EXISTS (
        SELECT 1 FROM {_PAYMENT} payment
        WHERE payment.out_trade_no = item.out_trade_no AND payment.method = %(method)s
          AND payment.status = %(pending)s AND payment.total_fee::text = item.total_fee
    )
      -- Django cannot pay it with a transaction_id that pays another payment (UNIQUE): its own
      -- request fails and WeChat sends it again; never SUCCESS for a row no worker can apply.
      AND NOT EXISTS (SELECT 1 FROM {_PAYMENT} payment WHERE payment.transaction_id = item.transaction_id)
), first AS (
    SELECT DISTINCT ON (out_trade_no, transaction_id) * FROM qualified ORDER BY out_trade_no, transaction_id, n
), queued AS (
    INSERT INTO {_QUEUED} (out_trade_no, transaction_id, body, headers, received_at)
    SELECT out_trade_no, transaction_id, body, headers::jsonb, now() FROM first ORDER BY n
    ON CONFLICT (out_trade_no, transaction_id) DO NOTHING
    RETURNING id, out_trade_no, transaction_id
)
SELECT queued.id, qualified.n IS NOT NULL
FROM item
LEFT JOIN qualified ON qualified.n = item.n
LEFT JOIN first ON first.n = item.n
LEFT JOIN queued ON first.n IS NOT NULL
    AND (queued.out_trade_no, queued.transaction_id) = (item.out_trade_no, item.transaction_id)
ORDER BY item.n
"""


def accept_item(
    fields: dict[str, str], body: bytes, headers: dict[str, str] | None = None
) -> tuple[str, str, str, str, str] | None:
    """What :data:`ACCEPT` takes of one trusted payment result (``fields`` as
    ``PAY_RESULT.read`` or ``PAY_RESULT_V3.read`` return them; ``body`` the raw XML or v3 JSON;
    ``headers`` a v3 result's ``Wechatpay-*`` headers, None for v2): (out_trade_no,
    transaction_id, total_fee, the body as text, the headers as JSON text); None when the body
    is not UTF-8 text PostgreSQL can keep, or the transaction_id is longer than WeChat's (and
    the column's) 32 characters: Django answers it, and the statement it would have failed
    still carries the others."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\x00" in text or len(fields["transaction_id"]) > MAX_TRANSACTION_ID:
        return None
    return fields["out_trade_no"], fields["transaction_id"], fields["total_fee"], text, json.dumps(headers or {})


def accept_statement(items: list[tuple[str, ...]]) -> tuple[str, dict]:
    """:data:`ACCEPT` and its parameters for ``items`` (:func:`accept_item`'s, at least one)."""
    out_trade_no, transaction_id, total_fee, body, headers = (list(column) for column in zip(*items, strict=True))
    return ACCEPT, {
        "out_trade_no": out_trade_no,
        "transaction_id": transaction_id,
        "total_fee": total_fee,
        "body": body,
        "headers": headers,
        "method": PayMethod.WECHAT.value,
        "pending": PaymentStatus.PENDING.value,
    }


def queued_drain(received_before: dt.datetime | None = None, limit: int = DRAIN_MAX) -> int:
    """Apply queued results one at a time, oldest first, until none is left (or, with
    ``received_before``, none that old), at most ``limit``; returns how many this call applied.
    Each row is its own transaction, claimed with SKIP LOCKED: drains running at once on several
    workers or machines share the rows, never apply one twice. A row whose apply raises is
    rolled back, logged and left for the next sweep; the drain goes on with the others (one bad
    row never holds the queue)."""
    applied, failed = 0, []
    while applied + len(failed) < limit:
        taken: list[int] = []
        try:
            row_id = _apply_next(received_before, failed, taken)
        except Exception:  # noqa: BLE001 - rolled back whole; the sweep tries it again, the alert says so
            if not taken:  # failed before it took a row (the database itself): nothing to skip
                raise
            # The row this call took, not looked up again: once rolled back it is free, and
            # another drain may hold it by now.
            failed.append(taken[-1])
            logger.exception("queued payment result %s could not be applied; left for the sweep", taken[-1])
            continue
        if row_id is None:
            break
        applied += 1
    return applied


def queued_sweep(now: dt.datetime | None = None) -> int:
    """Beat: apply queued results older than :data:`SWEEP_AFTER_SECONDS` (their wake-up was
    lost: Redis down at the push, a worker killed); returns how many this run applied. A row
    still there :data:`STUCK_AFTER_SECONDS` after it arrived raises one alert (staff: the
    payment was answered SUCCESS and is not applied)."""
    now = now or timezone.now()
    applied = queued_drain(now - dt.timedelta(seconds=SWEEP_AFTER_SECONDS))
    stuck = (
        QueuedNotification.objects.filter(received_at__lte=now - dt.timedelta(seconds=STUCK_AFTER_SECONDS))
        .order_by("received_at", "pk")
        .first()
    )
    if stuck is not None:
        alert_raise(
            key=f"notification:queued:{stuck.out_trade_no}:{stuck.transaction_id}:stuck",
            kind=Alert.Kind.PAYMENT_MANUAL,
            title=f"支付通知未能处理：{stuck.out_trade_no}",
            text=(
                f"微信支付结果（商户订单号 {stuck.out_trade_no}，微信支付单号 {stuck.transaction_id}）"
                f"已于 {timezone.localtime(stuck.received_at):%Y-%m-%d %H:%M:%S} 收到并应答成功，"
                "但一直未能入账。请查看 worker 日志，以及后台「待处理的支付通知」。"
            ),
        )
    return applied


@retry_on_lock_conflict
@transaction.atomic
def _apply_next(received_before: dt.datetime | None, skip: list[int], taken: list[int]) -> int | None:
    """The id of the row this call applied, or None when no row is left to take. The id of the
    row it takes is appended to ``taken`` first: the caller's to skip when the apply raises."""
    row = _next(received_before, skip).select_for_update(skip_locked=True).first()
    if row is None:
        return None
    row_id = row.pk  # delete() clears it
    taken.append(row_id)
    _apply(row)
    return row_id


def _next(received_before: dt.datetime | None, skip: list[int]):
    rows = QueuedNotification.objects.exclude(pk__in=skip).order_by("received_at", "pk")
    return rows if received_before is None else rows.filter(received_at__lte=received_before)


def _apply(row: QueuedNotification) -> None:
    """``notification_handle`` on the row's body, then the row deleted, in the caller's
    transaction. The row is locked first but never waited for (SKIP LOCKED; the gate's INSERT
    ... ON CONFLICT DO NOTHING takes no row lock): outside starmall.locking's order."""
    # A Pay API v3 result was queued with its four Wechatpay-* headers; a v2 one has none.
    callback = notifications.PAY_RESULT_V3 if row.headers else notifications.PAY_RESULT
    # A v3 result's timestamp is judged at its arrival, as the gate judged it: a row the sweep
    # applies minutes later is still WeChat's.
    with wechat_v3.judged_at(row.received_at.timestamp()):
        answer = notifications.notification_handle(
            callback, row.body.encode("utf-8"), row.headers, received_at=row.received_at
        )
    if answer != callback.answer_success():
        # Changed since the gate accepted it (e.g. the amount): WeChat already heard SUCCESS and
        # will not send it again, so staff must look (the audit row says what Django refused).
        logger.error(
            "queued payment result %s %s was not applied: %r", row.out_trade_no, row.transaction_id, answer.body
        )
        alert_raise(
            key=f"notification:queued:{row.out_trade_no}:{row.transaction_id}:refused",
            kind=Alert.Kind.PAYMENT_MANUAL,
            title=f"支付通知未能入账：{row.out_trade_no}",
            text=(
                f"微信支付结果（商户订单号 {row.out_trade_no}，微信支付单号 {row.transaction_id}）已应答成功，"
                "但处理时订单或金额已变化，未能入账。请在后台「微信通知」查看该通知，并与微信支付核对。"
            ),
        )
        notify_duplicates.queued_forget_on_commit(row.out_trade_no, row.transaction_id)  # its copies: Django's again
    row.delete()

"""Batch refunds (the original CRMEB system's refund queue): staff name many orders and one
reason; each order is refunded in full by its own Celery task through the customer's own path.

:func:`refund_batch_create` records a :class:`~apps.payments.models.RefundBatch` and one
:class:`~apps.payments.models.RefundBatchItem` per order, ``queued`` or ``skipped`` with the
reason in Chinese. The items are the outbox: their tasks are pushed after commit, and beat's
:func:`refund_batches_sweep` pushes the still queued ones again, so nothing is lost while Redis
is down. Each task (:func:`refund_batch_item_run`) has its own transaction: one order's failure
never touches another's. The item then follows its Refund (``RefundBatchItem.follow_refund``).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from functools import partial

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_on_failure
from apps.orders import services as orders
from apps.orders.models import AfterSale, Order
from apps.payments import refunds
from apps.payments.models import Payment, Refund, RefundBatch, RefundBatchItem
from starmall import dispatch
from starmall.errors import InvalidInput, InvalidState, ShopError

logger = logging.getLogger(__name__)

PERMISSION = "payments.batch_refund"
MAX_ORDERS = 500  # order numbers in one batch
LEASE = dt.timedelta(minutes=2)  # a claimed item is tried again after this if its worker died
_SEPARATORS = re.compile(r"[\s,，、;；]+")  # between pasted order numbers: lines, spaces, commas

Item = RefundBatchItem


def parse_order_nos(text: str) -> list[str]:
    """Pasted text -> order numbers, one per line or separated by spaces or commas (also
    Chinese ones), in the order given, each once."""
    return list(dict.fromkeys(no for no in _SEPARATORS.split(text or "") if no))


def refusal(order: Order, payment: Payment | None) -> str | None:
    """Why ``order`` cannot be refunded in full by a batch now (Chinese, shown per order), or
    None. The same checks run when the batch is created and again when its task runs."""
    if order.status not in refunds.REFUNDABLE_ORDER:
        return f"订单状态为「{order.get_status_display()}」，只有已支付、已发货或已完成的订单可以退款"
    if payment is None or payment.total_fee <= payment.refunded_fen:
        return "没有可退款的金额"
    open_request = order.after_sales.filter(status__in=AfterSale.OPEN).first()
    if open_request is not None:
        return f"已有处理中的退款申请 {open_request.refund_no}（{open_request.get_status_display()}），请在「退款申请」中处理"
    return None


def refund_batch_preview(orders: list[Order]) -> list[dict]:
    """For the confirmation page: per order ``{"order", "refundable_fen", "refusal"}`` (what a
    batch would do now; the batch checks again)."""
    rows = []
    for order in orders:
        payment = refunds.paying_payment(order)
        rows.append(
            {
                "order": order,
                "refusal": refusal(order, payment),
                "refundable_fen": payment.total_fee - payment.refunded_fen if payment else 0,
            }
        )
    return rows


def refund_batch_create(*, order_nos: list[str], reason: str, user) -> RefundBatch:
    """Staff (permission ``payments.batch_refund``, checked here) refund the orders
    ``order_nos`` in full, giving ``reason`` (<= 200 characters; the customer sees it as the
    refund request's reason).

    One transaction: the batch, then one item per distinct order number: ``queued``, or
    ``skipped`` with the reason in Chinese (no such order, :func:`refusal`, or already queued with
    the same reason: UNIQUE (order, reason) among the items not skipped). The queued items' tasks
    are pushed after commit. Raises PermissionDenied, InvalidInput (no reason, no order number,
    more than MAX_ORDERS).
    """
    if not user.has_perm(PERMISSION):
        raise PermissionDenied(f"needs permission {PERMISSION}")
    reason = (reason or "").strip()
    if not reason or len(reason) > 200:
        raise InvalidInput("请填写退款原因（最多 200 字）。", reason=["必填，最多 200 字"])
    nos = list(dict.fromkeys(no.strip() for no in order_nos if no and no.strip()))
    if not nos or len(nos) > MAX_ORDERS:
        raise InvalidInput(f"请填写 1 到 {MAX_ORDERS} 个订单号。", order_nos=[f"共 {len(nos)} 个"])
    now = timezone.now()
    with transaction.atomic():
        batch = RefundBatch.objects.create(created_by=user, reason=reason)
        known = {order.order_no: order for order in Order.objects.filter(order_no__in=nos)}
        queued, skipped = [], []
        for no in nos:
            order = known.get(no)
            item = Item(batch=batch, order_no=no[:32], order=order, reason=reason, next_attempt_at=now)
            payment = refunds.paying_payment(order) if order else None
            why = "没有这个订单号" if order is None else refusal(order, payment)
            if why:
                item.status, item.note, item.finished_at = Item.Status.SKIPPED, why, now
                skipped.append(item)
            else:
                item.amount_fen = payment.total_fee - payment.refunded_fen
                queued.append(item)
        # ON CONFLICT DO NOTHING: an order already queued with this reason — by an earlier batch,
        # or by one committing right now (PostgreSQL waits for it) — keeps that item; ours is
        # not inserted and is recorded as skipped below. In order id order, so two batches
        # naming the same orders in different orders wait for each other instead of deadlocking.
        queued.sort(key=lambda item: item.order_id)
        Item.objects.bulk_create(queued, ignore_conflicts=True)
        inserted = set(Item.objects.filter(batch=batch).values_list("order_id", flat=True))
        for item in queued:
            if item.order_id not in inserted:
                skipped.append(_already_queued(item, now))
        Item.objects.bulk_create(skipped)
        ids = list(Item.objects.filter(batch=batch, status=Item.Status.QUEUED).values_list("pk", flat=True))
        transaction.on_commit(partial(_push_items, ids))
    logger.info(
        "refund batch %s by %s: %s queued, %s skipped", batch.pk, user.get_username(), len(ids), len(nos) - len(ids)
    )
    return batch


def _already_queued(item: RefundBatchItem, now: dt.datetime) -> RefundBatchItem:
    other = Item.objects.filter(order_id=item.order_id, reason=item.reason).exclude(status=Item.Status.SKIPPED).first()
    where = f"批次 #{other.batch_id}（{other.get_status_display()}）" if other else "另一批次"
    item.pk, item.status, item.amount_fen, item.finished_at = None, Item.Status.SKIPPED, 0, now
    item.note = f"已在{where}中以同一原因退款，未重复添加"
    return item


def _push_items(item_ids: list[int], *, sweep: bool = False) -> None:
    from apps.payments.tasks import refund_batch_item_run  # tasks import this module

    for item_id in item_ids:
        dispatch.push(refund_batch_item_run, item_id, sweep=sweep)


class _Raced(Exception):
    """Another worker moved the item first: roll back what this one did."""


def refund_batch_item_run(*, item_id: int, now: dt.datetime | None = None) -> str:
    """One try at an item's refund; returns the item's status afterwards. Safe to run twice,
    or twice at once.

    In one transaction, under the order's row lock: the checks of :func:`refusal` again (the
    order may have changed: -> ``skipped``), the refund request for everything still refundable,
    its approval (-> the Refund, dispatched after commit) and ``queued -> refunding``. A
    ShopError from the services -> ``failed`` with its message; any other error -> retried after
    ``RefundBatchItem.BACKOFF_SECONDS``, ``failed`` after ``MAX_ATTEMPTS`` tries.
    """
    now = now or timezone.now()
    # Claim: queued and due -> attempts + 1, and due again only after LEASE (its worker died).
    if (
        Item.objects.filter(pk=item_id, status=Item.Status.QUEUED, next_attempt_at__lte=now).update(
            attempts=F("attempts") + 1, next_attempt_at=now + LEASE
        )
        != 1
    ):
        return Item.objects.filter(pk=item_id).values_list("status", flat=True).first() or "missing"
    item = Item.objects.select_related("batch__created_by").get(pk=item_id)
    try:
        with transaction.atomic():
            return _refund(item, now)
    except _Raced:
        return Item.objects.filter(pk=item_id).values_list("status", flat=True).get()
    except ShopError as exc:  # a refusal: the same answer next time
        return _finish(item, Item.Status.FAILED, f"未退款：{exc.message}", now)
    except Exception as exc:  # noqa: BLE001 - isolated to this item; retried with back-off
        return _attempt_failed(item, f"{type(exc).__name__}: {exc}", now)


def _refund(item: RefundBatchItem, now: dt.datetime) -> str:
    """The transaction of :func:`refund_batch_item_run` (caller holds it)."""
    # The order's row lock (refund_request takes it too): a customer's request or a shipment
    # at this moment waits, so the checks below stay true until commit. Then the item's own
    # row, written last below: both are steps 1 and 2 of starmall/locking.py, before the
    # approval reaches the customer's row (5).
    order = orders.order_lock(order_id=item.order_id)
    Item.objects.select_for_update().filter(pk=item.pk).values_list("pk", flat=True).first()
    why = refusal(order, refunds.paying_payment(order))
    if why:
        if (
            Item.objects.filter(pk=item.pk, status=Item.Status.QUEUED).update(
                status=Item.Status.SKIPPED, note=f"{why}（创建批次后订单已变化）", finished_at=now
            )
            != 1
        ):
            raise _Raced
        return Item.Status.SKIPPED
    earlier = set(order.after_sales.values_list("pk", flat=True))
    sale = refunds.refund_request(order_no=order.order_no, customer_id=order.customer_id, reason=item.reason)
    if sale.pk in earlier:  # refund_request's replay of a closed request with this reason (none is open)
        raise InvalidState(
            f"24 小时内已有同一原因的退款申请 {sale.refund_no}（{sale.get_status_display()}），请换一个原因再试"
        )
    actor = f"staff:{item.batch.created_by.get_username()}"[:50] + f" 批量#{item.batch_id}"
    refund = None
    if sale.status == AfterSale.Status.REQUESTED:
        refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor=actor)
    refund = refund or Refund.objects.filter(after_sale=sale).first()  # approved by the shop's auto rule
    if refund is None:
        sale.refresh_from_db(fields=["status"])
        raise InvalidState(f"退款申请 {sale.refund_no} 状态为「{sale.get_status_display()}」，未能同意")
    if (
        Item.objects.filter(pk=item.pk, status=Item.Status.QUEUED).update(
            status=Item.Status.REFUNDING,
            after_sale=sale,
            refund=refund,
            amount_fen=refund.refund_fen,
            note="",
            next_attempt_at=None,
        )
        != 1
    ):
        raise _Raced
    return Item.Status.REFUNDING


def _attempt_failed(item: RefundBatchItem, error: str, now: dt.datetime) -> str:
    if item.attempts < Item.MAX_ATTEMPTS:
        wait = Item.BACKOFF_SECONDS[item.attempts - 1]
        Item.objects.filter(pk=item.pk, status=Item.Status.QUEUED).update(
            next_attempt_at=now + dt.timedelta(seconds=wait),
            note=f"第 {item.attempts} 次尝试失败，{wait} 秒后重试：{error}"[:2000],
        )
        logger.warning(
            "refund batch item %s (%s) attempt %s failed, retry in %ss: %s",
            item.pk,
            item.order_no,
            item.attempts,
            wait,
            error,
        )
        return Item.Status.QUEUED
    return _finish(item, Item.Status.FAILED, f"尝试 {item.attempts} 次仍失败：{error}", now)


def _finish(item: RefundBatchItem, status: str, note: str, now: dt.datetime) -> str:
    """End a queued item as ``status`` with ``note``; one alert (``refund_batch_item:<id>:failed``)
    in the same transaction when it ends FAILED."""
    if alert_on_failure(
        lambda: Item.objects.filter(pk=item.pk, status=Item.Status.QUEUED).update(
            status=status, note=note[:2000], finished_at=now, next_attempt_at=None
        ),
        (
            lambda: dict(
                key=f"refund_batch_item:{item.pk}:failed",
                kind=Alert.Kind.REFUND_FAILED,
                title=f"批量退款 #{item.batch_id} 中订单 {item.order_no} 未能退款",
                text=f"批量退款 #{item.batch_id} 的订单 {item.order_no}：{note}。请在后台「批量退款」中查看，"
                f"可用「重试失败的条目」重试。",
            )
        )
        if status == Item.Status.FAILED
        else None,
    ):
        logger.error("ALERT refund batch %s item %s (%s) %s: %s", item.batch_id, item.pk, item.order_no, status, note)
    return Item.objects.filter(pk=item.pk).values_list("status", flat=True).get()


def refund_batches_sweep(*, now: dt.datetime | None = None) -> int:
    """Beat: push again every item still queued and due (never pushed because Redis was down,
    its back-off over, or its worker died holding it). Returns how many were pushed."""
    now = now or timezone.now()
    due = list(
        Item.objects.filter(status=Item.Status.QUEUED, next_attempt_at__lte=now)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:500]
    )
    _push_items(due, sweep=True)
    return len(due)


def refund_batch_retry_failed(*, batch_id: int, user) -> dict[str, int]:
    """Staff (permission ``payments.batch_refund``, checked here) try the batch's FAILED items
    again: an item whose Refund FAILED retries that Refund (``refunds.refund_retry``, the same
    out_refund_no; the item follows it back to ``refunding``); an item that never got a Refund
    is queued again with a fresh try budget. Returns ``{"refund": n, "queued": n}``."""
    if not user.has_perm(PERMISSION):
        raise PermissionDenied(f"needs permission {PERMISSION}")
    actor = f"staff:{user.get_username()}"[:64]
    counts = {"refund": 0, "queued": 0}
    for item in Item.objects.filter(batch_id=batch_id, status=Item.Status.FAILED).order_by("pk"):
        if item.refund_id:
            counts["refund"] += refunds.refund_retry(refund_id=item.refund_id, actor=actor)
            continue
        with transaction.atomic():
            if (
                Item.objects.filter(pk=item.pk, status=Item.Status.FAILED, refund__isnull=True).update(
                    status=Item.Status.QUEUED,
                    attempts=0,
                    next_attempt_at=timezone.now(),
                    finished_at=None,
                    note=f"{actor} 重试",
                )
                == 1
            ):
                counts["queued"] += 1
                transaction.on_commit(partial(_push_items, [item.pk]))
    return counts


def with_counts(batches: QuerySet[RefundBatch]) -> QuerySet[RefundBatch]:
    """``batches`` annotated with ``n_<status>`` (items per status) and ``n_items``."""
    per_status = {f"n_{status}": Count("items", filter=Q(items__status=status)) for status in Item.Status.values}
    return batches.annotate(n_items=Count("items"), **per_status)

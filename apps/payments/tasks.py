"""Celery tasks of payments (queue ``payments``): thin wrappers around the services."""

import datetime as dt

from celery import shared_task

from apps.payments import member_cards, order_lifecycle, recharges, reconciliation, refund_batches, refunds, services


@shared_task
def refund_run(refund_id: int) -> str:
    """One attempt at a refund (claimed atomically; a duplicate message does nothing)."""
    return refunds.refund_execute(refund_id=refund_id)


@shared_task
def refunds_sweep() -> dict:
    """Beat, every minute: due retries, dead workers' refunds, refundquery for silent ones."""
    return refunds.refunds_sweep()


@shared_task
def payments_check_uncertain() -> dict:
    """Beat, every minute: query UNKNOWN payments at 1, 5, 15 minutes, then MANUAL."""
    return services.payments_check_uncertain()


@shared_task
def reconcile_daily() -> str:
    """Beat, daily 10:30 Beijing (WeChat's bill is ready after 10:00): yesterday vs our rows."""
    return reconciliation.reconcile_previous_day().status


@shared_task
def reconcile_day(bill_date: str) -> str:
    """A day's reconciliation staff started in the back office (``reconciliation.reconcile_start``);
    ``bill_date`` is ``YYYY-MM-DD`` (Beijing). Returns the stored status."""
    return reconciliation.reconcile(bill_date=dt.date.fromisoformat(bill_date)).status


@shared_task
def recharges_expire_due() -> dict:
    """Beat, every minute: unpaid recharges past their deadline: asked about, then expired."""
    return recharges.recharges_expire_due()


@shared_task
def card_purchases_expire_due() -> dict:
    """Beat, every minute: unpaid member-card purchases past their deadline: asked about, then expired."""
    return member_cards.card_purchases_expire_due()


@shared_task
def notify_duplicates_record() -> int:
    """Beat, every ``NOTIFY_DUPLICATES_FLUSH_SECONDS``: the audit rows of the re-sent payment
    notifications the ASGI gate answered (``apps.payments.notify_duplicates``)."""
    from apps.payments import notify_duplicates

    return notify_duplicates.notify_duplicates_record()


@shared_task
def notifications_queued_drain() -> int:
    """The payment results the notify gate queued (``apps.payments.notify_queue``), applied
    oldest first; pushed after the gate's commits. Several at once share the rows."""
    from apps.payments import notify_queue

    return notify_queue.queued_drain()


@shared_task
def notifications_queued_sweep() -> int:
    """Beat, every ``NOTIFY_QUEUE_SWEEP_SECONDS``: queued payment results whose task was lost."""
    from apps.payments import notify_queue

    return notify_queue.queued_sweep()


@shared_task
def refund_batch_item_run(item_id: int) -> str:
    """One order of a batch refund: its request and approval (claimed; a duplicate does nothing)."""
    return refund_batches.refund_batch_item_run(item_id=item_id)


@shared_task
def refund_batches_sweep() -> int:
    """Beat, every minute: push again batch items still queued and due (the items are the outbox)."""
    return refund_batches.refund_batches_sweep()


# The unpaid timeout keeps its old task names (beat schedule, queued messages) and so its queue:
# "apps.orders.tasks.*" matches no CELERY_TASK_ROUTES pattern, it runs on the default queue.
@shared_task(name="apps.orders.tasks.order_expire")
def order_expire(order_id: int) -> str:
    """One order's unpaid timeout. Nothing schedules it any more (the sweep below is the timeout);
    kept so that countdowns queued by an older release still run after an upgrade."""
    return order_lifecycle.order_expire(order_id=order_id)


@shared_task(name="apps.orders.tasks.orders_expire_due")
def orders_expire_due() -> dict:
    """Beat, every ``ORDER_EXPIRE_SWEEP_SECONDS``: the unpaid timeout (``pay_deadline`` is the timer)."""
    return order_lifecycle.orders_expire_due()


@shared_task
def groups_end_due() -> dict:
    """Beat, every BEAT_SWEEP_SECONDS: fail 拼团 groups past their deadline, refund and cancel
    what they owe (``apps.payments.group_refunds``)."""
    from apps.payments import group_refunds

    return group_refunds.groups_end_due()


@shared_task
def shipping_jump_path_ensure() -> bool:
    """Beat, every sweep: the order-detail path set with WeChat once (``shipping_info.jump_path_ensure``)."""
    from apps.payments import shipping_info

    return shipping_info.jump_path_ensure()

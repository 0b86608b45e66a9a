"""The follow-up outbox: record in the business transaction, push to Redis after commit.

A follow-up is a row (:class:`FollowUp`) inserted in the same transaction as the change that
causes it, so it commits or vanishes with it. ``on_commit`` then pushes its id onto a Celery
queue (a Redis list). Workers acknowledge late, so a worker that dies mid-task leaves the
message for another; :func:`followups_redispatch` (beat) re-pushes rows that are still pending,
so even a Redis outage between commit and push loses nothing. Handlers are idempotent by the
row: the conditional ``pending -> done`` UPDATE lets one effect count.
"""

from __future__ import annotations

import datetime as dt
import logging
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.orders.models import FollowUp, Order

logger = logging.getLogger(__name__)

REDISPATCH_AFTER = dt.timedelta(minutes=2)


def followup_record(*, order: Order, kind: str) -> FollowUp | None:
    """Insert the follow-up ``kind`` for ``order`` once and push it after commit.

    Caller holds the transaction. Returns None if it was already recorded (UNIQUE key).
    """
    try:
        with transaction.atomic():  # savepoint: a duplicate must not spoil the caller's transaction
            followup = FollowUp.objects.create(key=f"{kind}:{order.order_no}", kind=kind, order=order)
    except IntegrityError:
        return None
    transaction.on_commit(partial(followup_dispatch, followup.pk))
    return followup


def followup_dispatch(followup_id: int) -> bool:
    """Push the follow-up onto its Redis queue; False (row stays pending) if Redis is down."""
    from apps.orders.tasks import followup_run

    try:
        followup_run.delay(followup_id)
    except Exception:  # kombu raises OperationalError and friends; the beat sweep retries
        logger.warning("follow-up %s not dispatched now; the sweep will retry", followup_id, exc_info=True)
        return False
    FollowUp.objects.filter(pk=followup_id).update(dispatched_at=timezone.now())
    return True


def followup_execute(followup_id: int) -> str:
    """Run one follow-up's handler; return its status afterwards.

    Done rows are skipped (a redelivered message does nothing). A failed attempt counts and
    stays pending until ``FollowUp.MAX_ATTEMPTS``, then becomes FAILED with its error.
    """
    followup = FollowUp.objects.select_related("order", "order__customer").filter(pk=followup_id).first()
    if followup is None or followup.status != FollowUp.Status.PENDING:
        return followup.status if followup else "missing"
    try:
        HANDLERS[followup.kind](followup)
    except Exception as exc:  # any handler error: record it and let the sweep retry
        attempts = followup.attempts + 1
        status = FollowUp.Status.FAILED if attempts >= FollowUp.MAX_ATTEMPTS else FollowUp.Status.PENDING
        FollowUp.objects.filter(pk=followup.pk, status=FollowUp.Status.PENDING).update(
            attempts=attempts, last_error=f"{type(exc).__name__}: {exc}"[:2000], status=status
        )
        logger.warning("follow-up %s failed (attempt %s): %s", followup.key, attempts, exc)
        return status
    FollowUp.objects.filter(pk=followup.pk, status=FollowUp.Status.PENDING).update(
        status=FollowUp.Status.DONE, attempts=followup.attempts + 1, done_at=timezone.now(), last_error=""
    )
    return FollowUp.Status.DONE


def followups_redispatch(*, now: dt.datetime | None = None) -> int:
    """Re-push pending follow-ups not dispatched (or not done) for a while; return how many."""
    cutoff = (now or timezone.now()) - REDISPATCH_AFTER
    stale = Q(dispatched_at__isnull=True, created_at__lt=cutoff) | Q(dispatched_at__lt=cutoff)
    ids = list(
        FollowUp.objects.filter(stale, status=FollowUp.Status.PENDING).values_list("pk", flat=True)[:500]
    )
    return sum(followup_dispatch(pk) for pk in ids)


# --- handlers: each idempotent or harmless to repeat ---------------------------------------

def _send_paid_message(followup: FollowUp) -> None:
    """Tell the customer their order is paid (WeChat subscription message)."""
    from apps.accounts import wechat

    order = followup.order
    wechat.send_subscribe_message(
        openid=order.customer.openid,
        template_id=settings.WECHAT_SUBSCRIBE_TEMPLATE_PAID,
        page=f"pages/order/detail?order_no={order.order_no}",
        data={
            "character_string1": {"value": order.order_no},
            "amount2": {"value": f"{order.pay_fen / 100:.2f}元"},
            "time3": {"value": timezone.localtime(order.paid_at or timezone.now()).strftime("%Y-%m-%d %H:%M")},
        },
    )


def _award_points(followup: FollowUp) -> None:
    """One point per whole yuan paid; WalletEvent's UNIQUE makes a repeat a no-op."""
    from apps.accounts.models import WalletEvent
    from apps.accounts.services import points_credit

    order = followup.order
    points_credit(customer_id=order.customer_id, points=order.pay_fen // 100,
                  reason=WalletEvent.Reason.AWARD, ref=order.order_no)


HANDLERS = {
    FollowUp.Kind.SUBSCRIBE_MESSAGE: _send_paid_message,
    FollowUp.Kind.POINTS_AWARD: _award_points,
}

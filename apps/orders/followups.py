"""The follow-up outbox: record in the business transaction, push to Redis after commit.

A follow-up is a row (:class:`FollowUp`) inserted in the transaction of the change that causes
it, so it commits or vanishes with it; ``on_commit`` pushes the ids of all the rows the
transaction recorded as ONE Celery message (``followup_run_many``). Late acks and
:func:`followups_redispatch` (beat: re-pushes pending rows) lose nothing, even to a Redis outage
between commit and push; the conditional ``pending -> done`` UPDATE lets one effect count. A kind
is one outside send (:data:`SENDS`) or database work (:data:`HANDLERS`), never both, with its own
:data:`RETRY_POLICIES` if any. Apps above orders add :data:`PAID_KINDS` and hear :data:`DELIVERED`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_on_failure
from apps.members import selectors as members
from apps.orders.models import FollowUp, Order
from starmall import dispatch
from starmall.admin_money import yuan
from starmall.shop import shop_name

logger = logging.getLogger(__name__)

REDISPATCH_AFTER = dt.timedelta(minutes=2)


@transaction.atomic(savepoint=False)
def followup_record(*, order: Order, kind: str, key: str | None = None) -> FollowUp | None:
    """Insert the follow-up ``kind`` for ``order`` once and push it after commit.

    ``key`` (default ``kind:order_no``) is the UNIQUE key: a kind that happens more than once
    per order (a corrected shipping information: one per version) names each. Joins the
    caller's (business) transaction. Returns None if it was already recorded (UNIQUE key).
    """
    try:
        with transaction.atomic():  # savepoint: a duplicate must not spoil the caller's transaction
            followup = FollowUp.objects.create(key=key or f"{kind}:{order.order_no}", kind=kind, order=order)
    except IntegrityError:
        return None
    _push_after_commit([followup.pk])
    return followup


def followup_record_many(*, order: Order, kinds: list[str]) -> list[FollowUp]:
    """Insert the follow-ups ``kinds`` of ``order`` in one INSERT and push them after commit.

    What :func:`followup_record` does per kind, in one statement and one savepoint instead of
    one each (the paying transaction holds hot rows). If one of them exists already,
    falls back to :func:`followup_record` per kind. Caller holds the transaction.
    """
    try:
        with transaction.atomic():
            rows = FollowUp.objects.bulk_create(
                [FollowUp(key=f"{kind}:{order.order_no}", kind=kind, order=order) for kind in kinds]
            )
    except IntegrityError:
        return [row for kind in kinds if (row := followup_record(order=order, kind=kind)) is not None]
    _push_after_commit([row.pk for row in rows])
    return rows


class _Batch:
    """The follow-ups recorded in one transaction, pushed as ONE message after its commit: a
    paid order's message, SMS, points and whatever kinds other apps record in the paying
    transaction (``HANDLERS``, ``SENDS``) cost the broker and the worker one task, not one each."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.done = False

    def __call__(self) -> None:
        self.done = True
        _dispatch_many(self.ids)


def _push_after_commit(followup_ids: list[int]) -> None:
    """Add the rows to their transaction's one message (:class:`_Batch`), pushed after commit;
    at once outside a transaction. A batch is the transaction's while its callback is still
    registered (a rolled-back savepoint removes it with the rows recorded under it)."""
    conn = transaction.get_connection()
    if not conn.in_atomic_block:
        _dispatch_many(followup_ids)
        return
    batch = getattr(conn, "_followup_batch", None)
    if batch is None or batch.done or not any(func is batch for _, func, _ in conn.run_on_commit):
        batch = conn._followup_batch = _Batch()
        transaction.on_commit(batch)
    batch.ids.extend(followup_ids)


def _dispatch_many(followup_ids: list[int]) -> int:
    """Push the follow-ups as one ``followup_run_many`` message; mark them dispatched in one
    UPDATE; return how many (0 when the push failed: the rows wait for the sweep)."""
    from apps.orders.tasks import followup_run_many

    if not followup_ids or not dispatch.push(followup_run_many, list(followup_ids)):
        return 0
    FollowUp.objects.filter(pk__in=followup_ids).update(dispatched_at=timezone.now())
    return len(followup_ids)


def followups_execute(followup_ids: list[int]) -> list[str]:
    """Run several follow-ups one after the other (:func:`followup_execute` each, its own claim
    and transaction); their statuses afterwards. A worker killed in the middle leaves the rows
    after it pending and the one it ran leased: the redelivered message skips the done ones and
    the sweep re-pushes the rest once their lease runs out."""
    return [followup_execute(pk) for pk in followup_ids]


def followup_dispatch(followup_id: int, *, sweep: bool = False) -> bool:
    """Push the follow-up onto its Redis queue; False (row stays pending) if Redis is down."""
    from apps.orders.tasks import followup_run

    if not dispatch.push(followup_run, followup_id, sweep=sweep):
        return False
    FollowUp.objects.filter(pk=followup_id).update(dispatched_at=timezone.now())
    return True


def followup_execute(followup_id: int, *, now: dt.datetime | None = None) -> str:
    """Run one follow-up; return its status afterwards.

    The row is claimed first (``pending`` and not leased -> leased for LEASE_SECONDS): two
    deliveries of a message cannot run it at once, and a done row is skipped. Database work
    (:data:`HANDLERS`) commits with ``done``: exactly once. A send (:data:`SENDS`, :func:`_send`)
    is at least once, twice only if the worker dies between its provider's answer and the
    ``done`` UPDATE's commit. A failed attempt stays pending until ``FollowUp.MAX_ATTEMPTS`` (or
    its kind's :data:`RETRY_POLICIES`), then becomes FAILED with its error and one alert. Called
    by the worker outside any transaction (a send inside one would wait for its commit).
    """
    now = now or timezone.now()
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    claimed = FollowUp.objects.filter(free, pk=followup_id, status=FollowUp.Status.PENDING).update(
        locked_until=now + dt.timedelta(seconds=FollowUp.LEASE_SECONDS), attempts=F("attempts") + 1
    )
    followup = FollowUp.objects.select_related("order", "order__customer").filter(pk=followup_id).first()
    if followup is None:
        return "missing"
    if claimed != 1:
        return followup.status  # done, failed, or another worker holds it
    try:
        if followup.kind in SENDS:
            _send(followup)
        else:
            with transaction.atomic():
                HANDLERS[followup.kind](followup)
                _mark_done(followup)
    except Exception as exc:  # any handler error: record it and let the sweep retry
        status = FollowUp.Status.FAILED if followup_gives_up(followup) else FollowUp.Status.PENDING
        error = f"{type(exc).__name__}: {exc}"
        policy = RETRY_POLICIES.get(followup.kind)
        # a kind with a policy waits its backoff (the sweep skips a leased row); others: the next sweep
        wait = now + policy.backoff(followup.attempts) if policy and status == FollowUp.Status.PENDING else None
        alert_on_failure(  # FAILED and its one alert together
            lambda: FollowUp.objects.filter(pk=followup.pk, status=FollowUp.Status.PENDING).update(
                last_error=error[:2000], status=status, locked_until=wait
            ),
            partial(_alert_failed, followup, exc) if status == FollowUp.Status.FAILED else None,
        )
        if status == FollowUp.Status.FAILED:
            logger.error("ALERT follow-up %s FAILED after %s attempts: %s", followup.key, followup.attempts, exc)
        else:
            logger.warning("follow-up %s failed (attempt %s): %s", followup.key, followup.attempts, exc)
        return status
    return FollowUp.Status.DONE


@dataclass(frozen=True)
class RetryPolicy:
    """How a kind retries: ``max_attempts`` tries in all, ``backoff(attempts)`` the wait after
    the ``attempts``-th failed one (its lease: the sweep re-pushes it only after that)."""

    max_attempts: int
    backoff: Callable[[int], dt.timedelta]


#: kind -> its :class:`RetryPolicy` (registered by the app that owns the kind); other kinds try
#: ``FollowUp.MAX_ATTEMPTS`` times, one sweep apart.
RETRY_POLICIES: dict[str, RetryPolicy] = {}


def followup_gives_up(followup: FollowUp) -> bool:
    """True when the attempt ``followup.attempts`` (just claimed) is its kind's last."""
    policy = RETRY_POLICIES.get(followup.kind)
    return followup.attempts >= (policy.max_attempts if policy else FollowUp.MAX_ATTEMPTS)


def _send(followup: FollowUp) -> None:
    """The follow-up's one outside call, recorded done the instant its provider answers.

    The message is built first (its database reads); then the provider is called with no
    transaction open, and the very next statement is the conditional UPDATE marking the row
    done, committed when it returns (autocommit). Nothing else may run in between: a send
    inside a longer transaction is recorded only at its COMMIT, and a worker killed before
    that sends the message again.
    Raises what the provider raised (the row stays pending for the sweep).
    """
    call = SENDS[followup.kind](followup)
    if call is not None:  # nothing to send (no phone, no shipment): done all the same
        call()
    _mark_done(followup)


def _mark_done(followup: FollowUp) -> int:
    """The conditional ``pending -> done`` UPDATE (lease released); its row count."""
    return FollowUp.objects.filter(pk=followup.pk, status=FollowUp.Status.PENDING).update(
        status=FollowUp.Status.DONE, done_at=timezone.now(), last_error="", locked_until=None
    )


def _alert_failed(followup: FollowUp, exc: Exception) -> dict[str, str]:
    """The one alert of a follow-up that turned FAILED (key ``followup:<key>:failed``)."""
    order_no, kind = followup.order.order_no, followup.get_kind_display()
    return dict(
        key=f"followup:{followup.key}:failed",
        kind=Alert.Kind.FOLLOWUP_FAILED,
        title=f"订单 {order_no} 的后续任务「{kind}」失败",
        text=(
            f"订单 {order_no} 的后续任务「{kind}」尝试 {followup.attempts} 次后仍失败：{type(exc).__name__}: {exc}。"
            f"请在后台「订单 › 后续任务」查看错误并处理。"
        ),
    )


def followups_redispatch(*, now: dt.datetime | None = None) -> int:
    """Re-push pending follow-ups that no worker finished; return how many were pushed.

    A row qualifies when it was never pushed (Redis was down at commit) or was pushed more
    than REDISPATCH_AFTER ago, and no worker holds a live lease on it. Pushing twice is
    harmless: the claim in :func:`followup_execute` lets one run.
    """
    now = now or timezone.now()
    cutoff = now - REDISPATCH_AFTER
    stale = Q(dispatched_at__isnull=True, created_at__lt=cutoff) | Q(dispatched_at__lt=cutoff)
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    ids = list(FollowUp.objects.filter(stale, free, status=FollowUp.Status.PENDING).values_list("pk", flat=True)[:500])
    return sum(followup_dispatch(pk, sweep=True) for pk in ids)


# --- sends: each builds its provider call (or None: nothing to send) -------------------------

Send = Callable[[], object]
"""A provider call ready to go, its arguments bound: ``call()`` sends or raises."""


def _paid_message(followup: FollowUp) -> Send:
    """Tell the customer their order is paid (WeChat subscription message, template of kind
    ``order_paid`` from ``apps.accounts.subscriptions``; WeChat has no idempotency key for these).
    A refusal (43101) is remembered there and the row is done all the same."""
    from apps.accounts import subscriptions

    order = followup.order
    return partial(
        subscriptions.subscribe_send,
        customer=order.customer,
        kind=subscriptions.Kind.ORDER_PAID,
        page=f"pages/order/detail?order_no={order.order_no}",
        values={
            "order_no": order.order_no,
            "amount": f"{yuan(order.pay_fen)}元",
            "paid_at": timezone.localtime(order.paid_at or timezone.now()).strftime("%Y-%m-%d %H:%M"),
        },
    )


def _paid_sms(followup: FollowUp) -> Send | None:
    """Text the customer (when a phone is known) through ``settings.SMS_BACKEND``; the row's
    UNIQUE key goes along for providers that deduplicate by it."""
    from apps.orders.sms import backend

    order = followup.order
    phone = (order.address or {}).get("phone") or order.customer.phone
    if not phone:
        return None
    return partial(
        backend().send,
        phone=phone,
        key=followup.key,
        template="order_paid",
        params=(order.order_no, yuan(order.pay_fen)),
        text=f"【{shop_name()}】订单{order.order_no}已支付{yuan(order.pay_fen)}元，感谢惠顾。",
    )


def _shipped_message(followup: FollowUp) -> Send | None:
    """Tell the customer their order is on its way: carrier and tracking number (kind
    ``order_shipped``)."""
    from apps.accounts import subscriptions
    from apps.orders.models import Shipment

    order = followup.order
    shipment = Shipment.objects.filter(order=order).first()
    if shipment is None:
        return None
    return partial(
        subscriptions.subscribe_send,
        customer=order.customer,
        kind=subscriptions.Kind.ORDER_SHIPPED,
        page=f"pages/order/detail?order_no={order.order_no}",
        values={
            "order_no": order.order_no,
            "carrier": shipment.carrier,
            "tracking_no": shipment.tracking_no,
            "shipped_at": timezone.localtime(shipment.shipped_at).strftime("%Y-%m-%d %H:%M"),
        },
    )


#: A kind is a send or database work, never both: work that has to follow a send is a follow-up
#: of its own, so the send is recorded done the moment its provider answers (:func:`_send`).
SENDS: dict[str, Callable[[FollowUp], Send | None]] = {
    FollowUp.Kind.SUBSCRIBE_MESSAGE: _paid_message,
    FollowUp.Kind.SHIPPED_MESSAGE: _shipped_message,
    FollowUp.Kind.SMS: _paid_sms,
}


# --- database work: each idempotent, committed together with ``done`` -------------------------


def _award_points(followup: FollowUp) -> None:
    """One point per whole yuan paid (two while the buyer was a paid member, SVIP, when it was
    paid: API.md Members), FROZEN until the order completes plus POINTS_FREEZE_DAYS
    (API.md); written VOID if the order was cancelled or refunded meanwhile. The customer's row
    is locked before the order's status is read, as the refund's void does: the two cannot
    miss each other. WalletEvent's UNIQUE makes a repeat a no-op."""
    from apps.accounts import wallet
    from apps.orders.models import OrderStatus

    order = followup.order
    wallet.customer_lock(customer_id=order.customer_id)
    status, completed_at = Order.objects.filter(pk=order.pk).values_list("status", "completed_at").get()
    live = status in (OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED)
    doubled = members.svip_active(order.customer_id, at=order.paid_at)  # a paid member's points count twice
    wallet.points_award_freeze(
        customer_id=order.customer_id,
        points=order.pay_fen // 100 * (2 if doubled else 1),
        order_no=order.order_no,
        order_live=live,
        completed_at=completed_at if status == OrderStatus.COMPLETED else None,
    )


def _award_growth(followup: FollowUp) -> None:
    """A completed order's member growth: 1 per whole yuan of ``pay_fen - freight_fen``, once
    (``apps.members.services.growth_order_completed``: the ledger row's UNIQUE key)."""
    from apps.members import services as member_services

    order = followup.order
    member_services.growth_order_completed(
        customer_id=order.customer_id, order_no=order.order_no, basis_fen=order.pay_fen - order.freight_fen
    )


HANDLERS: dict[str, Callable[[FollowUp], None]] = {
    FollowUp.Kind.POINTS_AWARD: _award_points,
    FollowUp.Kind.GROWTH_AWARD: _award_growth,
}

#: Apps above orders add follow-ups to a paid order without orders importing them: each
#: callable gets the order in the paying transaction and returns the extra kinds to record
#: (their handlers registered in :data:`HANDLERS`), e.g. distribution's commission award when
#: the buyer has a referrer. Appended from the app's ``AppConfig.ready``.
PAID_KINDS: list[Callable[[Order], list[str]]] = []

#: Apps above orders hear, in the same transaction, that an order reached its buyer's hands
#: (or is on its way): ``hook(order=, how=)`` with ``how`` one of :data:`DELIVERY_HOWS`.
#: ``"express"`` is called again when staff correct the tracking number. Appended from the
#: app's ``AppConfig.ready`` (payments: the shipping information to WeChat); a hook records
#: rows (follow-ups), never calls out, and must be idempotent.
DELIVERED: list[Callable[..., None]] = []
DELIVERY_HOWS = ("express", "hand", "virtual", "pickup")


def delivered_run(*, order: Order, how: str) -> None:
    """Call every :data:`DELIVERED` hook (errors roll the caller's transaction back)."""
    assert how in DELIVERY_HOWS, how
    for hook in DELIVERED:
        hook(order=order, how=how)

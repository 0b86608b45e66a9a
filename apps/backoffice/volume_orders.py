"""The rows that hang off one batch of seeded orders (``volume_seed``): lines, status log,
payments, after-sales and refunds, shipments, balance/points ledger, follow-ups, commissions.

Each row is what the shop's own flows would have written for an order that reached its status
(``apps.orders.services``, ``apps.payments``, ``apps.distribution``); keys follow the same
formats with the run's order numbers, so they never meet another run's or a real order's.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from apps.accounts.models import WalletEvent
from apps.backoffice.volume_writer import insert, new, reserve_ids
from apps.distribution.models import Commission, LedgerEntry
from apps.orders.models import AfterSale, FollowUp, Order, OrderEvent, OrderLine, OrderStatus, PayMethod, Shipment
from apps.payments.models import Payment, PaymentStatus, Refund

PAID_STATES = (
    OrderStatus.PAID,
    OrderStatus.SHIPPED,
    OrderStatus.COMPLETED,
    OrderStatus.REFUNDING,
    OrderStatus.REFUNDED,
)
STEPS = [  # (time attribute, from, to, actor)
    ("created_at", "", OrderStatus.UNPAID, "customer"),
    ("paid_at", OrderStatus.UNPAID, OrderStatus.PAID, "wechat"),
    ("shipped_at", OrderStatus.PAID, OrderStatus.SHIPPED, "staff:volume"),
    ("completed_at", OrderStatus.SHIPPED, OrderStatus.COMPLETED, "customer"),
    ("cancelled_at", OrderStatus.UNPAID, OrderStatus.CANCELLED, "system:timeout"),
]


def _with_ids(model, rows: list) -> list:
    for pk, row in zip(reserve_ids(model, len(rows)), rows):
        row.id = pk
    return rows


def write_batch(run, made: list[tuple[Order, list[OrderLine]]]) -> None:
    """Write a batch of orders and everything their statuses imply (inside the caller's transaction)."""
    orders = [o for o, _ in made]
    counts = run.counts
    counts["orders"] += insert(Order, orders)
    counts["order_lines"] += insert(OrderLine, _with_ids(OrderLine, [line for _, ls in made for line in ls]))
    counts["order_events"] += insert(OrderEvent, _with_ids(OrderEvent, _events(orders)))
    payments = _with_ids(Payment, _payments(run, orders))
    counts["payments"] += insert(Payment, payments)
    _refunds(run, orders, payments)
    shipments = [
        new(
            Shipment,
            order_id=o.id,
            carrier_code=code,
            carrier=name,
            tracking_no=f"SF{o.order_no[1:]}",
            shipped_by="staff:volume",
            shipped_at=o.shipped_at,
        )
        for o in orders
        if o.shipped_at
        for code, name in [run.rng.choice([("shunfeng", "顺丰速运"), ("zhongtong", "中通快递")])]
    ]
    counts["shipments"] += insert(Shipment, _with_ids(Shipment, shipments))
    counts["wallet_events"] += insert(WalletEvent, _with_ids(WalletEvent, _wallet(run, orders)))
    counts["followups"] += insert(FollowUp, _with_ids(FollowUp, _followups(run, orders)))
    _commissions(run, orders)


def _events(orders: list[Order]) -> list[OrderEvent]:
    rows = []
    for o in orders:
        for attr, before, after, actor in STEPS:
            when = getattr(o, attr)
            if when:
                rows.append(
                    new(OrderEvent, order_id=o.id, from_status=before, to_status=after, actor=actor, created_at=when)
                )
        if o.status in (OrderStatus.REFUNDING, OrderStatus.REFUNDED):
            rows.append(
                new(
                    OrderEvent,
                    order_id=o.id,
                    from_status=OrderStatus.PAID,
                    to_status=OrderStatus.REFUNDING,
                    actor="staff:volume",
                    created_at=o.paid_at + dt.timedelta(days=1),
                )
            )
    return rows


def _payments(run, orders: list[Order]) -> list[Payment]:
    rows = []
    for o in orders:
        paid = o.status in PAID_STATES
        if o.status == OrderStatus.UNPAID or (not paid and run.rng.random() < 0.5):
            continue  # unpaid ones have not asked for a prepay yet, nor half the cancelled ones
        wechat = o.pay_method != PayMethod.BALANCE
        status = PaymentStatus.PAID if paid else PaymentStatus.CLOSED
        rows.append(
            new(
                Payment,
                order_id=o.id,
                method=PayMethod.WECHAT if wechat else PayMethod.BALANCE,
                out_trade_no=o.order_no if wechat else None,
                transaction_id=f"42{o.order_no[1:]}" if wechat and paid else None,
                total_fee=o.pay_fen,
                refunded_fen=o.pay_fen if o.status in (OrderStatus.REFUNDING, OrderStatus.REFUNDED) else 0,
                status=status,
                prepay_id=f"wx{o.order_no}" if wechat else "",
                paid_at=o.paid_at,
                created_at=o.created_at,
                updated_at=o.paid_at or o.created_at,
            )
        )
    return rows


def _refunds(run, orders: list[Order], payments: list[Payment]) -> None:
    by_order = {p.order_id: p for p in payments}
    sales, refunds = [], []
    for o in orders:
        if o.status not in (OrderStatus.REFUNDING, OrderStatus.REFUNDED):
            continue
        asked = o.paid_at + dt.timedelta(days=1)
        done = o.status == OrderStatus.REFUNDED
        sale = new(
            AfterSale,
            order_id=o.id,
            refund_no=f"RV{o.order_no[1:]}",
            reason="不想要了",
            amount_fen=o.pay_fen,
            status=AfterSale.Status.REFUNDED if done else AfterSale.Status.APPROVED,
            decided_by="staff:volume",
            decided_at=asked,
            created_at=asked,
        )
        sales.append(sale)
        refunds.append(
            new(
                Refund,
                order_id=o.id,
                payment_id=by_order[o.id].id,
                out_refund_no=sale.refund_no,
                refund_fen=o.pay_fen,
                reason=Refund.Reason.AFTER_SALE,
                status=Refund.Status.SUCCESS if done else Refund.Status.SUBMITTED,
                attempts=1,
                created_at=asked,
                succeeded_at=asked + dt.timedelta(hours=2) if done else None,
            )
        )
    run.counts["after_sales"] += insert(AfterSale, _with_ids(AfterSale, sales))
    for refund, sale in zip(refunds, sales):
        refund.after_sale_id = sale.id
    run.counts["refunds"] += insert(Refund, _with_ids(Refund, refunds))


def _balance(o: Order) -> list[WalletEvent]:
    """A balance order: the recharge that paid it, the payment, the refund back when refunded."""
    moves = [("recharge", o.pay_fen, f"RC{o.order_no}", o.created_at), ("pay", -o.pay_fen, o.order_no, o.paid_at)]
    if o.status == OrderStatus.REFUNDED:
        moves.append(("refund", o.pay_fen, f"RV{o.order_no[1:]}", o.paid_at + dt.timedelta(days=1)))
    return [
        new(
            WalletEvent,
            customer_id=o.customer_id,
            kind=WalletEvent.Kind.BALANCE,
            order_no=o.order_no,
            reason=reason,
            amount=amount,
            ref=ref,
            created_at=when,
            available_at=when,
        )
        for reason, amount, ref, when in moves
    ]


def _wallet(run, orders: list[Order]) -> list[WalletEvent]:
    """Balance orders' rows (:func:`_balance`); every paid order's points award: frozen,
    released once completed + POINTS_FREEZE_DAYS (the last day's left to the job), void when refunded."""
    rows = []
    freeze = dt.timedelta(days=settings.POINTS_FREEZE_DAYS)
    for o in orders:
        if o.status not in PAID_STATES:
            continue
        if o.pay_method == PayMethod.BALANCE:
            rows += _balance(o)
        points = o.pay_fen // 100
        if points:
            due = o.completed_at + freeze if o.completed_at else None
            released = due is not None and due < run.now - dt.timedelta(days=1)
            state = "void" if o.status == OrderStatus.REFUNDED else ("available" if released else "frozen")
            rows.append(
                new(
                    WalletEvent,
                    customer_id=o.customer_id,
                    kind="points",
                    reason="award",
                    amount=points,
                    ref=o.order_no,
                    order_no=o.order_no,
                    state=state,
                    created_at=o.paid_at,
                    available_at=due,
                )
            )
    return rows


def _followups(run, orders: list[Order]) -> list[FollowUp]:
    """Done follow-ups of every paid order; the last hour's still pending (the redispatch's work)."""
    rows = []
    recent = run.now - dt.timedelta(hours=1)
    for o in orders:
        if not o.paid_at:
            continue
        pending = o.paid_at > recent and o.status == OrderStatus.PAID
        for kind in (FollowUp.Kind.SUBSCRIBE_MESSAGE, FollowUp.Kind.POINTS_AWARD):
            rows.append(
                new(
                    FollowUp,
                    key=f"{kind}:{o.order_no}",
                    kind=kind,
                    order_id=o.id,
                    status=FollowUp.Status.PENDING if pending else FollowUp.Status.DONE,
                    attempts=0 if pending else 1,
                    created_at=o.paid_at,
                    dispatched_at=o.paid_at,
                    done_at=None if pending else o.paid_at + dt.timedelta(seconds=5),
                )
            )
    return rows


def _commissions(run, orders: list[Order]) -> None:
    """10 % to the buyer's referrer: frozen at payment, available once the order completed
    COMMISSION_FREEZE_DAYS ago (the last day's due ones left frozen for the release job),
    reversed by a refund; each with its ledger rows."""
    release_before = run.now - dt.timedelta(days=settings.COMMISSION_FREEZE_DAYS + 1)
    rows = []
    for o in orders:
        distributor = run.referrer.get(o.customer_id)
        if distributor is None or o.status not in PAID_STATES:
            continue
        base = o.pay_fen - o.freight_fen
        status = Commission.Status.FROZEN
        if o.status == OrderStatus.REFUNDED:
            status = Commission.Status.REVERSED
        elif o.completed_at and o.completed_at < release_before:
            status = Commission.Status.AVAILABLE
        amount = base // 10
        rows.append(
            new(
                Commission,
                order_id=o.id,
                level=1,
                distributor_id=distributor,
                base_fen=base,
                amount_fen=amount,
                reversed_fen=amount if status == Commission.Status.REVERSED else 0,
                status=status,
                created_at=o.paid_at,
                available_at=o.completed_at + dt.timedelta(days=settings.COMMISSION_FREEZE_DAYS)
                if status == Commission.Status.AVAILABLE
                else None,
            )
        )
    run.counts["commissions"] += insert(Commission, _with_ids(Commission, rows))
    run.counts["commission_ledger"] += insert(LedgerEntry, _with_ids(LedgerEntry, _commission_ledger(rows)))


def _commission_ledger(rows: list[Commission]) -> list[LedgerEntry]:
    """The distribution ledger of seeded commissions: booked frozen, released, reversed."""
    ledger = []
    for c in rows:
        moves = [("commission", str(c.id), 0, c.amount_fen, c.created_at)]
        if c.status == Commission.Status.AVAILABLE:
            moves.append(("release", str(c.id), c.amount_fen, -c.amount_fen, c.available_at))
        elif c.status == Commission.Status.REVERSED:
            moves.append(("reverse", f"RV{c.order_id}:{c.id}", 0, -c.amount_fen, c.created_at))
        ledger += [
            new(
                LedgerEntry,
                distributor_id=c.distributor_id,
                reason=reason,
                ref=ref,
                available_delta_fen=available,
                frozen_delta_fen=frozen,
                created_at=when,
            )
            for reason, ref, available, frozen, when in moves
        ]
    return ledger

"""The rows of one batch of seeded orders (``volume_seed``): orders, lines, consultations' slots and
bookings, status log, payments, after-sales, refunds, shipments, ledgers, follow-ups, commissions.

Each row is what the shop's own flows would have written for an order that reached its status
(``apps.orders.services``, ``apps.payments``, ``apps.distribution``, ``apps.appointments``), with
keys in the same formats built from the run's order numbers: they never meet another run's or a
real order's. Rows that follow from an order's own columns alone (status log, shipments, points
awards, follow-ups) are derived by the database (INSERT ... SELECT over the batch's order numbers);
the rest are built here as tuples and copied.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings

from apps.accounts.models import WalletEvent
from apps.appointments.models import Booking, Slot
from apps.backoffice.volume_writer import copy_rows, db_time, insert_select, plus, reserve_ids
from apps.catalog.models import Kind
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
REFUND_STATES = (OrderStatus.REFUNDING, OrderStatus.REFUNDED)
DAY = dt.timedelta(days=1)
ORDER_COLUMNS = (
    "id", "order_no", "order_key", "customer_id", "kind", "status", "goods_fen", "freight_fen", "pay_fen",
    "pay_method", "slot_id", "address", "remark", "cancel_reason",
    "created_at", "pay_deadline", "paid_at", "shipped_at", "completed_at", "cancelled_at",
)  # fmt: skip
LINE_COLUMNS = ("order_id", "sku_id", "product_id", "name", "price_fen", "quantity", "amount_fen")


@dataclass(slots=True)
class VolumeOrder:
    """One seeded order as its rows need it; ``lines`` are tuples of :data:`LINE_COLUMNS`,
    ``address`` JSON text, ``booking`` a consultation's booking fields (else None)."""

    id: int
    order_no: str
    order_key: str
    customer_id: int
    kind: str
    status: str
    goods_fen: int
    freight_fen: int
    pay_method: str
    address: str | None
    remark: str
    created_at: dt.datetime
    pay_deadline: dt.datetime
    paid_at: dt.datetime | None = None
    shipped_at: dt.datetime | None = None
    completed_at: dt.datetime | None = None
    cancelled_at: dt.datetime | None = None
    lines: list | None = None
    booking: dict | None = None
    slot_id: int | None = None

    @property
    def pay_fen(self) -> int:
        return self.goods_fen + self.freight_fen

    def row(self) -> tuple:
        cancelled = "超时未支付" if self.status == OrderStatus.CANCELLED else ""
        return (
            self.id, self.order_no, self.order_key, self.customer_id, self.kind, self.status, self.goods_fen,
            self.freight_fen, self.goods_fen + self.freight_fen, self.pay_method, self.slot_id, self.address,
            self.remark, cancelled, self.created_at, self.pay_deadline, self.paid_at, self.shipped_at,
            self.completed_at, self.cancelled_at,
        )  # fmt: skip


def write_batch(run, orders: list[VolumeOrder]) -> None:
    """Write a batch of orders (consecutive numbers of the run) and everything their statuses
    imply, inside the caller's transaction."""
    counts = run.counts
    _slots(run, orders)
    counts["orders"] += copy_rows(Order, ORDER_COLUMNS, [o.row() for o in orders])
    counts["order_lines"] += copy_rows(OrderLine, LINE_COLUMNS, [line for o in orders for line in o.lines])
    counts["bookings"] += _bookings(orders)
    batch = ("FROM orders_order WHERE order_no BETWEEN %s AND %s", [orders[0].order_no, orders[-1].order_no])
    counts["order_events"] += _events(batch)
    payments = _payments(run, orders)
    counts["payments"] += len(payments)
    _refunds(run, orders, payments)
    counts["shipments"] += insert_select(
        Shipment,
        {
            "order_id": "id",
            "carrier_code": "CASE WHEN id %% 2 = 0 THEN 'shunfeng' ELSE 'zhongtong' END",
            "carrier": "CASE WHEN id %% 2 = 0 THEN '顺丰速运' ELSE '中通快递' END",
            "tracking_no": "'SF' || substr(order_no, 2)",
            "shipped_by": "'staff:volume'",
            "shipped_at": "shipped_at",
        },
        batch[0] + " AND shipped_at IS NOT NULL",
        batch[1],
    )
    counts["wallet_events"] += _wallet(run, orders, batch)
    counts["followups"] += _followups(run, batch)
    _commissions(run, orders)


def _slots(run, orders: list[VolumeOrder]) -> None:
    """The legacy grid row of each consultation's start (``slots.slot_book_start`` makes one
    per booking), which the order and its booking point at."""
    booked = [o for o in orders if o.booking]
    ids = reserve_ids(Slot, len(booked))
    for pk, o in zip(ids, booked):
        o.slot_id = pk
    rows = [(o.slot_id, o.booking["teacher_id"], o.booking["start"], o.booking["end"]) for o in booked]
    run.counts["slots"] += copy_rows(Slot, ("id", "teacher_id", "start", "end"), rows)


BOOKING_COLUMNS = (
    "teacher_id", "product_id", "start", "end", "blocked_until", "slot_id", "order_no", "customer_id", "live",
    "hold_until", "released_at", "attendance", "created_at",
)  # fmt: skip


def _bookings(orders: list[VolumeOrder]) -> int:
    rows = []
    for o in orders:
        b = o.booking
        if b:
            rows.append(
                (
                    b["teacher_id"],
                    b["product_id"],
                    b["start"],
                    b["end"],
                    b["blocked_until"],
                    o.slot_id,
                    o.order_no,
                    o.customer_id,
                    b.get("live", True),
                    b.get("hold_until"),
                    b.get("released_at"),
                    b.get("attendance", ""),
                    o.created_at,
                )  # fmt: skip
            )
    return copy_rows(Booking, BOOKING_COLUMNS, rows)


def _events(batch: tuple[str, list]) -> int:
    """The status log: one row per step the order's times say it took (the refund request a
    day after paying)."""
    source, params = batch
    paid_or_shipped = "CASE WHEN shipped_at IS NULL THEN 'paid' ELSE 'shipped' END"
    steps = [  # (from, to, actor, time, condition)
        ("''", "'unpaid'", "'customer'", "created_at", ""),
        ("'unpaid'", "'paid'", "'wechat'", "paid_at", "paid_at IS NOT NULL"),
        ("'paid'", "'shipped'", "'staff:volume'", "shipped_at", "shipped_at IS NOT NULL"),
        (paid_or_shipped, "'completed'", "'customer'", "completed_at", "completed_at IS NOT NULL"),
        ("'unpaid'", "'cancelled'", "'system:timeout'", "cancelled_at", "cancelled_at IS NOT NULL"),
        ("'paid'", "'refunding'", "'staff:volume'", plus("paid_at", DAY), "status IN ('refunding', 'refunded')"),
    ]
    written = 0
    for before, after, actor, when, condition in steps:
        exprs = {"order_id": "id", "from_status": before, "to_status": after, "actor": actor, "created_at": when}
        written += insert_select(OrderEvent, exprs, source + (f" AND {condition}" if condition else ""), params)
    return written


PAYMENT_COLUMNS = (
    "id", "order_id", "method", "out_trade_no", "transaction_id", "total_fee", "refunded_fen", "status",
    "prepay_id", "paid_at", "created_at", "updated_at",
)  # fmt: skip


def _payments(run, orders: list[VolumeOrder]) -> dict[int, int]:
    """Every paid order's payment, half the cancelled ones' closed prepay; returns order id ->
    payment id."""
    rows = []
    for o in orders:
        paid = o.paid_at is not None
        if o.status == OrderStatus.UNPAID or (not paid and run.rng.random() < 0.5):
            continue  # unpaid ones have not asked for a prepay yet, nor half the cancelled ones
        wechat = o.pay_method != PayMethod.BALANCE
        no = o.order_no
        rows.append(
            [
                0,
                o.id,
                PayMethod.WECHAT if wechat else PayMethod.BALANCE,
                no if wechat else None,
                f"42{no[1:]}" if wechat and paid else None,
                o.pay_fen,
                o.pay_fen if o.status in REFUND_STATES else 0,
                PaymentStatus.PAID if paid else PaymentStatus.CLOSED,
                f"wx{no}" if wechat else "",
                o.paid_at,
                o.created_at,
                o.paid_at or o.created_at,
            ]  # fmt: skip
        )
    for pk, row in zip(reserve_ids(Payment, len(rows)), rows):
        row[0] = pk
    copy_rows(Payment, PAYMENT_COLUMNS, [tuple(r) for r in rows])
    return {r[1]: r[0] for r in rows}


def _refunds(run, orders: list[VolumeOrder], payments: dict[int, int]) -> None:
    """The full refund of each refunding/refunded order: asked a day after paying, approved at
    once; arrived two hours later (refunded) or still submitted (refunding)."""
    refunding = [o for o in orders if o.status in REFUND_STATES]
    ids = reserve_ids(AfterSale, len(refunding))
    sales, refunds = [], []
    for pk, o in zip(ids, refunding):
        asked = o.paid_at + DAY
        done = o.status == OrderStatus.REFUNDED
        refund_no = f"RV{o.order_no[1:]}"
        status = AfterSale.Status.REFUNDED if done else AfterSale.Status.APPROVED
        sales.append((pk, o.id, refund_no, "不想要了", o.pay_fen, status, "staff:volume", asked, asked))
        refunds.append(
            (
                o.id,
                payments[o.id],
                pk,
                refund_no,
                o.pay_fen,
                Refund.Reason.AFTER_SALE,
                Refund.Status.SUCCESS if done else Refund.Status.SUBMITTED,
                1,
                asked,
                asked + dt.timedelta(hours=2) if done else None,
            )  # fmt: skip
        )
    sale_columns = ("id", "order_id", "refund_no", "reason", "amount_fen", "status", "decided_by", "decided_at")
    run.counts["after_sales"] += copy_rows(AfterSale, (*sale_columns, "created_at"), sales)
    refund_columns = ("order_id", "payment_id", "after_sale_id", "out_refund_no", "refund_fen", "reason", "status")
    run.counts["refunds"] += copy_rows(Refund, (*refund_columns, "attempts", "created_at", "succeeded_at"), refunds)


WALLET_COLUMNS = ("customer_id", "kind", "order_no", "reason", "amount", "ref", "created_at", "available_at")


def _wallet(run, orders: list[VolumeOrder], batch: tuple[str, list]) -> int:
    """A balance order's rows: the recharge that paid it, the payment, the refund back when
    refunded. Every paid order's points award (1 per yuan, by the database): frozen, released
    once completed + POINTS_FREEZE_DAYS (the last day's left to the job), void when refunded."""
    rows = []
    for o in orders:
        if o.pay_method == PayMethod.BALANCE and o.paid_at:
            no, fen, who = o.order_no, o.pay_fen, o.customer_id
            rows.append((who, "balance", no, "recharge", fen, f"RC{no}", o.created_at, o.created_at))
            rows.append((who, "balance", no, "pay", -fen, no, o.paid_at, o.paid_at))
            if o.status == OrderStatus.REFUNDED:
                back = o.paid_at + DAY
                rows.append((who, "balance", no, "refund", fen, f"RV{no[1:]}", back, back))
    written = copy_rows(WalletEvent, WALLET_COLUMNS, rows)
    freeze = dt.timedelta(days=settings.POINTS_FREEZE_DAYS)
    released_before = db_time(run.now - DAY - freeze)
    paid = ", ".join(f"'{s}'" for s in PAID_STATES)
    award = {
        "customer_id": "customer_id",
        "kind": "'points'",
        "reason": "'award'",
        "amount": "pay_fen / 100",
        "ref": "order_no",
        "order_no": "order_no",
        "state": "CASE WHEN status = 'refunded' THEN 'void' WHEN completed_at < %s THEN 'available' ELSE 'frozen' END",
        "created_at": "paid_at",
        "available_at": plus("completed_at", freeze),
    }
    source, params = batch
    where = f"{source} AND status IN ({paid}) AND pay_fen >= 100"
    return written + insert_select(WalletEvent, award, where, [released_before, *params])


def _followups(run, batch: tuple[str, list]) -> int:
    """Done follow-ups of every paid order (a consultation's chat too); the last hour's paid
    ones still pending (the redispatch's work)."""
    source, params = batch
    pending = "paid_at > %s AND status = 'paid'"
    recent = db_time(run.now - dt.timedelta(hours=1))
    written = 0
    for kind, only in (
        (FollowUp.Kind.SUBSCRIBE_MESSAGE, ""),
        (FollowUp.Kind.POINTS_AWARD, ""),
        (FollowUp.Kind.CHAT_OPEN, f" AND kind = '{Kind.CONSULTATION}'"),
    ):
        exprs = {
            "key": f"'{kind}:' || order_no",
            "kind": f"'{kind}'",
            "order_id": "id",
            "status": f"CASE WHEN {pending} THEN 'pending' ELSE 'done' END",
            "attempts": f"CASE WHEN {pending} THEN 0 ELSE 1 END",
            "created_at": "paid_at",
            "dispatched_at": "paid_at",
            "done_at": f"CASE WHEN {pending} THEN NULL ELSE {plus('paid_at', dt.timedelta(seconds=5))} END",
        }
        where = f"{source} AND paid_at IS NOT NULL{only}"
        written += insert_select(FollowUp, exprs, where, [recent] * 3 + params)
    return written


COMMISSION_COLUMNS = (
    "id", "order_id", "level", "distributor_id", "base_fen", "amount_fen", "reversed_fen", "status",
    "created_at", "available_at",
)  # fmt: skip
LEDGER_COLUMNS = ("distributor_id", "reason", "ref", "available_delta_fen", "frozen_delta_fen", "created_at")


def _commissions(run, orders: list[VolumeOrder]) -> None:
    """10 % to the buyer's referrer: frozen at payment, available once the order completed
    COMMISSION_FREEZE_DAYS ago (the last day's due ones left frozen for the release job),
    reversed by a refund; each with its distribution ledger rows (booked frozen, released,
    reversed)."""
    freeze = dt.timedelta(days=settings.COMMISSION_FREEZE_DAYS)
    release_before = run.now - freeze - DAY
    earning = [o for o in orders if o.paid_at and o.status in PAID_STATES and o.customer_id in run.referrer]
    rows, ledger = [], []
    for pk, o in zip(reserve_ids(Commission, len(earning)), earning):
        distributor = run.referrer[o.customer_id]
        base = o.goods_fen
        amount = base // 10
        status, available_at = Commission.Status.FROZEN, None
        ledger.append((distributor, "commission", str(pk), 0, amount, o.paid_at))
        if o.status == OrderStatus.REFUNDED:
            status = Commission.Status.REVERSED
            ledger.append((distributor, "reverse", f"RV{o.id}:{pk}", 0, -amount, o.paid_at))
        elif o.completed_at and o.completed_at < release_before:
            status, available_at = Commission.Status.AVAILABLE, o.completed_at + freeze
            ledger.append((distributor, "release", str(pk), amount, -amount, available_at))
        reversed_fen = amount if status == Commission.Status.REVERSED else 0
        rows.append((pk, o.id, 1, distributor, base, amount, reversed_fen, status, o.paid_at, available_at))
    run.counts["commissions"] += copy_rows(Commission, COMMISSION_COLUMNS, rows)
    run.counts["commission_ledger"] += copy_rows(LedgerEntry, LEDGER_COLUMNS, ledger)

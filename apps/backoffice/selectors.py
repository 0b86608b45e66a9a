"""The dashboard's figures: today's summed live in the database (one aggregate query each), the
closed days of the month read from the daily figures (``day_figures``, one row per day).

Days are Shanghai days (``TruncDate(..., tzinfo=Asia/Shanghai)``); money is integer fen.
``summary`` / ``revenue_by_day`` / ``top_products`` over any period sum the source rows: today's
part, and the reference the daily rows are held to (``tests/backoffice/test_day_figures.py``).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from apps.alerts.models import Alert
from apps.appointments.availability import windows_by_date_many
from apps.appointments.bookings import live_q
from apps.appointments.models import Booking
from apps.backoffice import day_figures, selectors_days
from apps.catalog.models import Sku, Teacher
from apps.orders.models import AfterSale, FollowUp, Order, OrderLine, OrderStatus
from apps.payments.models import Payment, PaymentStatus, ReconciliationRun, Refund

logger = logging.getLogger(__name__)

SHANGHAI = ZoneInfo("Asia/Shanghai")
#: Order statuses that count as "paid" money (paid, then maybe shipped, completed or refunded).
PAID_STATUSES = [
    OrderStatus.PAID,
    OrderStatus.SHIPPED,
    OrderStatus.COMPLETED,
    OrderStatus.REFUNDING,
    OrderStatus.REFUNDED,
]
LOW_STOCK = getattr(settings, "BACKOFFICE_LOW_STOCK", 5)  # units: an active SKU at or below is "low"


@dataclass(frozen=True)
class Period:
    """A range of Shanghai days ``[start, end)`` as aware datetimes, with its label."""

    label: str
    start: dt.datetime
    end: dt.datetime


def periods(now: dt.datetime | None = None) -> tuple[Period, Period]:
    """Today and the last 30 days (today included), in Shanghai time."""
    local = timezone.localtime(now or timezone.now(), SHANGHAI)
    today = local.replace(hour=0, minute=0, second=0, microsecond=0)
    tomorrow = today + dt.timedelta(days=1)
    return Period("今日", today, tomorrow), Period("近30天", today - dt.timedelta(days=29), tomorrow)


def summary(period: Period) -> dict:
    """Orders created, paid orders, revenue (fen), refunds (count, fen), paid rate (%), AOV (fen),
    new customers (first logins) and commissions earned (fen, not reversed; 分销).

    Revenue counts orders PAID in the period (by ``paid_at``) whatever happened after; refunds
    are refunds that SUCCEEDED in the period; commissions are those written in the period (at
    payment), less what refunds took back; paid membership (SVIP): cards sold in the period
    (fen paid less refunded) and the members whose SVIP runs now. Seven queries. Summed from
    the source rows: today's card, and the reference the daily figures are held to.
    """
    return summary_of(period.label, {**summary_counts(period), "svip_sales_fen": svip_sales_fen(period)})


def summary_counts(period: Period) -> dict:
    """The additive part of :func:`summary` over ``period``, named as ``DailyFigure``'s columns:
    ``orders`` created, ``orders_paid`` of them paid by now, ``paid_orders`` / ``revenue_fen``
    paid in it, ``refunds`` / ``refund_fen``, ``new_customers``, ``commission_fen``. Five queries."""
    from apps.accounts.models import Customer
    from apps.distribution.models import Commission

    created = Order.objects.filter(created_at__gte=period.start, created_at__lt=period.end).aggregate(
        orders=Count("id"),
        orders_paid=Count("id", filter=Q(paid_at__isnull=False)),
    )
    paid = Order.objects.filter(paid_at__gte=period.start, paid_at__lt=period.end).aggregate(
        paid_orders=Count("id"),
        revenue_fen=Coalesce(Sum("pay_fen"), 0),
    )
    refunds = Refund.objects.filter(  # of orders: a card's refund is in svip_sales_fen
        order__isnull=False,
        status=Refund.Status.SUCCESS,
        succeeded_at__gte=period.start,
        succeeded_at__lt=period.end,
    ).aggregate(refunds=Count("id"), refund_fen=Coalesce(Sum("refund_fen"), 0))
    return {
        **created,
        **paid,
        **refunds,
        "new_customers": Customer.objects.filter(created_at__gte=period.start, created_at__lt=period.end).count(),
        "commission_fen": Commission.objects.filter(created_at__gte=period.start, created_at__lt=period.end).aggregate(
            fen=Coalesce(Sum(F("amount_fen") - F("reversed_fen")), 0)
        )["fen"],
    }


def svip_sales_fen(period: Period) -> int:
    """Member cards paid in ``period``: fen paid less fen refunded (summed live: few rows, and a
    card's refund has no order to tell the daily figures by)."""
    from apps.members.models import CardPurchase

    return CardPurchase.objects.filter(paid_at__gte=period.start, paid_at__lt=period.end).aggregate(
        fen=Coalesce(Sum(F("pay_fen") - F("refunded_fen")), 0)
    )["fen"]


def summary_of(label: str, counts: dict) -> dict:
    """:func:`summary`'s card from its counts (:func:`summary_counts` plus ``svip_sales_fen``):
    the paid rate and AOV derived, the SVIP members counted now (one query)."""
    from apps.members.models import Membership

    orders, paid_orders = counts["orders"], counts["paid_orders"]
    return {
        "label": label,
        "orders": orders,
        "paid_orders": paid_orders,
        "revenue_fen": counts["revenue_fen"],
        "refunds": counts["refunds"],
        "refund_fen": counts["refund_fen"],
        "paid_rate": round(100 * counts["orders_paid"] / orders, 1) if orders else 0.0,
        "aov_fen": counts["revenue_fen"] // paid_orders if paid_orders else 0,
        "new_customers": counts["new_customers"],
        "commission_fen": counts["commission_fen"],
        "svip_sales_fen": counts["svip_sales_fen"],
        "svip_active": Membership.objects.filter(svip_expires_at__gt=timezone.now()).count(),
    }


def revenue_by_day(period: Period) -> list[dict]:
    """``[{"day": date, "orders": n, "revenue_fen": fen}]`` for every Shanghai day of ``period``
    (days without payments included as 0), one GROUP BY query."""
    rows = (
        Order.objects.filter(paid_at__gte=period.start, paid_at__lt=period.end)
        .annotate(day=TruncDate("paid_at", tzinfo=SHANGHAI))
        .values("day")
        .annotate(orders=Count("id"), revenue_fen=Sum("pay_fen"))
        .order_by("day")
    )
    by_day = {row["day"]: row for row in rows}
    days = (period.end - period.start).days
    out = []
    for i in range(days):
        day = (period.start + dt.timedelta(days=i)).date()
        row = by_day.get(day, {})
        out.append({"day": day, "orders": row.get("orders", 0), "revenue_fen": row.get("revenue_fen") or 0})
    return out


def top_products(period: Period, limit: int | None = 10) -> list[dict]:
    """Best sellers of orders paid in ``period``: ``[{"product_id", "product_name", "units", "amount_fen"}]``
    by units, then amount, then product id (one GROUP BY over order lines; ``limit=None``: all)."""
    return list(
        OrderLine.objects.filter(order__paid_at__gte=period.start, order__paid_at__lt=period.end)
        .values("product_id", product_name=F("product__name"))
        .annotate(units=Sum("quantity"), amount_fen=Sum("amount_fen"))
        .order_by("-units", "-amount_fen", "product_id")[:limit]
    )


def occupancy(start: dt.datetime, end: dt.datetime, now: dt.datetime | None = None) -> list[dict]:
    """Per active teacher who sells consultations, of ``[start, end)`` (Shanghai midnights):
    ``[{"teacher_id", "teacher_name", "bookings", "booked_minutes", "open_minutes", "rate"}]``.

    ``open_minutes``: the length of the teacher's windows on each date of the period (the date's
    override, else the weekly hours; ``availability.windows_by_date``); ``booked_minutes``: the
    length (``end - start``) of the live bookings starting in the period (holding their time:
    paid, completed, unpaid within the deadline); ``rate`` = booked / open, % (one decimal; 0.0
    with no open minutes). Four queries whatever the number of teachers."""
    now = now or timezone.now()
    teachers = list(
        Teacher.objects.filter(is_active=True)
        .filter(Q(product__isnull=False) | Q(services__isnull=False))
        .distinct()
        .order_by("pk")
    )
    taken = (
        Booking.objects.filter(live_q(now), start__gte=start, start__lt=end)
        .values("teacher_id")
        .annotate(bookings=Count("id"), booked=Sum(F("end") - F("start")))
    )
    by_teacher = {row["teacher_id"]: row for row in taken}
    first, last = timezone.localtime(start, SHANGHAI).date(), timezone.localtime(end, SHANGHAI).date()
    hours = windows_by_date_many(teacher_ids=[t.pk for t in teachers], start=first, end=last - dt.timedelta(days=1))
    rows = []
    for teacher in teachers:
        windows = hours[teacher.pk]
        open_minutes = sum(e - b for day in windows.values() for b, e in day)
        row = by_teacher.get(teacher.pk, {})
        booked = int(row["booked"].total_seconds() // 60) if row.get("booked") else 0
        rate = round(100 * booked / open_minutes, 1) if open_minutes else 0.0
        rows.append(
            {
                "teacher_id": teacher.pk,
                "teacher_name": teacher.name,
                "bookings": row.get("bookings", 0),
                "booked_minutes": booked,
                "open_minutes": open_minutes,
                "rate": rate,
            }
        )
    return rows


def todo_counts() -> dict[str, int]:
    """What staff must look at now (each one COUNT query on an indexed status):

    ``to_ship`` paid goods orders to deliver (pickups are collected, never shipped);
    ``pickups_waiting`` paid pickup orders not collected yet; ``aftersales`` refund requests waiting; ``manual`` MANUAL
    payments; ``followups_failed`` / ``refunds_failed`` FAILED rows; ``reconciliation`` days
    with differences or a failed download in the last 30 days; ``low_stock`` active SKUs at or
    below ``LOW_STOCK`` units; ``alerts_open`` alerts nobody marked handled yet.
    """
    since = timezone.localdate() - dt.timedelta(days=30)
    return {
        "to_ship": Order.objects.filter(status=OrderStatus.PAID, kind="goods", delivery="express").count(),
        "pickups_waiting": Order.objects.filter(status=OrderStatus.PAID, delivery="pickup").count(),
        "aftersales": AfterSale.objects.filter(status=AfterSale.Status.REQUESTED).count(),
        "manual": Payment.objects.filter(status=PaymentStatus.MANUAL).count(),
        "followups_failed": FollowUp.objects.filter(status=FollowUp.Status.FAILED).count(),
        "refunds_failed": Refund.objects.filter(status=Refund.Status.FAILED).count(),
        "reconciliation": ReconciliationRun.objects.filter(bill_date__gte=since)
        .exclude(status=ReconciliationRun.Status.OK)
        .count(),
        "low_stock": Sku.objects.filter(
            is_active=True, product__is_active=True, product__kind="goods", stock__lte=LOW_STOCK
        ).count(),
        "alerts_open": Alert.objects.filter(resolved_at__isnull=True).count(),
        "withdrawals_pending": _withdrawals_pending(),
    }


def _withdrawals_pending() -> int:
    """Withdrawals waiting for a finance decision (distribution)."""
    from apps.distribution.models import Withdrawal

    return Withdrawal.objects.filter(status=Withdrawal.Status.PENDING).count()


#: the dashboard's period figures (today, the month, its revenue line, top products, slots) are
#: at most this many seconds old; the to-do counts are always live. 0: never cached.
DASHBOARD_CACHE_SECONDS = 60
DASHBOARD_CACHE_KEY = "backoffice:dashboard:figures"


def period_figures(now: dt.datetime | None = None) -> dict:
    """The dashboard's figures of today and the last 30 days (see the functions above): today
    summed live from its rows, the 29 closed days before it read from the daily figures
    (``apps.backoffice.day_figures``: one row a day, summed again when a flow changes it)."""
    today, month = periods(now)
    week_end = today.start + dt.timedelta(days=7)
    counts = {**summary_counts(today), "svip_sales_fen": svip_sales_fen(today)}
    first, last = month.start.date(), today.start.date() - dt.timedelta(days=1)
    closed = selectors_days.closed_days(first, last)
    month_counts = {key: counts[key] + sum(row[key] for row in closed.values()) for key in day_figures.FIGURES}
    line = [*closed.items(), (today.start.date(), counts)]
    return {
        "today": summary_of(today.label, counts),
        "month": summary_of(month.label, {**month_counts, "svip_sales_fen": svip_sales_fen(month)}),
        "revenue_by_day": [
            {"day": day, "orders": row["paid_orders"], "revenue_fen": row["revenue_fen"]} for day, row in line
        ],
        "top_products": selectors_days.best_sellers(first, last, top_products(today, limit=None)),
        "occupancy_past": occupancy(month.start, today.end),
        "occupancy_next": occupancy(today.start, week_end),
    }


def dashboard(now: dt.datetime | None = None) -> dict:
    """Everything the admin index shows; about 12 queries. Without ``now`` the period figures
    come from the cache when computed in the last ``DASHBOARD_CACHE_SECONDS`` (a million orders
    take seconds to sum; the key is dropped with the rest of the cache, Redis down: computed)."""
    figures = None
    if now is None and DASHBOARD_CACHE_SECONDS:
        try:
            figures = cache.get(DASHBOARD_CACHE_KEY)
        except Exception:  # noqa: BLE001 - Redis down: compute them
            logger.warning("dashboard cache unavailable", exc_info=True)
    if figures is None:
        figures = period_figures(now)
        if now is None and DASHBOARD_CACHE_SECONDS:
            try:
                cache.set(DASHBOARD_CACHE_KEY, figures, timeout=DASHBOARD_CACHE_SECONDS)
            except Exception:  # noqa: BLE001
                logger.warning("dashboard cache unavailable", exc_info=True)
    return {**figures, "todo": todo_counts()}

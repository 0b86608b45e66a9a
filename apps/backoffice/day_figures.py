"""The dashboard's daily figures: a row per closed Shanghai day, summed again whole, never incremented.

A closed day (before today, Shanghai) is read from :class:`DailyFigure` and its best sellers from
:class:`DailyProductSales`; today is summed live by the selectors. :func:`days_refresh` sums days
from the source rows and UPSERTs them on the day's UNIQUE key, the days' rows locked (idempotent).
What changes a closed day reaches it after commit through the ``day_figures`` follow-up
(:func:`followup_day_figures`: the payment of an order created on a closed day, a refund of one
paid on a closed day). Beat, 00:10 Shanghai (:func:`days_close`), sums the last two closed days
again and fills every closed day without a row; ``manage.py day_figures`` sums every day again.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import Count, F, Min, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from apps.accounts.models import Customer
from apps.backoffice.models import DailyFigure, DailyProductSales
from apps.distribution.models import Commission
from apps.orders.models import FollowUp, Order, OrderLine
from apps.payments.models import Refund

SHANGHAI = ZoneInfo("Asia/Shanghai")
FIGURES = [
    "orders",
    "orders_paid",
    "paid_orders",
    "revenue_fen",
    "refunds",
    "refund_fen",
    "new_customers",
    "commission_fen",
]
CLOSE_AGAIN_DAYS = 2  # WeChat retries a payment's notification for about 24 h: a day and the next
CHUNK_DAYS = 31  # a backfill sums (and locks) at most this many days per transaction


def day_of(moment: dt.datetime) -> dt.date:
    """The Shanghai date of an aware datetime."""
    return timezone.localtime(moment, SHANGHAI).date()


def midnight(day: dt.date) -> dt.datetime:
    """The aware Shanghai midnight starting ``day``."""
    return dt.datetime.combine(day, dt.time(0), tzinfo=SHANGHAI)


def _by_day(queryset, field: str, first: dt.date, last: dt.date, **aggregates) -> dict[dt.date, dict]:
    """``{day: {aggregate: value}}`` of ``queryset`` grouped by the Shanghai day of ``field``."""
    rows = (
        queryset.filter(**{f"{field}__gte": midnight(first), f"{field}__lt": midnight(last + dt.timedelta(days=1))})
        .annotate(day=TruncDate(field, tzinfo=SHANGHAI))
        .values("day")
        .annotate(**aggregates)
        .order_by()
    )
    return {row.pop("day"): row for row in rows}


def days_values(first: dt.date, last: dt.date) -> tuple[dict[dt.date, dict], list[DailyProductSales]]:
    """The figures of every day ``first .. last`` (``{day: {figure: value}}``, 0 where nothing
    happened) and the per-product sales of those days (unsaved rows). Six queries."""
    parts = [
        _by_day(
            Order.objects,
            "created_at",
            first,
            last,
            orders=Count("id"),
            orders_paid=Count("id", filter=Q(paid_at__isnull=False)),
        ),
        _by_day(Order.objects, "paid_at", first, last, paid_orders=Count("id"), revenue_fen=Sum("pay_fen")),
        _by_day(
            Refund.objects.filter(order__isnull=False, status=Refund.Status.SUCCESS),  # a card's: live (SVIP)
            "succeeded_at",
            first,
            last,
            refunds=Count("id"),
            refund_fen=Sum("refund_fen"),
        ),
        _by_day(Customer.objects, "created_at", first, last, new_customers=Count("id")),
        _by_day(Commission.objects, "created_at", first, last, commission_fen=Sum(F("amount_fen") - F("reversed_fen"))),
    ]
    values = {}
    for i in range((last - first).days + 1):
        day = first + dt.timedelta(days=i)
        values[day] = dict.fromkeys(FIGURES, 0)
        for part in parts:
            values[day].update({k: v or 0 for k, v in part.get(day, {}).items()})
    lines = (
        OrderLine.objects.filter(
            order__paid_at__gte=midnight(first), order__paid_at__lt=midnight(last + dt.timedelta(days=1))
        )
        .annotate(day=TruncDate("order__paid_at", tzinfo=SHANGHAI))
        .values("day", "product_id")
        .annotate(units=Sum("quantity"), amount_fen=Sum("amount_fen"))
        .order_by()
    )
    return values, [DailyProductSales(**row) for row in lines]


def days_refresh(first: dt.date, last: dt.date, *, today: dt.date | None = None) -> int:
    """Sum the closed days ``first .. last`` again and store them (rows UPSERTed on ``day``,
    the days' product rows replaced); days from today on are left alone. Returns the days
    stored. Its own transaction (or the caller's): the days' rows stay locked until its commit."""
    last = min(last, (today or timezone.localdate()) - dt.timedelta(days=1))
    if last < first:
        return 0
    with transaction.atomic():
        days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
        DailyFigure.objects.bulk_create([DailyFigure(day=day) for day in days], ignore_conflicts=True)
        # The days' rows locked: two refreshes of a day run one after the other, and the later one
        # reads every commit before it (READ COMMITTED takes each statement's snapshot after the lock).
        list(DailyFigure.objects.select_for_update().filter(day__gte=first, day__lte=last).order_by("day").values("pk"))
        values, products = days_values(first, last)
        DailyFigure.objects.bulk_create(
            [DailyFigure(day=day, computed_at=timezone.now(), **figures) for day, figures in values.items()],
            update_conflicts=True,
            unique_fields=["day"],
            update_fields=[*FIGURES, "computed_at"],
        )
        DailyProductSales.objects.filter(day__gte=first, day__lte=last).delete()
        DailyProductSales.objects.bulk_create(products, batch_size=2000)
    return len(days)


def days_refresh_all(first: dt.date | None = None, *, today: dt.date | None = None) -> int:
    """Sum every closed day from ``first`` (default: the first order's or customer's day) to
    yesterday again, :data:`CHUNK_DAYS` per transaction; returns the days stored."""
    today = today or timezone.localdate()
    first = first or first_day()
    done = 0
    while first and first < today:
        last = first + dt.timedelta(days=CHUNK_DAYS - 1)
        done += days_refresh(first, last, today=today)
        first = last + dt.timedelta(days=1)
    return done


def first_day() -> dt.date | None:
    """The Shanghai day of the first order or customer (None in an empty shop): the days before hold nothing."""
    moments = [Order.objects.aggregate(m=Min("created_at"))["m"], Customer.objects.aggregate(m=Min("created_at"))["m"]]
    moments = [m for m in moments if m]
    return day_of(min(moments)) if moments else None


def days_missing(first: dt.date, last: dt.date) -> list[tuple[dt.date, dt.date]]:
    """The runs ``(from, to)`` of days in ``first .. last`` without a row, oldest first."""
    have = set(DailyFigure.objects.filter(day__gte=first, day__lte=last).values_list("day", flat=True))
    runs: list[list[dt.date]] = []
    for i in range((last - first).days + 1):
        day = first + dt.timedelta(days=i)
        if day in have:
            continue
        if runs and runs[-1][1] == day - dt.timedelta(days=1):
            runs[-1][1] = day
        else:
            runs.append([day, day])
    return [(a, b) for a, b in runs]


def days_close(*, now: dt.datetime | None = None) -> int:
    """Beat, 00:10 Shanghai: the last :data:`CLOSE_AGAIN_DAYS` closed days summed again (what
    committed after their midnight, payments WeChat dated on them) and every closed day since
    the first order without a row filled; returns the days stored."""
    today = day_of(now or timezone.now())
    yesterday = today - dt.timedelta(days=1)
    done = days_refresh(today - dt.timedelta(days=CLOSE_AGAIN_DAYS), yesterday, today=today)
    first = first_day()
    for a, b in days_missing(first, yesterday) if first else []:
        done += days_refresh_all(a, today=min(today, b + dt.timedelta(days=1)))
    return done


# --- what changes a closed day: recorded in the flow's transaction, summed after its commit --------


def paid_kinds(order: Order) -> list[str]:
    """``followups.PAID_KINDS`` entry: a ``day_figures`` follow-up when the order was created on
    a closed day. A payment WeChat dates on a closed day (``paid_at`` is its ``time_end``) is
    delivered within WeChat's 24 h of retries, so :func:`days_close` summing the last
    :data:`CLOSE_AGAIN_DAYS` days again covers it, and a payment records no follow-up for it."""
    return [FollowUp.Kind.DAY_FIGURES] if order.created_at and day_of(order.created_at) < timezone.localdate() else []


def refund_succeeded_hook(*, order: Order) -> None:
    """``apps.payments.hooks.REFUND_SUCCEEDED`` entry: an order paid on a closed day has its
    commissions' reversed share on a closed day; one follow-up per successful refund of it."""
    from apps.orders import followups

    if order.paid_at is None or day_of(order.paid_at) >= timezone.localdate():
        return
    n = Refund.objects.filter(order_id=order.pk, status=Refund.Status.SUCCESS).count()
    followups.followup_record(order=order, kind=FollowUp.Kind.DAY_FIGURES, key=f"day_figures:{order.order_no}:r{n}")


def followup_day_figures(followup: FollowUp) -> None:
    """Outbox handler of ``day_figures``: every closed day the order's figures fall on (its
    creation, payment, refunds, commissions) summed again, one after the other."""
    order = followup.order
    moments = [order.created_at, order.paid_at]
    moments += Refund.objects.filter(order_id=order.pk, succeeded_at__isnull=False).values_list(
        "succeeded_at", flat=True
    )
    moments += Commission.objects.filter(order_id=order.pk).values_list("created_at", flat=True)
    for day in sorted({day_of(m) for m in moments if m}):
        days_refresh(day, day)

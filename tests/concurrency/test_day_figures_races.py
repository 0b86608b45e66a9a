"""Races of the dashboard's daily figures (PostgreSQL): a day summed again while an older sum of
it is still being written ends with the newer figures, never the older ones."""

import datetime as dt
import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from apps.backoffice import day_figures
from apps.backoffice.models import DailyFigure
from apps.orders.models import Order, OrderStatus

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_sum_waiting_for_the_days_lock_reads_what_committed_before_it(make_customer, monkeypatch):
    day = timezone.localdate() - dt.timedelta(days=5)
    noon = day_figures.midnight(day) + dt.timedelta(hours=12)
    order = Order.objects.create(
        order_no="R1", order_key="R1", customer=make_customer(), goods_fen=900, pay_fen=900, pay_deadline=noon
    )
    Order.objects.filter(pk=order.pk).update(created_at=noon)
    assert day_figures.days_refresh(day, day) == 1
    summed, go = threading.Event(), threading.Event()
    real = day_figures.days_values

    def paused(first, last):  # the older refresh stops between its sums and its write
        out = real(first, last)
        if threading.current_thread().name == "older":
            summed.set()
            go.wait(20)
        return out

    monkeypatch.setattr(day_figures, "days_values", paused)

    def refresh():
        try:
            day_figures.days_refresh(day, day)
        finally:
            connection.close()

    older = threading.Thread(target=refresh, name="older")
    older.start()
    assert summed.wait(20)  # it read the day unpaid
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.PAID, paid_at=noon)  # the payment commits
    newer = threading.Thread(target=refresh, name="newer")  # its follow-up
    newer.start()
    time.sleep(0.5)
    assert newer.is_alive()  # waits for the day's row, then sums it again
    go.set()
    older.join(30)
    newer.join(30)
    row = DailyFigure.objects.get(day=day)
    assert (row.orders, row.orders_paid, row.paid_orders, row.revenue_fen) == (1, 1, 1, 900)

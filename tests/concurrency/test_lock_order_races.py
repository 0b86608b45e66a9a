"""A balance payment and a balance refund of the same customer meet, on PostgreSQL.

Paying from the balance once counted the product's ``sales`` and then debited the customer;
the balance refund credited the customer and then took the units out of ``sales``. Two such
transactions holding one row each waited for each other until PostgreSQL killed one
(``deadlock detected``, an HTML 500). Every path now takes its row locks in the one order
written down in ``starmall/locking.py``; these tests make the two meet at the worst moment and
check that both go through, without a deadlock and without a retry, with exact money and counters.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from django.db import connection, connections

from apps.accounts.models import Address, Customer, WalletEvent
from apps.catalog.models import Product
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order, OrderStatus
from apps.payments import balance, refunds
from apps.payments.models import Refund

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PRICE = 6000  # fen; one unit per order, below the free-freight threshold
FREIGHT = 1000  # fen: the default template's first piece (tests/conftest.py freight_default)
BALANCE = 10_000_000  # fen the customer starts with
ROUNDS = 30  # barrier rounds of the free-running test
INTERLEAVED_ROUNDS = 3  # forced worst-case interleavings


def _setup(make_customer, make_sku, pairs: int):
    """One customer and one product; ``pairs`` of (order paid from the balance whose full refund
    is approved and waiting for the worker, unpaid order of the same product)."""
    sku = make_sku(price_fen=PRICE, stock=1000)
    customer = make_customer(balance_fen=BALANCE)
    address = Address.objects.create(
        customer=customer, name="买家", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )

    def order() -> Order:
        key = order_confirm(customer=customer, address_id=address.pk, items=[{"sku_id": sku.pk, "quantity": 1}])[
            "order_key"
        ]
        return order_create(customer=customer, order_key=key)[0]

    setups = []
    for _ in range(pairs):
        paid = order()
        balance.payment_balance_pay(order_no=paid.order_no, customer_id=customer.pk)
        sale = refunds.refund_request(order_no=paid.order_no, customer_id=customer.pk, reason="不想要了")
        refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:cs")
        setups.append((refund, order()))
    return customer, sku, setups


def _assert_exact(customer: Customer, sku) -> None:
    """Every refunded order came back in full, every unpaid one got paid: balance = start -
    what the paid orders cost; the ledger adds up to it; ``sales`` counts the paid units."""
    customer.refresh_from_db()
    kept = sum(Order.objects.filter(customer=customer, status=OrderStatus.PAID).values_list("pay_fen", flat=True))
    assert kept == Order.objects.filter(status=OrderStatus.REFUNDED).count() * (PRICE + FREIGHT)
    assert customer.balance_fen == BALANCE - kept
    ledger = sum(WalletEvent.objects.filter(customer=customer, kind="balance").values_list("amount", flat=True))
    assert ledger == customer.balance_fen - BALANCE
    assert Product.objects.get(pk=sku.product_id).sales == Order.objects.filter(status=OrderStatus.PAID).count()
    assert not Refund.objects.exclude(status=Refund.Status.SUCCESS).exists()
    assert not Order.objects.filter(status__in=(OrderStatus.REFUNDING, OrderStatus.UNPAID)).exists()


def _no_retries(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "starmall.locking"]


def _pid() -> int:
    connection.ensure_connection()
    return connection.connection.info.backend_pid


def _waiting_for_a_lock(pid: int) -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def _until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def _meet_with_the_refund_held_up(refund: Refund, unpaid: Order, customer: Customer) -> dict[str, object]:
    """Run the refund and the payment in two threads: a third connection holds the refunded
    order's row until the refund waits for it and the payment has run into the refund (or
    finished); returns what each side returned or raised."""
    blocker = connections.create_connection("default")
    blocker.set_autocommit(False)
    with blocker.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {Order._meta.db_table} WHERE id = %s FOR UPDATE", [refund.order_id])
    results: dict[str, object] = {}
    pids: dict[str, int] = {}

    def run(name, fn):
        try:
            pids[name] = _pid()
            results[name] = fn()
        except BaseException as exc:  # noqa: BLE001 - the test reads what each side raised
            results[name] = exc
        finally:
            connection.close()

    refund_thread = threading.Thread(target=run, args=("refund", lambda: refunds.refund_execute(refund_id=refund.pk)))
    pay_thread = threading.Thread(
        target=run,
        args=("pay", lambda: balance.payment_balance_pay(order_no=unpaid.order_no, customer_id=customer.pk)),
    )
    try:
        refund_thread.start()
        assert _until(lambda: "refund" in pids and _waiting_for_a_lock(pids["refund"])), "refund never waited"
        pay_thread.start()
        _until(lambda: "pay" in results or ("pay" in pids and _waiting_for_a_lock(pids["pay"])))
    finally:
        blocker.rollback()
        blocker.close()
    refund_thread.join(20)
    pay_thread.join(20)
    return results


def test_balance_pay_meets_balance_refund_when_the_refund_is_held_up(make_customer, make_sku, caplog):
    """The worst interleaving, forced: a third connection holds the refunded order's row (staff
    shipping or rescheduling it), so the refund stops right there; the payment runs into it
    meanwhile; then the third connection lets go. In the old lock order the refund already held
    the customer's row (credited) while the payment held the product's ``sales`` row: a
    deadlock every time."""
    caplog.set_level(logging.WARNING, logger="starmall.locking")
    customer, sku, setups = _setup(make_customer, make_sku, INTERLEAVED_ROUNDS)
    for refund, unpaid in setups:
        results = _meet_with_the_refund_held_up(refund, unpaid, customer)

        assert results["refund"] == Refund.Status.SUCCESS, results
        assert isinstance(results["pay"], Order) and results["pay"].status == OrderStatus.PAID, results
    assert _no_retries(caplog) == []
    _assert_exact(customer, sku)


def test_balance_pays_and_refunds_of_one_customer_racing_for_many_rounds(
    make_customer, make_sku, race, caplog, settings
):
    """Free-running: each round a payment and a refund of the same customer and product are
    released together by a Barrier; none may deadlock, fail or need a retry."""
    settings.MAX_UNPAID_ORDERS = ROUNDS  # the rounds' unpaid orders are made up front
    caplog.set_level(logging.WARNING, logger="starmall.locking")
    customer, sku, setups = _setup(make_customer, make_sku, ROUNDS)
    failures = []
    for refund, unpaid in setups:
        results = race(
            lambda i, refund=refund, unpaid=unpaid: (
                refunds.refund_execute(refund_id=refund.pk)
                if i == 0
                else balance.payment_balance_pay(order_no=unpaid.order_no, customer_id=customer.pk)
            ),
            2,
        )
        if results[0] != Refund.Status.SUCCESS or not isinstance(results[1], Order):
            failures.append(results)
    assert failures == []
    assert _no_retries(caplog) == []
    _assert_exact(customer, sku)

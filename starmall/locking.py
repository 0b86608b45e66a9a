"""Row locks: the one order every transaction takes them in, and one retry for a transaction
the database still gave up on.

A transaction that moves money, stock, places or counters locks rows (a conditional UPDATE, an UPDATE
or DELETE that changes the row, ``SELECT ... FOR UPDATE``) in THE LOCK ORDER written below, steps 1-8,
and never locks a row of an earlier step after one of a later step; each site that takes locks says in
a comment where it stands. :func:`retry_on_lock_conflict` runs a whole transaction once more after a
conflict the order cannot rule out (deadlock, serialization failure, SQLite's "database is locked"); a
second raises :class:`starmall.errors.DatabaseBusy` (503 ``service_unavailable``, ``Retry-After``).
"""

# THE LOCK ORDER. A row already held may be written again at any time; steps not needed are skipped.
# 1. the order (``Order``: one per transaction, in a batch too, except the new orders that
#    apps/orders/create.py's ``orders_create`` makes together: it inserts them all first, by customer and
#    key, then takes the later steps for all of them: customers in id order, every allowance, the sale,
#    the SKUs);
# 2. that order's own records: its ``Payment``, ``AfterSale``, ``Refund`` and ``RefundBatchItem`` rows (a
#    ``Recharge`` stands here: it is the customer's payment record). Paths holding the order's lock take
#    them in any order; the refund worker's paths that do not (``refund_mark_failed``, ``refund_retry``)
#    take Refund, then AfterSale, then RefundBatchItem;
# 3. places: the teacher's row (``bookings.teacher_lock``: every booking write of the teacher queues there
#    first), the order's ``Booking``, then ``Slot`` rows in id order;
# 4. the customer's ``Coupon``;
# 5. the customer (``Customer``: balance, points, the per-customer caps and address and cart limits), then
#    the customer's own rows: ledger (``WalletEvent``), cart lines, addresses;
# 6. the flash sale: the customer's allowance (``FlashSalePurchase``), then the sale (``FlashSale``); a
#    points-mall item's stock stands here (apps/points_mall/services.py);
# 7. SKU stock (``Sku``) in id order;
# 8. product sales counters (``Product.sales``) in id order.
# Why: from rows of one order, through rows one customer's orders share, to rows every buyer shares; the
# hotter the row, the later it is locked and the shorter it is held (in a 秒杀 the sale, SKU and product
# rows are locked right before commit). Two transactions that follow it cannot wait for each other in a
# circle. Rows only inserted (events, ledger rows, follow-ups, alerts, notifications) are not waited for,
# except two inserts of one UNIQUE key: each such key is the transaction's first write (``Order.order_key``,
# ``SignIn``) or is written under a lock of steps 1-5 that already lines up its competitors (a payment's
# ledger row under its order, a refund's under its refund row, a recharge's under the recharge row). A
# claimed queue row (follow-up, reminder, notice) is written at the end of its worker's transaction.
# tests/concurrency/test_lock_order_races.py makes a balance payment and a balance refund of one customer
# meet at the worst moment.

from __future__ import annotations

import functools
import logging
import random
import sqlite3
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import OperationalError, connection

from starmall.errors import DatabaseBusy

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

RETRY_PAUSE_SECONDS = (0.01, 0.05)  # a random pause before the retry: let the winner commit
_SQLITE_LOCKED = ("database is locked", "database table is locked")


def _pg_conflicts() -> tuple[type[BaseException], ...]:
    try:
        from psycopg import errors
    except ImportError:  # an SQLite-only installation
        return ()
    return errors.DeadlockDetected, errors.SerializationFailure


def is_lock_conflict(exc: BaseException) -> bool:
    """True when ``exc`` says the database rolled the transaction back because of other
    transactions' locks: psycopg's ``DeadlockDetected`` (40P01) or ``SerializationFailure``
    (40001), raised as they are or wrapped in Django's ``OperationalError``, or SQLite's
    "database is locked". Anything else (a broken connection, a syntax error) is not."""
    seen = 0
    while exc is not None and seen < 5:  # Django raises its wrapper "from" the driver's error
        if isinstance(exc, _pg_conflicts()):
            return True
        if isinstance(exc, (sqlite3.OperationalError, OperationalError)) and str(exc).startswith(_SQLITE_LOCKED):
            return True
        exc, seen = exc.__cause__, seen + 1
    return False


def retry_on_lock_conflict(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` (which opens its own whole transaction) again once after a lock conflict.

    A second conflict raises ``DatabaseBusy`` from it. Called inside a transaction that
    someone else opened, ``fn`` runs once and a conflict propagates: that outer transaction
    is what was lost and only its owner can run it again. Only for functions that send nothing
    out of the process before commit: a rolled-back try's ``on_commit`` callbacks are dropped,
    and a WeChat call made before the transaction is not repeated.
    """

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not is_lock_conflict(exc):
                raise
            logger.warning(
                "%s lost a lock conflict, running it once more: %s", fn.__qualname__, str(exc).splitlines()[0]
            )
        time.sleep(random.uniform(*RETRY_PAUSE_SECONDS))
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not is_lock_conflict(exc):
                raise
            logger.warning("%s lost a lock conflict twice: answered busy", fn.__qualname__)
            raise DatabaseBusy() from exc

    return run

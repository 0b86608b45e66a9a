"""Printing's reads for other paths: whether a payment prints a ticket, from this process's memory.

Every paid order asks :func:`prints_on_payment` in its paying transaction (the notification's
path). The answer — some active printer prints on payment — changes when staff edit printers,
almost never, so each process reads it from the database at most once per
:data:`PRINT_ON_PAYMENT_SECONDS` and keeps it in memory: never from Redis, so a hung Redis cannot
hold a payment's answer (``tests/faults/test_followup_faults.py``). A printer saved or deleted
forgets it in this process now and after commit; other processes see the edit within the
interval.
"""

from __future__ import annotations

import time

from django.db import transaction

from apps.printing.models import Printer

PRINT_ON_PAYMENT_SECONDS = 10  # the longest a printer edit can go unseen by payments

_remembered: tuple[float, bool] | None = None  # (until, monotonic seconds; the answer)


def prints_on_payment() -> bool:
    """True when some active printer prints on payment: from memory, or one indexed EXISTS
    remembered for :data:`PRINT_ON_PAYMENT_SECONDS`."""
    global _remembered
    now = time.monotonic()
    remembered = _remembered
    if remembered is not None and now < remembered[0]:
        return remembered[1]
    answer = Printer.objects.filter(active=True, print_on_payment=True).exists()
    _remembered = (now + PRINT_ON_PAYMENT_SECONDS, answer)
    return answer


def print_on_payment_cache_clear() -> None:
    """A printer is being written: forget the answer now and again after commit (a payment
    reading between the two would remember the old one)."""
    print_on_payment_cache_clear_now()
    transaction.on_commit(print_on_payment_cache_clear_now)


def print_on_payment_cache_clear_now() -> None:
    """Forget the remembered answer (this process)."""
    global _remembered
    _remembered = None

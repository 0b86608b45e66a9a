"""Printing's reads for other paths: whether a payment prints a ticket, from the cache.

Every paid order asks :func:`prints_on_payment` in its paying transaction (the notification's
path). The answer — some active printer prints on payment — changes when staff edit printers,
almost never, so it is cached in Redis for :data:`PRINT_ON_PAYMENT_SECONDS` and dropped on every
saved or deleted printer, now and after commit (``starmall.cache_drop``: a reader racing the
commit may cache the old answer back; the timeout bounds that). Redis errors: the database
answers.
"""

from __future__ import annotations

import logging

from django.core.cache import cache

from apps.printing.models import Printer
from starmall import cache_drop

logger = logging.getLogger(__name__)

PRINT_ON_PAYMENT_KEY = "printing:print_on_payment:v1"
PRINT_ON_PAYMENT_SECONDS = 10  # the longest a printer edit can go unseen by payments


def prints_on_payment() -> bool:
    """True when some active printer prints on payment: one Redis GET, or on a miss one indexed
    EXISTS whose answer is cached."""
    try:
        cached = cache.get(PRINT_ON_PAYMENT_KEY)
    except Exception:  # noqa: BLE001 - Redis down or hung: the database answers
        logger.warning("print-on-payment cache unavailable", exc_info=True)
        return _from_db()
    if cached is not None:
        return cached == 1
    answer = _from_db()
    try:
        cache.set(PRINT_ON_PAYMENT_KEY, int(answer), timeout=PRINT_ON_PAYMENT_SECONDS)
    except Exception:  # noqa: BLE001
        logger.warning("could not cache the print-on-payment setting", exc_info=True)
    return answer


def _from_db() -> bool:
    return Printer.objects.filter(active=True, print_on_payment=True).exists()


def print_on_payment_cache_clear() -> None:
    """A printer is being written: drop the cached answer now and again after commit."""
    cache_drop.drop_now_and_after_commit([PRINT_ON_PAYMENT_KEY])

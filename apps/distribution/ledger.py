"""The only writer of a distributor's totals: each change with its ledger row.

:func:`ledger_book` inserts a :class:`LedgerEntry` (UNIQUE ``(reason, ref)``: a replay books
nothing) and moves the totals by the same deltas in one UPDATE; with ``guard_available`` the
UPDATE is conditional (``available_fen >= n``), so racing withdrawals never take the available
commission below zero. The distributor row comes after the order, the commission and the
withdrawal rows in a transaction's lock order (``starmall/locking.py`` step 5: it is the
customer's own money row).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from apps.accounts.exceptions import InsufficientBalance
from apps.distribution.models import Distributor, LedgerEntry


@transaction.atomic(savepoint=False)
def ledger_book(
    *,
    distributor_id: int,
    reason: str,
    ref: str,
    available: int = 0,
    frozen: int = 0,
    withdrawn: int = 0,
    guard_available: bool = False,
) -> bool:
    """Book one change (deltas in fen) once; False if ``(reason, ref)`` was booked before.

    ``guard_available``: the available total must cover ``-available`` (a withdrawal), else
    InsufficientBalance and nothing changes (the caller's transaction rolls back with it).
    """
    try:
        with transaction.atomic():  # savepoint: a replay must not spoil the caller's transaction
            LedgerEntry.objects.create(
                distributor_id=distributor_id,
                reason=reason,
                ref=ref,
                available_delta_fen=available,
                frozen_delta_fen=frozen,
                withdrawn_delta_fen=withdrawn,
            )
    except IntegrityError:
        return False
    rows = Distributor.objects.filter(pk=distributor_id)
    if guard_available and available < 0:
        rows = rows.filter(available_fen__gte=-available)
    if (
        rows.update(
            available_fen=F("available_fen") + available,
            frozen_fen=F("frozen_fen") + frozen,
            withdrawn_fen=F("withdrawn_fen") + withdrawn,
        )
        != 1
    ):
        raise InsufficientBalance("可提现佣金不足。", amount_fen=-available)
    return True

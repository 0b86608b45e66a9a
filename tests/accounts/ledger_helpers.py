"""The wallet's one invariant, for the accounts tests: the stored totals are the ledger's sums."""

from __future__ import annotations

from django.db.models import Sum

from apps.accounts.models import Customer, WalletEvent
from apps.accounts.selectors import points_frozen


def assert_ledger_matches(customer_id: int) -> None:
    """The stored totals are the ledger's sums (DESIGN.md: the totals are a cache of the ledger):
    balance_fen, available points, frozen points; and no balance row is ever frozen."""
    customer = Customer.objects.get(pk=customer_id)
    rows = WalletEvent.objects.filter(customer_id=customer_id)

    def total(**where) -> int:
        return rows.filter(**where).aggregate(s=Sum("amount"))["s"] or 0

    assert customer.balance_fen == total(kind="balance")
    assert customer.points == total(kind="points", state="available")
    assert points_frozen(customer_id=customer_id) == total(kind="points", state="frozen")
    assert not rows.filter(kind="balance").exclude(state="available").exists()

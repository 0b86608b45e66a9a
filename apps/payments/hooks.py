"""Reactions of higher apps to payment events, without payments importing them.

An app above payments (distribution: reversing commissions) appends a callable to
:data:`REFUND_SUCCEEDED` in its ``AppConfig.ready``. ``refunds.refund_succeeded`` calls each
with ``order=`` inside its transaction, the order's row locked (step 1 of
``starmall/locking.py``), after the refund became SUCCESS: the reaction commits with the
refund or not at all. A hook must be idempotent (a refund is SUCCESS once, but hooks may be
re-run by their own sweeps).
"""

from __future__ import annotations

from collections.abc import Callable

REFUND_SUCCEEDED: list[Callable[..., None]] = []


def refund_succeeded_run(*, order) -> None:
    """Call every registered refund hook (errors roll the refund's transaction back)."""
    for hook in REFUND_SUCCEEDED:
        hook(order=order)

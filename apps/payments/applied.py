"""The one result type of applying what WeChat confirmed (a payment, a recharge, a refund).

Shared by ``services.payment_apply_paid`` and ``recharges.recharge_apply_paid``; its values are
``Notification.Outcome`` values, so a notification row records it as is.
"""

from enum import Enum


class Applied(str, Enum):
    """What applying a confirmed WeChat payment, recharge or refund did."""

    APPLIED = "applied"  # unpaid -> paid (order, recharge) / refund confirmed
    DUPLICATE = "duplicate"  # applied before: nothing done
    LATE = "late"  # order no longer unpaid (cancelled / paid otherwise): money needs refunding

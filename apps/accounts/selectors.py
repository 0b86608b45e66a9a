"""Reads for customers."""

from django.db.models import Q, QuerySet, Sum
from django.utils import timezone

from apps.accounts.models import Address, Coupon, Customer, WalletEvent


def address_list(*, customer: Customer) -> QuerySet[Address]:
    """The customer's addresses, default first."""
    return customer.addresses.all()


def address_get(*, customer: Customer, address_id: int) -> Address | None:
    """One of the customer's addresses, or None (another customer's address is None too)."""
    return next(iter(Address.objects.filter(pk=address_id, customer=customer).order_by()[:1]), None)


def coupon_usable(*, customer_id: int, coupon_id: int) -> Coupon | None:
    """The customer's coupon if it is available and not expired, else None."""
    return coupons_usable(customer_id=customer_id).filter(pk=coupon_id).first()


def coupons_usable(*, customer_id: int) -> QuerySet[Coupon]:
    """The customer's coupons usable now: available, ``valid_from`` passed, not expired."""
    return coupons_usable_many(customer_ids=[customer_id])


def coupons_usable_many(*, customer_ids: list[int]) -> QuerySet[Coupon]:
    """:func:`coupons_usable` of several customers, in one query."""
    now = timezone.now()
    return Coupon.objects.filter(
        Q(valid_from__isnull=True) | Q(valid_from__lte=now),
        customer_id__in=customer_ids,
        status=Coupon.Status.AVAILABLE,
        valid_until__gt=now,
    ).select_related("template")


def coupons_of(*, customer_id: int, status: str | None) -> QuerySet[Coupon]:
    """``GET /me/coupons``: ``usable`` (available, not expired: also those not valid yet),
    ``used``, ``expired`` (available but past ``valid_until``), or all; newest first."""
    qs = Coupon.objects.filter(customer_id=customer_id).order_by("-id")
    now = timezone.now()
    if status == "usable":
        qs = qs.filter(status=Coupon.Status.AVAILABLE, valid_until__gt=now)
    elif status == "used":
        qs = qs.filter(status=Coupon.Status.USED)
    elif status == "expired":
        qs = qs.filter(status=Coupon.Status.AVAILABLE, valid_until__lte=now)
    return qs


def address_default(*, customer: Customer) -> Address | None:
    """The address a goods order uses when none is chosen: the default one, else the newest."""
    return customer.addresses.order_by("-is_default", "-id").first()


def points_frozen(*, customer_id: int) -> int:
    """Points the customer earned that are still frozen (sum of FROZEN award rows)."""
    return (
        WalletEvent.objects.filter(
            customer_id=customer_id, kind=WalletEvent.Kind.POINTS, state=WalletEvent.State.FROZEN
        ).aggregate(total=Sum("amount"))["total"]
        or 0
    )


def wallet_ledger(*, customer_id: int, kind: str) -> QuerySet[WalletEvent]:
    """The customer's balance or points ledger (``kind``), newest first."""
    return WalletEvent.objects.filter(customer_id=customer_id, kind=kind).order_by("-id")

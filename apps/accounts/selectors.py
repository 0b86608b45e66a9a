"""Reads for customers."""

from django.db.models import QuerySet
from django.utils import timezone

from apps.accounts.models import Address, Coupon, Customer


def address_list(*, customer: Customer) -> QuerySet[Address]:
    """The customer's addresses, default first."""
    return customer.addresses.all()


def address_get(*, customer: Customer, address_id: int) -> Address | None:
    """One of the customer's addresses, or None (another customer's address is None too)."""
    return Address.objects.filter(pk=address_id, customer=customer).first()


def coupon_usable(*, customer_id: int, coupon_id: int) -> Coupon | None:
    """The customer's coupon if it is available and not expired, else None."""
    return Coupon.objects.filter(
        pk=coupon_id, customer_id=customer_id, status=Coupon.Status.AVAILABLE,
        valid_until__gt=timezone.now(),
    ).first()

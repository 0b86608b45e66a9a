"""What a confirm reads of the database, for one confirm or for a batch of them at once.

``apps.orders.confirm`` asks these for the SKUs, the buyer's member terms, unpaid orders,
addresses and usable coupons; the rules stay there. :class:`LoneReads` reads as a single confirm
goes (Django's view: five queries with the customer, ``tests/orders/test_hot_path.py``).
:class:`BatchReads` loads each kind for every confirm of a batch in one query (the ASGI gate's
order threads, ``order_confirm_many``): a batch of eight costs about as many queries as one
confirm. Batch or lone, a confirm sees the same rows; anything a batch did not load is read
alone.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Q

from apps.accounts import selectors as account_selectors
from apps.accounts.models import Address, Coupon, Customer
from apps.catalog.models import Sku
from apps.members import pricing
from apps.orders import caps

COUPONS_READ = 100  # a customer's usable coupons weighed per confirm (the earliest to expire)


class LoneReads:
    """One confirm's reads, as it goes; the SKUs carry the buyer's member terms (one query)."""

    def skus(self, sku_ids, *, customer_id: int) -> dict[int, Sku]:
        """The SKUs (with products) of ``sku_ids`` by id; missing ids are absent."""
        found = Sku.objects.select_related("product").filter(pk__in=list(sku_ids))
        return {s.pk: s for s in found.annotate(**pricing.terms_annotations(customer_id=customer_id))}

    def terms(self, sku: Sku, *, customer_id: int) -> pricing.MemberTerms:
        """The buyer's member terms (read with :meth:`skus`)."""
        return pricing.terms_of(sku)

    def unpaid(self, customer_id: int) -> list[str]:
        """The kinds of the customer's unpaid orders (``caps``)."""
        return caps.unpaid_kinds([customer_id])[customer_id]

    def address_default(self, customer: Customer) -> Address | None:
        """The default address, else the newest (``accounts.selectors.address_default``)."""
        return account_selectors.address_default(customer=customer)

    def address(self, customer: Customer, address_id: int) -> Address | None:
        """One of the customer's addresses, or None."""
        return account_selectors.address_get(customer=customer, address_id=address_id)

    def coupons(self, customer_id: int) -> list[Coupon]:
        """The customer's usable coupons, the earliest to expire first (at most COUPONS_READ)."""
        usable = account_selectors.coupons_usable(customer_id=customer_id)
        return list(usable.order_by("valid_until", "id")[:COUPONS_READ])


class BatchReads(LoneReads):
    """The reads of confirms ``[(customer, {"items": [...], "address_id"?: int, ...})]`` made
    together: SKUs, member terms, unpaid orders, addresses and coupons, one query each."""

    def __init__(self, calls: list[tuple[Customer, dict]]) -> None:
        ids = [customer.pk for customer, _ in calls]
        sku_ids = {item["sku_id"] for _, kwargs in calls for item in kwargs.get("items") or ()}
        self._skus = Sku.objects.select_related("product").in_bulk(list(sku_ids))
        self._terms = pricing.member_terms_many(ids)
        self._unpaid = caps.unpaid_kinds(ids)
        self._addresses = self._addresses_read(calls)
        self._coupons: dict[int, list[Coupon]] = defaultdict(list)
        usable = account_selectors.coupons_usable_many(customer_ids=ids).order_by("valid_until", "id")
        for coupon in usable:
            if len(self._coupons[coupon.customer_id]) < COUPONS_READ:
                self._coupons[coupon.customer_id].append(coupon)

    @staticmethod
    def _addresses_read(calls) -> dict[int, list[Address]]:
        """Each customer's default addresses and the addresses named, newest first."""
        named = [kwargs["address_id"] for _, kwargs in calls if kwargs.get("address_id") is not None]
        rows = Address.objects.filter(Q(is_default=True) | Q(pk__in=named), customer_id__in=[c.pk for c, _ in calls])
        found: dict[int, list[Address]] = defaultdict(list)
        for address in rows.order_by("-id"):
            found[address.customer_id].append(address)
        return found

    def skus(self, sku_ids, *, customer_id: int) -> dict[int, Sku]:
        if not set(sku_ids) <= self._skus.keys():
            return super().skus(sku_ids, customer_id=customer_id)
        return {pk: self._skus[pk] for pk in sku_ids}

    def terms(self, sku: Sku, *, customer_id: int) -> pricing.MemberTerms:
        return self._terms[customer_id]

    def unpaid(self, customer_id: int) -> list[str]:
        return self._unpaid[customer_id]

    def address_default(self, customer: Customer) -> Address | None:
        defaults = [a for a in self._addresses[customer.pk] if a.is_default]
        return defaults[0] if defaults else super().address_default(customer)

    def address(self, customer: Customer, address_id: int) -> Address | None:
        found = next((a for a in self._addresses[customer.pk] if a.pk == address_id), None)
        return found or super().address(customer, address_id)

    def coupons(self, customer_id: int) -> list[Coupon]:
        return self._coupons[customer_id]

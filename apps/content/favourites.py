"""A customer's favourite products (收藏): add (idempotent), remove, list."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Min, Q, QuerySet

from apps.catalog.models import Product
from apps.content.models import Favourite
from starmall.errors import NotFound


def favourite_add(*, customer_id: int, product_id: int) -> tuple[Favourite, bool]:
    """Keep the product for the customer; ``(favourite, created)``. A second add (also two at
    once: UNIQUE (customer, product)) returns the existing row with ``created=False``. A
    product not on sale -> NotFound."""
    if not Product.objects.filter(pk=product_id, is_active=True).exists():
        raise NotFound("商品不存在或已下架。", product_id=product_id)
    existing = Favourite.objects.filter(customer_id=customer_id, product_id=product_id).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return Favourite.objects.create(customer_id=customer_id, product_id=product_id), True
    except IntegrityError:
        return Favourite.objects.get(customer_id=customer_id, product_id=product_id), False


def favourite_remove(*, customer_id: int, product_id: int) -> bool:
    """Forget the product; True when there was a row (removing twice is not an error)."""
    deleted, _ = Favourite.objects.filter(customer_id=customer_id, product_id=product_id).delete()
    return deleted > 0


def favourite_products(*, customer_id: int) -> QuerySet[Product]:
    """The customer's favourite products, last kept first, with ``min_price_fen`` (fen) as the
    product list has it; products taken off sale are left out."""
    return (
        Product.objects.filter(favourites__customer_id=customer_id, is_active=True)
        .annotate(
            min_price_fen=Min("skus__price_fen", filter=Q(skus__is_active=True)),
            kept_id=Min("favourites__id", filter=Q(favourites__customer_id=customer_id)),
        )
        .order_by("-kept_id")
    )

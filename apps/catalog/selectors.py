"""Reads for the catalog (what the mini-program lists)."""

from django.db.models import F, Min, Q, QuerySet

from apps.catalog.models import Category, Product, Teacher


def category_list() -> QuerySet[Category]:
    return Category.objects.all()


#: ``sort=`` of the product list -> the ORDER BY (ties by id, so pages never overlap).
#: ``sales`` is ``Product.sales``: units of paid orders, taken out again when an order is fully
#: refunded (``apps.catalog.stock.product_sales_add`` / ``product_sales_remove``).
PRODUCT_SORTS = {
    "sales": ("-sales", "id"),
    "price": ("min_price_fen", "id"),
    "-price": ("-min_price_fen", "id"),
    "new": ("-created_at", "-id"),
}
#: ``tag=`` of the product list -> the flag it filters on
PRODUCT_TAGS = {"hot": "is_hot", "recommended": "is_recommended"}


def product_list(
    *, category_id: int | None = None, q: str = "", kind: str = "", sort: str = "", tag: str = ""
) -> QuerySet[Product]:
    """Active products with ``min_price_fen`` (fen) annotated; a category includes its children.
    ``sort``: a key of :data:`PRODUCT_SORTS` (default staff's order); ``tag``: a key of
    :data:`PRODUCT_TAGS`. Products without an active SKU sort last by price."""
    qs = Product.objects.filter(is_active=True).annotate(
        min_price_fen=Min("skus__price_fen", filter=Q(skus__is_active=True))
    )
    if category_id:
        qs = qs.filter(Q(category_id=category_id) | Q(category__parent_id=category_id))
    if q:
        qs = qs.filter(Q(name__icontains=q) | Q(description__icontains=q))
    if kind:
        qs = qs.filter(kind=kind)
    if tag:
        qs = qs.filter(**{PRODUCT_TAGS[tag]: True})
    if sort in ("price", "-price"):
        price = F("min_price_fen")
        return qs.order_by(price.asc(nulls_last=True) if sort == "price" else price.desc(nulls_last=True), "id")
    return qs.order_by(*PRODUCT_SORTS.get(sort, ("sort", "id")))


def product_get(*, product_id: int) -> Product | None:
    """An active product with its active SKUs and teacher, or None."""
    return (
        Product.objects.filter(pk=product_id, is_active=True).select_related("teacher").prefetch_related("skus").first()
    )


def teacher_list() -> QuerySet[Teacher]:
    return Teacher.objects.filter(is_active=True).order_by("id")


def teacher_get(*, teacher_id: int) -> Teacher | None:
    return Teacher.objects.filter(pk=teacher_id, is_active=True).first()


def teacher_for_user(user) -> Teacher | None:
    """The teacher a staff user is (``Teacher.user``), or None: a teacher in the admin sees and
    changes only their own slots and chats. Superusers are never restricted."""
    if user is None or not user.is_authenticated or user.is_superuser:
        return None
    return Teacher.objects.filter(user_id=user.pk).first()


def teacher_for_customer(customer_id: int) -> Teacher | None:
    """The teacher a mini-program customer signs in as (``Teacher.customer``), or None."""
    return Teacher.objects.filter(customer_id=customer_id).first()

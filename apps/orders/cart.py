"""The cart: services and selectors (one sub-domain of orders, beside ``services.py``).

A cart line is one SKU of a goods product (UNIQUE per customer) and a quantity. Adding an SKU
already in the cart adds to its line with a conditional UPDATE (``quantity = quantity + n WHERE
quantity <= limit - n``), never read-modify-write, so concurrent adds sum up. Quantities are
checked against stock when they are set (the cart holds nothing: confirm and create check
stock again). Confirm takes ``cart_item_ids`` (:func:`cart_items_for_confirm`); create removes
what it bought in the order's transaction (:func:`cart_items_remove_bought`).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from apps.accounts import wallet
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.orders.models import CartItem
from starmall.errors import InvalidInput, LimitExceeded, NotFound

MAX_LINES = 50  # distinct SKUs in a cart and in one confirm (services, serializers and the sold-out gate read it)
MAX_QUANTITY = 999  # units of one SKU in a cart line or a confirm (idem)


# --- selectors -----------------------------------------------------------------------------


def cart_list(*, customer_id: int) -> QuerySet[CartItem]:
    """The customer's cart lines, newest first, with SKU and product loaded (one query)."""
    return CartItem.objects.filter(customer_id=customer_id).select_related("sku__product").order_by("-id")


def cart_item_available(item: CartItem) -> bool:
    """Whether the line can be bought as it is: SKU and product on sale, stock >= quantity."""
    sku = item.sku
    return sku.is_active and sku.product.is_active and 0 < item.quantity <= sku.stock


def cart_items_for_confirm(*, customer_id: int, item_ids: list[int]) -> tuple[list[dict], list[list[int]]]:
    """The confirm input for some of the customer's cart lines.

    Returns ``(items, bought)``: ``items`` as confirm takes them (``[{"sku_id", "quantity"}]``)
    and ``bought`` = ``[[cart_item_id, quantity], ...]`` for the draft (create removes them).
    An id that is not one of the customer's lines (gone, or another customer's) -> NotFound
    with ``detail.cart_item_ids`` listing them.
    """
    wanted = list(dict.fromkeys(item_ids))
    rows = list(CartItem.objects.filter(customer_id=customer_id, pk__in=wanted).values_list("pk", "sku_id", "quantity"))
    missing = sorted(set(wanted) - {pk for pk, _, _ in rows})
    if missing:
        raise NotFound("购物车中没有这些商品，请刷新购物车。", cart_item_ids=missing)
    rows.sort(key=lambda row: wanted.index(row[0]))
    return (
        [{"sku_id": sku_id, "quantity": quantity} for _, sku_id, quantity in rows],
        [[pk, quantity] for pk, _, quantity in rows],
    )


# --- services ------------------------------------------------------------------------------


def _sku_for_cart(sku_id: int) -> Sku:
    sku = Sku.objects.select_related("product").filter(pk=sku_id).first()
    if sku is None or not sku.is_active or not sku.product.is_active:
        raise NotFound("该商品已下架。", sku_id=sku_id)
    if sku.product.kind != Kind.GOODS:
        raise InvalidInput("咨询服务请直接预约，不能加入购物车。", sku_id=["咨询服务请直接预约，不能加入购物车"])
    return sku


def _check_request(quantity: int) -> None:
    """A request's own quantity outside 1..MAX_QUANTITY is invalid input (400 ``invalid``, as the
    serializers already say), whatever the cart holds."""
    if not 1 <= quantity <= MAX_QUANTITY:
        raise InvalidInput(f"购买数量应为 1 到 {MAX_QUANTITY} 件。", quantity=[f"每种商品 1 到 {MAX_QUANTITY} 件"])


def _check_quantity(sku: Sku, quantity: int) -> None:
    """Raise for a line set to ``quantity`` units of ``sku`` (PATCH): outside 1..MAX_QUANTITY
    (InvalidInput, 400) or over the stock (InsufficientStock, 409)."""
    _check_request(quantity)
    _check_stock(sku, quantity)


def _check_line(sku: Sku, current: int, quantity: int) -> None:
    """Raise for an add of ``quantity`` units (a valid request) to a line holding ``current``:
    a sum over MAX_QUANTITY is the cart's per-customer cap (LimitExceeded, 409
    ``limit_exceeded``, API.md Additions), over the stock InsufficientStock (409)."""
    if current + quantity > MAX_QUANTITY:
        raise LimitExceeded(
            f"购物车中每种商品最多 {MAX_QUANTITY} 件，已有 {current} 件。",
            sku_id=sku.pk,
            requested=current + quantity,
            max_quantity=MAX_QUANTITY,
        )
    _check_stock(sku, current + quantity)


def _check_stock(sku: Sku, quantity: int) -> None:
    if quantity > sku.stock:
        raise InsufficientStock(
            f"库存不足，最多可购买 {max(sku.stock, 0)} 件。" if sku.stock > 0 else "该商品已售罄。",
            sku_id=sku.pk,
            requested=quantity,
            available=max(sku.stock, 0),
        )


def _add_to_line(*, customer_id: int, sku: Sku, quantity: int) -> bool:
    """``quantity = quantity + n`` on the customer's line of ``sku`` while the sum stays within
    stock and MAX_QUANTITY; True when a line was updated."""
    limit = min(MAX_QUANTITY, sku.stock)
    return (
        CartItem.objects.filter(
            customer_id=customer_id,
            sku_id=sku.pk,
            quantity__lte=limit - quantity,
        ).update(quantity=F("quantity") + quantity, updated_at=timezone.now())
        == 1
    )


def cart_item_add(*, customer_id: int, sku_id: int, quantity: int) -> CartItem:
    """Put ``quantity`` units of a goods SKU in the cart; an SKU already there adds to its line.

    Atomic under races: a conditional UPDATE adds to an existing line; with none, a new line
    is inserted (UNIQUE(customer, sku)) — a concurrent insert that won makes ours an
    IntegrityError, and we add to its line instead. New lines are counted under a lock of the
    customer's row (at most MAX_LINES), the lock ``order_create`` also takes before it removes
    lines. Raises NotFound (SKU not on sale), InvalidInput (consultation; ``quantity`` itself
    more than MAX_QUANTITY), InsufficientStock (line above stock), LimitExceeded (the line past
    MAX_QUANTITY units, or MAX_LINES lines).
    """
    _check_request(quantity)
    sku = _sku_for_cart(sku_id)
    with transaction.atomic():
        if not _add_to_line(customer_id=customer_id, sku=sku, quantity=quantity):
            current = (
                CartItem.objects.filter(customer_id=customer_id, sku_id=sku_id)
                .values_list("quantity", flat=True)
                .first()
            )
            _check_line(sku, current or 0, quantity)
            if current is not None:  # within the limits now: the line changed meanwhile, try once more
                if not _add_to_line(customer_id=customer_id, sku=sku, quantity=quantity):
                    raise InsufficientStock(sku_id=sku_id, requested=quantity, available=max(sku.stock, 0))
            else:
                _insert_line(customer_id=customer_id, sku=sku, quantity=quantity)
    return cart_list(customer_id=customer_id).get(sku_id=sku_id)


def _insert_line(*, customer_id: int, sku: Sku, quantity: int) -> None:
    wallet.customer_lock(customer_id=customer_id)
    if CartItem.objects.filter(customer_id=customer_id).count() >= MAX_LINES:
        raise LimitExceeded(f"购物车最多放 {MAX_LINES} 种商品，请先结算或删除一些。", max_lines=MAX_LINES)
    try:
        with transaction.atomic():
            CartItem.objects.create(customer_id=customer_id, sku=sku, quantity=quantity)
    except IntegrityError:  # a concurrent add inserted the line first: add to it
        if not _add_to_line(customer_id=customer_id, sku=sku, quantity=quantity):
            current = (
                CartItem.objects.filter(customer_id=customer_id, sku_id=sku.pk)
                .values_list("quantity", flat=True)
                .first()
            )
            _check_line(sku, current or 0, quantity)
            raise InsufficientStock(sku_id=sku.pk, requested=quantity, available=max(sku.stock, 0)) from None


def cart_item_update(*, customer_id: int, item_id: int, quantity: int) -> CartItem:
    """Set the quantity of one of the customer's lines (1..MAX_QUANTITY, at most the stock).

    Raises NotFound (no such line of this customer), InvalidInput, InsufficientStock. A line
    whose SKU went off sale can still be changed (or removed); confirm refuses it.
    """
    item = cart_list(customer_id=customer_id).filter(pk=item_id).first()
    if item is None:
        raise NotFound("购物车中没有该商品。", cart_item_id=item_id)
    _check_quantity(item.sku, quantity)
    if not CartItem.objects.filter(pk=item_id, customer_id=customer_id).update(
        quantity=quantity, updated_at=timezone.now()
    ):
        raise NotFound("购物车中没有该商品。", cart_item_id=item_id)
    item.quantity = quantity
    return item


def cart_item_delete(*, customer_id: int, item_id: int) -> None:
    """Remove one of the customer's lines; NotFound when there is none (another customer's)."""
    deleted, _ = CartItem.objects.filter(pk=item_id, customer_id=customer_id).delete()
    if not deleted:
        raise NotFound("购物车中没有该商品。", cart_item_id=item_id)


@transaction.atomic(savepoint=False)
def cart_items_remove_bought(*, customer_id: int, bought: list[list[int]]) -> int:
    """Inside ``order_create``'s transaction: remove the cart lines the order bought.

    ``bought`` = ``[[cart_item_id, quantity], ...]`` as recorded by confirm; only this
    customer's lines are touched. A line still holding at most what was bought is deleted (one
    DELETE for all); a line that grew after confirm (more added in another tab) keeps the
    difference (``quantity = quantity - bought``); a line removed meanwhile is simply gone.
    Rolls back with the order. Returns the number of lines deleted.
    """
    if not bought:
        return 0
    done = Q(pk__in=[])
    for item_id, quantity in bought:
        done |= Q(pk=item_id, quantity__lte=quantity)
    deleted, _ = CartItem.objects.filter(done, customer_id=customer_id).delete()
    if deleted < len(bought):  # rare: lines that grew since confirm
        now = timezone.now()
        for item_id, quantity in bought:
            CartItem.objects.filter(pk=item_id, customer_id=customer_id, quantity__gt=quantity).update(
                quantity=F("quantity") - quantity, updated_at=now
            )
    return deleted

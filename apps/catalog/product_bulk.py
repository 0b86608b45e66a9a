"""Bulk changes staff make from the product list: 上架 / 下架, move to a category, set or clear a
storefront tag (热卖 / 推荐). One conditional UPDATE per change (``WHERE <flag> IS NOT the new
value``), so the answer says per product whether it changed or already was so, and a second
click changes nothing. Permission: ``catalog.change_product`` (PermissionDenied)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import transaction

from apps.catalog.models import Category, Product
from starmall.errors import InvalidInput

TAGS = {"hot": ("is_hot", "热卖"), "recommended": ("is_recommended", "推荐")}


@dataclass(frozen=True)
class BulkResult:
    """Per product id: True changed, False already so; ``refused``: {id: reason} left unchanged."""

    changed: list[int]
    unchanged: list[int]
    refused: dict[int, str]


def _require(user) -> None:
    if user is None or not user.has_perm("catalog.change_product"):
        raise PermissionDenied("需要权限 catalog.change_product")


def _set(ids: list[int], field: str, value, refused: dict[int, str] | None = None) -> BulkResult:
    refused = refused or {}
    wanted = [pk for pk in sorted(set(ids)) if pk not in refused]
    with transaction.atomic():
        qs = Product.objects.filter(pk__in=wanted).exclude(**{field: value})
        changed = sorted(qs.values_list("pk", flat=True))
        Product.objects.filter(pk__in=changed).update(**{field: value})
    return BulkResult(changed=changed, unchanged=[pk for pk in wanted if pk not in changed], refused=refused)


def products_set_active(*, product_ids: list[int], active: bool, user) -> BulkResult:
    """上架 (``active``) or 下架 the products. 上架 refuses a product without a live SKU (nothing
    a customer could buy)."""
    _require(user)
    refused = {}
    if active:
        sellable = set(Product.objects.filter(pk__in=product_ids, skus__is_active=True).values_list("pk", flat=True))
        refused = {pk: "没有启用的 SKU，顾客无法购买" for pk in product_ids if pk not in sellable}
    return _set(product_ids, "is_active", active, refused)


def products_set_category(*, product_ids: list[int], category_id: int, user) -> BulkResult:
    """Move the products to ``category_id``; a product of the other kind (goods / consultation) is
    refused. InvalidInput for an unknown category."""
    _require(user)
    category = Category.objects.filter(pk=category_id).first()
    if category is None:
        raise InvalidInput("分类不存在。", category=[str(category_id)])
    other = Product.objects.filter(pk__in=product_ids).exclude(kind=category.kind).values_list("pk", flat=True)
    refused = {pk: f"商品类型与分类「{category.name}」（{category.get_kind_display()}）不符" for pk in other}
    return _set(product_ids, "category_id", category.pk, refused)


def products_set_tag(*, product_ids: list[int], tag: str, on: bool, user) -> BulkResult:
    """Set (``on``) or clear the storefront tag ``tag`` ("hot" / "recommended"); InvalidInput otherwise."""
    _require(user)
    if tag not in TAGS:
        raise InvalidInput("标签只能是热卖或推荐。", tag=[tag])
    return _set(product_ids, TAGS[tag][0], on)

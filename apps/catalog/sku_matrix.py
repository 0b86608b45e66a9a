"""The spec matrix of the product editor: spec names and values (the builder's tree) become one SKU
per combination, through the plan of :mod:`apps.catalog.spec_plan` (create / keep / rename /
revive / deactivate; a SKU is switched off, never deleted, since order lines refer to it).

New SKUs start at the given price with stock 0 — stock then moves only through
:func:`apps.catalog.stock.sku_stock_adjust`. Permissions: ``catalog.change_product``, and
``catalog.add_sku`` when the plan creates SKUs."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from apps.catalog.models import Product, Sku
from apps.catalog.spec_plan import OldSku, Plan, spec_plan, tree_of_skus
from starmall.errors import InvalidInput


def _old_skus(product_id: int) -> list[OldSku]:
    rows = Sku.objects.filter(product_id=product_id).values_list("pk", "specs", "is_active")
    return [OldSku(id=pk, specs=dict(specs or {}), is_active=active) for pk, specs, active in rows]


def spec_tree_of(product: Product) -> list[dict]:
    """The tree as the builder starts from it: ``[{"name", "was", "values": [{"value", "was"}]}]``
    (``was`` = the name / value itself): the stored ``spec_tree`` in its order, plus any name or
    value a live SKU has that it lacks (a product from before the builder, a SKU's specs edited on
    its own page), so that saving the page unchanged never switches a live SKU off."""
    tree = [{"name": s["name"], "values": list(s["values"])} for s in product.spec_tree or []]
    for spec in tree_of_skus(_old_skus(product.pk)) if product.pk else []:
        known = next((s for s in tree if s["name"] == spec["name"]), None)
        if known is None:
            tree.append(spec)
        else:
            known["values"] += [v for v in spec["values"] if v not in known["values"]]
    return [
        {"name": s["name"], "was": s["name"], "values": [{"value": v, "was": v} for v in s["values"]]} for s in tree
    ]


def spec_plan_preview(*, product_id: int | None, tree) -> Plan:
    """What saving ``tree`` would do to the product's SKUs now (read only; InvalidInput)."""
    return spec_plan(_old_skus(product_id) if product_id else [], tree)


def spec_tree_apply(*, product_id: int, tree, price_fen: int | None, user) -> Plan:
    """Store ``tree`` on the product and carry out its plan; returns the plan.

    Renamed SKUs keep id, price, stock; created ones get ``price_fen`` (fen, >= 1; asked only
    when the plan creates SKUs: InvalidInput otherwise) and stock 0. The product row is locked
    so two editors cannot create one combination twice. ``user`` needs
    ``catalog.change_product`` (and ``catalog.add_sku`` to create): PermissionDenied."""
    if user is None or not user.has_perm("catalog.change_product"):
        raise PermissionDenied("需要权限 catalog.change_product")
    with transaction.atomic():
        product = Product.objects.select_for_update().get(pk=product_id)
        plan = spec_plan(_old_skus(product.pk), tree)
        if plan.create and not user.has_perm("catalog.add_sku"):
            raise PermissionDenied("需要权限 catalog.add_sku")
        if plan.create and (not isinstance(price_fen, int) or price_fen < 1):
            raise InvalidInput(
                f"将新增 {len(plan.create)} 个规格组合，请填写新规格的价格（至少 0.01 元）。",
                spec_price=["至少 0.01 元"],
            )
        for sku_id, specs in plan.rename:
            Sku.objects.filter(pk=sku_id).update(specs=specs)
        if plan.revive:
            Sku.objects.filter(pk__in=plan.revive).update(is_active=True)
        if plan.deactivate:
            Sku.objects.filter(pk__in=plan.deactivate).update(is_active=False)
        Sku.objects.bulk_create([Sku(product=product, specs=s, price_fen=price_fen, stock=0) for s in plan.create])
        if product.spec_tree != plan.tree:
            Product.objects.filter(pk=product.pk).update(spec_tree=plan.tree)
    return plan

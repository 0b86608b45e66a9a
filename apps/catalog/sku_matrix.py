"""The spec matrix of the product editor: specs entered as names and values ("颜色: 天青, 月白" /
"容量: 120ml, 150ml") become one SKU per combination (天青/120ml, 天青/150ml, 月白/120ml, 月白/150ml).

Existing SKUs are kept as they are (price, stock, code, sales history); only the missing
combinations are created, with the given price and stock 0 — stock then moves only through
:func:`apps.catalog.stock.sku_stock_adjust` and its log. Staff entering specs is permission
``catalog.add_sku``."""

from __future__ import annotations

import itertools
import re

from django.core.exceptions import PermissionDenied
from django.db import transaction

from apps.catalog.models import Product, Sku
from starmall.errors import InvalidInput

MAX_SKUS = 200  # a matrix beyond this is a typo, not a product
_SPLIT = re.compile(r"[,，、/;；\s]+")


def spec_lines_parse(text: str) -> list[tuple[str, list[str]]]:
    """``"颜色: 天青, 月白\\n容量：120ml，150ml"`` -> ``[("颜色", ["天青", "月白"]), ("容量", ["120ml", "150ml"])]``.

    One spec a line, name and values split by ``:`` / ``：``; values by commas (either width),
    、, ; or spaces; duplicates dropped in order. Raises InvalidInput (a line without a name or
    values, a name twice, more than :data:`MAX_SKUS` combinations)."""
    dims: list[tuple[str, list[str]]] = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        match = re.match(r"^([^:：]*)[:：](.*)$", line)
        name = match.group(1).strip() if match else ""
        items = list(dict.fromkeys(v for v in _SPLIT.split(match.group(2).strip()) if v)) if match else []
        if not name or not items:
            raise InvalidInput(f"规格「{line}」的格式应为：名称: 值1, 值2", specs=[line])
        if any(name == seen for seen, _ in dims):
            raise InvalidInput(f"规格名称「{name}」重复。", specs=[name])
        if len(name) > 20 or any(len(v) > 30 for v in items):
            raise InvalidInput("规格名称最多 20 字，规格值最多 30 字。", specs=[name])
        dims.append((name, items))
    total = 1
    for _, values in dims:
        total *= len(values)
    if total > MAX_SKUS:
        raise InvalidInput(f"规格组合共 {total} 个，最多 {MAX_SKUS} 个。", specs=[str(total)])
    return dims


def spec_lines_text(product: Product) -> str:
    """The product's SKUs' specs back as the editor's text (names in first-seen order)."""
    dims: dict[str, list[str]] = {}
    for specs in Sku.objects.filter(product=product).order_by("pk").values_list("specs", flat=True):
        for name, value in (specs or {}).items():
            values = dims.setdefault(name, [])
            if value not in values:
                values.append(value)
    return "\n".join(f"{name}: {', '.join(values)}" for name, values in dims.items())


def combinations(dims: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    """Every combination as a specs dict, in entry order; ``[]`` for no specs."""
    if not dims:
        return []
    names = [name for name, _ in dims]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(values for _, values in dims))]


def sku_matrix_generate(*, product_id: int, text: str, price_fen: int, user) -> list[Sku]:
    """Create the SKUs of ``text``'s combinations that ``product_id`` lacks, each at ``price_fen``
    (fen, >= 1) with stock 0; returns the new ones (``[]`` when all exist). Existing SKUs, and
    SKUs whose specs are no longer in the text, are left unchanged (deactivate those by hand:
    orders refer to them). ``user`` needs ``catalog.add_sku`` (PermissionDenied). Raises
    InvalidInput (see :func:`spec_lines_parse`; a price below 1 fen). The product row is locked
    so two editors cannot create the same combination twice."""
    if user is None or not user.has_perm("catalog.add_sku"):
        raise PermissionDenied("需要权限 catalog.add_sku")
    wanted = combinations(spec_lines_parse(text))
    if not wanted:
        return []
    if not isinstance(price_fen, int) or price_fen < 1:
        raise InvalidInput("请填写新规格的价格（至少 0.01 元）。", price=["至少 0.01 元"])
    with transaction.atomic():
        product = Product.objects.select_for_update().get(pk=product_id)
        have = [specs for specs in Sku.objects.filter(product=product).values_list("specs", flat=True)]
        missing = [specs for specs in wanted if specs not in have]
        return Sku.objects.bulk_create(
            [Sku(product=product, specs=specs, price_fen=price_fen, stock=0) for specs in missing]
        )

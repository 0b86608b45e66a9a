"""The product editor's spec builder, batch fill and the 秒杀 product/SKU picker in Chromium (1,400 px
and 390 px), with every page error and console error collected: there must be none."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from apps.catalog.models import Product, Sku

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-1"


def _watch(page) -> list[str]:
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    return problems


@pytest.fixture
def mug(make_sku):
    first = make_sku(price_fen=12800, stock=7, specs={"颜色": "天青", "容量": "60ml"})
    second = Sku.objects.create(product=first.product, specs={"颜色": "月白", "容量": "60ml"}, price_fen=13800, stock=4)
    tree = [{"name": "颜色", "values": ["天青", "月白"]}, {"name": "容量", "values": ["60ml"]}]
    Product.objects.filter(pk=first.product_id).update(spec_tree=tree)  # the builder's order (jsonb keeps its own)
    get_user_model().objects.create_superuser("boss", password=PASSWORD)
    return first.product, first, second


def _save(page) -> None:
    page.click("button[name=_continue], input[name=_continue]")
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("width", [1400, 390])
def test_builder_renames_adds_removes_and_batch_fills_without_errors(page_for, base_url, mug, shot, width):
    product, first, second = mug
    page = page_for("boss", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    problems = _watch(page)
    page.goto(f"{base_url}/admin/catalog/product/{product.pk}/change/")
    builder = page.locator("#spec-builder")
    assert builder.locator(".bo-spec").count() == 2
    colour = builder.locator(".bo-spec").nth(0)
    colour.locator(".bo-spec-value-input").nth(0).fill("雾青")  # rename 天青
    colour.locator(".bo-spec-value-remove").nth(1).click()  # remove 月白
    size = builder.locator(".bo-spec").nth(1)
    size.locator(".bo-spec-add-input").fill("120ml，150ml")
    size.locator(".bo-spec-add-input").press("Enter")  # adds both, does not submit the form
    assert builder.locator(".bo-spec").nth(1).locator(".bo-spec-value").count() == 3
    builder.locator(".bo-spec").nth(1).locator(".bo-spec-left").nth(2).click()  # 150ml before 120ml
    assert "共 3 个规格组合" in builder.locator(".bo-spec-summary").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1  # nothing wider than the window
    shot(page, f"40-spec-builder-{width}")
    _save(page)
    rows = {s.pk: (s.specs, s.stock, s.is_active) for s in Sku.objects.filter(product=product)}
    assert rows[first.pk] == ({"颜色": "雾青", "容量": "60ml"}, 7, True)
    assert rows[second.pk] == ({"颜色": "月白", "容量": "60ml"}, 4, False)
    assert sorted(s["容量"] for s, _, live in rows.values() if live) == ["120ml", "150ml", "60ml"]
    assert Product.objects.get(pk=product.pk).spec_tree == [
        {"name": "颜色", "values": ["雾青"]},
        {"name": "容量", "values": ["60ml", "150ml", "120ml"]},
    ]
    assert "新增 2 个 SKU" in page.content()
    # batch fill: 价格 and 库存设为 into every row, then saved
    page.fill("#sku-batch input[name=batch-price_fen]", "99.00")
    page.fill("#sku-batch input[name=batch-stock_target]", "10")
    page.click("#sku-batch .bo-batch-all")
    _save(page)
    live = Sku.objects.filter(product=product, is_active=True)
    assert sorted(live.values_list("price_fen", "stock")) == [(9900, 10)] * 3
    assert Sku.objects.get(pk=second.pk).price_fen == 9900  # the switched-off row is in the table too
    _save(page)  # saving again: no red message
    assert "规格未生成" not in page.content() and "规格未保存" not in page.content()
    shot(page, f"41-sku-matrix-{width}")
    assert problems == []


def test_flash_sale_picks_the_product_by_name_then_its_sku(page_for, base_url, mug, shot):
    product, first, second = mug
    page = page_for("boss", PASSWORD)
    problems = _watch(page)
    page.goto(f"{base_url}/admin/marketing/flashsale/add/")
    page.click(".field-product .select2-selection")
    page.keyboard.type("青瓷")
    page.locator(".select2-results__option", has_text=product.name).click()
    sku = page.locator("select[data-sku-picker]")
    page.wait_for_function("document.querySelector('select[data-sku-picker]').options.length === 3")
    labels = sku.locator("option").all_inner_texts()[1:]
    assert [
        ("天青" in a, "月白" in a, a.endswith(b)) for a, b in zip(labels, ["¥128.00 · 库存 7", "¥138.00 · 库存 4"])
    ] == [
        (True, False, True),
        (False, True, True),
    ]  # "颜色：天青；容量：60ml · ¥128.00 · 库存 7" (the names in the SKU's stored order)
    sku.select_option(str(second.pk))
    shot(page, "42-flash-sale-sku-picker")
    assert problems == []

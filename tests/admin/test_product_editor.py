"""The product editor: cover and gallery uploaded through the shop's storage (previews, order),
specs as names and values generating the SKU matrix (existing SKUs kept), per-row stock through
the stock service, counters read-only, the mini-program preview; a view-only user cannot save."""

from __future__ import annotations

import io
import json

import pytest
from admin_helpers import form_data, texts
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from PIL import Image

from apps.catalog.models import Product, Sku
from apps.files.models import Upload

pytestmark = pytest.mark.django_db


def _png(name: str, colour=(0, 128, 0)) -> SimpleUploadedFile:
    out = io.BytesIO()
    Image.new("RGB", (20, 20), colour).save(out, format="PNG")
    return SimpleUploadedFile(name, out.getvalue(), content_type="image/png")


def test_specs_generate_the_sku_matrix_keeping_existing_skus(boss, make_sku):
    sku = make_sku(price_fen=12800, stock=7, specs={"颜色": "天青", "容量": "120ml"})
    product = sku.product
    url = reverse("admin:catalog_product_change", args=[product.pk])
    page = boss.get(url)
    tree = json.loads(page.context["adminform"].form["spec_builder"].value())
    assert sorted(tree, key=lambda spec: spec["name"]) == [
        {"name": "容量", "was": "容量", "values": [{"value": "120ml", "was": "120ml"}]},
        {"name": "颜色", "was": "颜色", "values": [{"value": "天青", "was": "天青"}]},
    ]  # the existing SKU's specs, the builder's tree (names in jsonb's order on PostgreSQL)
    data = form_data(page)
    tree = [
        {"name": "颜色", "was": "颜色", "values": [{"value": "天青", "was": "天青"}, {"value": "月白", "was": None}]},
        {
            "name": "容量",
            "was": "容量",
            "values": [{"value": "120ml", "was": "120ml"}, {"value": "150ml", "was": None}],
        },
    ]
    data.update({"spec_builder": json.dumps(tree), "spec_price": "138.00"})
    response = boss.post(url, data, follow=True)
    assert response.status_code == 200
    # specs compared as sets of pairs: PostgreSQL's jsonb keeps keys in its own order
    rows = sorted((tuple(sorted(s.specs.items())), s.price_fen, s.stock) for s in Sku.objects.filter(product=product))
    assert rows == sorted(
        [
            ((("容量", "120ml"), ("颜色", "天青")), 12800, 7),  # kept: price and stock untouched
            ((("容量", "150ml"), ("颜色", "天青")), 13800, 0),
            ((("容量", "120ml"), ("颜色", "月白")), 13800, 0),
            ((("容量", "150ml"), ("颜色", "月白")), 13800, 0),
        ]
    )
    assert any("新增 3 个 SKU" in text for _, text in texts(response))
    boss.post(url, {**form_data(boss.get(url)), "spec_price": "1.00"})  # again: nothing new
    assert Sku.objects.filter(product=product).count() == 4


def test_stock_per_row_goes_through_the_stock_service_and_counters_stay(boss, make_sku):
    sku = make_sku(stock=3)
    product = sku.product
    Product.objects.filter(pk=product.pk).update(sales=11, review_count=2, rating_total=9)
    url = reverse("admin:catalog_product_change", args=[product.pk])
    data = form_data(boss.get(url))
    data.update(
        {
            "skus-0-stock_change": "5",
            "skus-0-price_fen": "99.00",
            "sales": "0",
            "review_count": "0",
            "rating_total": "0",
            "skus-0-stock": "999",
        }
    )
    Sku.objects.filter(pk=sku.pk).update(stock=1)  # an order took two units meanwhile
    assert boss.post(url, data).status_code == 302
    sku.refresh_from_db()
    product.refresh_from_db()
    assert (sku.stock, sku.price_fen) == (6, 9900)  # 1 + 5: relative, never the page's 3 or 999
    assert (product.sales, product.review_count, product.rating_total) == (11, 2, 9)


def test_cover_and_gallery_are_uploaded_with_previews_and_order(boss, make_sku):
    product = make_sku().product
    url = reverse("admin:catalog_product_change", args=[product.pk])
    data = form_data(boss.get(url))
    data.update(
        {"cover_file": _png("cover.png"), "gallery_files": [_png("a.png", (1, 2, 3)), _png("b.png", (4, 5, 6))]}
    )
    assert boss.post(url, data).status_code == 302
    product.refresh_from_db()
    assert product.cover_url.startswith("uploads/") and product.cover_url.endswith(".png")
    assert len(product.images) == 2 and all(name.startswith("uploads/") for name in product.images)
    assert Upload.objects.filter(uploader_id=0, kind="image").count() == 3
    page = boss.get(url).content.decode()
    assert 'class="bo-cover-preview"' in page and page.count('class="bo-thumb"') == 2
    assert 'id="mini-preview"' in page and product.name in page
    assert 'type="file"' in page and "multiple" in page
    reordered = list(reversed(product.images))
    data = form_data(boss.get(url))
    data["images"] = '["{}", "{}"]'.format(*reordered)  # what the drag-and-drop script writes
    assert boss.post(url, data).status_code == 302
    product.refresh_from_db()
    assert product.images == reordered


def test_a_non_image_is_refused(boss, make_sku):
    product = make_sku().product
    url = reverse("admin:catalog_product_change", args=[product.pk])
    data = form_data(boss.get(url))
    data["cover_file"] = SimpleUploadedFile("x.png", b"not an image", content_type="image/png")
    response = boss.post(url, data)
    assert response.status_code == 200  # the form's error
    product.refresh_from_db()
    assert product.cover_url == "" and not Upload.objects.exists()


def test_a_view_only_user_sees_the_product_but_cannot_save(viewer, make_sku):
    sku = make_sku(stock=3)
    url = reverse("admin:catalog_product_change", args=[sku.product.pk])
    page = viewer.get(url)
    assert page.status_code == 200 and 'name="spec_builder"' not in page.content.decode()
    tree = '[{"name": "颜色", "was": null, "values": [{"value": "红", "was": null}]}]'
    assert viewer.post(url, {"name": "x", "spec_builder": tree, "spec_price": "1.00"}).status_code == 403
    assert Sku.objects.filter(product=sku.product).count() == 1

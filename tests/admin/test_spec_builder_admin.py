"""The product editor's spec builder and SKU matrix through the admin (Django's test client):
re-saving says nothing false, renames keep SKUs, removed combinations are switched off, a price
is asked only for new combinations (as a form error, nothing written), per-SKU pictures."""

from __future__ import annotations

import io
import json

import pytest
from admin_helpers import form_data, texts
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from PIL import Image

from apps.catalog.models import Product, Sku

pytestmark = pytest.mark.django_db


@pytest.fixture
def mug(make_sku):
    first = make_sku(price_fen=12800, stock=7, specs={"颜色": "天青", "容量": "60ml"})
    second = Sku.objects.create(product=first.product, specs={"颜色": "月白", "容量": "60ml"}, price_fen=13800, stock=4)
    # the order the builder keeps (PostgreSQL's jsonb keeps the SKUs' keys in an order of its own)
    tree = [{"name": "颜色", "values": ["天青", "月白"]}, {"name": "容量", "values": ["60ml"]}]
    Product.objects.filter(pk=first.product_id).update(spec_tree=tree)
    first.product.refresh_from_db()
    return first.product, first, second


def _url(product) -> str:
    return reverse("admin:catalog_product_change", args=[product.pk])


def _tree(data) -> list:
    return json.loads(data["spec_builder"])


def test_saving_again_changes_nothing_and_shows_no_error(boss, mug):
    product, first, second = mug
    data = form_data(boss.get(_url(product)))
    data["spec_price"] = ""  # the red "请填写新规格的价格" came from here
    response = boss.post(_url(product), data, follow=True)
    assert response.status_code == 200
    shown = texts(response)
    assert [level for level, _ in shown] == ["success"], shown  # only "已修改"
    assert not any("规格" in text for _, text in shown)
    rows = sorted(Sku.objects.filter(product=product).values_list("pk", "is_active", "price_fen", "stock"))
    assert rows == [(first.pk, True, 12800, 7), (second.pk, True, 13800, 4)]


def test_rename_and_remove_keep_ids_and_switch_off(boss, mug):
    product, first, second = mug
    data = form_data(boss.get(_url(product)))
    tree = _tree(data)
    tree[0]["values"] = [{"value": "雾青", "was": "天青"}]  # 天青 renamed, 月白 removed
    data["spec_builder"] = json.dumps(tree)
    response = boss.post(_url(product), data, follow=True)
    assert any("改名 1 个" in text and "停用 1 个" in text for _, text in texts(response)), texts(response)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.specs, first.stock, first.is_active) == ({"颜色": "雾青", "容量": "60ml"}, 7, True)
    assert (second.specs, second.stock, second.is_active) == ({"颜色": "月白", "容量": "60ml"}, 4, False)
    assert Product.objects.get(pk=product.pk).spec_tree == [
        {"name": "颜色", "values": ["雾青"]},
        {"name": "容量", "values": ["60ml"]},
    ]


def test_new_combinations_without_a_price_are_a_form_error_and_nothing_is_written(boss, mug):
    product, _, _ = mug
    data = form_data(boss.get(_url(product)))
    assert data["spec_price"] == "128.00"  # the lowest live price offered for new combinations
    tree = _tree(data)
    tree[1]["values"].append({"value": "120ml", "was": None})
    data.update({"spec_builder": json.dumps(tree), "spec_price": "", "name": "改了名字"})
    response = boss.post(_url(product), data)
    assert response.status_code == 200
    assert "将新增 2 个规格组合" in str(response.context["adminform"].form.errors["spec_price"])
    assert Sku.objects.filter(product=product).count() == 2
    assert Product.objects.get(pk=product.pk).name == "青瓷盖碗"  # nothing half-written
    data["spec_price"] = "99.00"
    assert boss.post(_url(product), data).status_code == 302
    new = Sku.objects.filter(product=product, specs__容量="120ml")
    assert sorted(new.values_list("price_fen", "stock")) == [(9900, 0), (9900, 0)]


def test_a_bad_tree_is_a_form_error(boss, mug):
    product, _, _ = mug
    data = form_data(boss.get(_url(product)))
    data["spec_builder"] = json.dumps([{"name": "颜色", "values": [{"value": "天青"}, {"value": "天青"}]}])
    response = boss.post(_url(product), data)
    assert response.status_code == 200
    assert "重复" in str(response.context["adminform"].form.errors["spec_builder"])


def _png() -> SimpleUploadedFile:
    out = io.BytesIO()
    Image.new("RGB", (12, 12), (200, 10, 10)).save(out, format="PNG")
    return SimpleUploadedFile("red.png", out.getvalue(), content_type="image/png")


@pytest.mark.usefixtures("media")
def test_each_sku_takes_its_own_picture_checked_by_pillow(boss, mug):
    product, first, second = mug
    data = form_data(boss.get(_url(product)))
    data["skus-1-image_file"] = SimpleUploadedFile("x.png", b"not a picture", content_type="image/png")
    response = boss.post(_url(product), data)
    assert response.status_code == 200  # ImageField (Pillow) refused it
    assert not Sku.objects.exclude(image_url="").exists()
    data = form_data(boss.get(_url(product)))
    data["skus-1-image_file"] = _png()
    assert boss.post(_url(product), data).status_code == 302
    second.refresh_from_db()
    first.refresh_from_db()
    assert second.image_url.startswith("uploads/") and second.image_url.endswith(".png")
    assert first.image_url == ""
    assert 'class="bo-sku-thumb"' in boss.get(_url(product)).content.decode()


def test_batch_filled_stock_is_relative_through_the_stock_service(boss, mug):
    """What the batch bar posts for "库存设为 10" on a page that showed 7 and 4: +3 and +6."""
    product, first, second = mug
    data = form_data(boss.get(_url(product)))
    data.update({"skus-0-stock_change": "3", "skus-1-stock_change": "6", "skus-0-price_fen": "88.00"})
    data.update({"skus-1-price_fen": "88.00", "skus-0-weight_g": "350", "skus-1-weight_g": "350"})
    Sku.objects.filter(pk=first.pk).update(stock=5)  # an order took two meanwhile
    assert boss.post(_url(product), data).status_code == 302
    rows = sorted(Sku.objects.filter(product=product).values_list("stock", "price_fen", "weight_g"))
    assert rows == [(8, 8800, 350), (10, 8800, 350)]


def test_a_change_only_user_without_stock_permission_cannot_move_stock(make_staff, mug):
    product, first, _ = mug
    client = make_staff("catalog.change_product", "catalog.change_sku", view_all=True)
    data = form_data(client.get(_url(product)))
    data["skus-0-stock_change"] = "5"
    response = client.post(_url(product), data, follow=True)
    assert any("需要 change_stock 权限" in text for _, text in texts(response))
    assert Sku.objects.get(pk=first.pk).stock == 7

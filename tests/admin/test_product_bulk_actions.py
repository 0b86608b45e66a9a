"""The product list's bulk actions (上架, 下架, 设置分类, 设置标签): the service's values, the admin's
per-product report and history lines, and a view-only user refused."""

from __future__ import annotations

import pytest
from admin_helpers import action, texts
from django.contrib.admin.models import LogEntry
from django.core.exceptions import PermissionDenied

from apps.catalog import product_bulk
from apps.catalog.models import Category, Kind, Product, Sku

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(make_sku):
    """Two products on sale with a live SKU, one off sale, and one without a live SKU (off sale)."""
    a = make_sku(name="青瓷盖碗").product
    b = make_sku(name="紫砂壶").product
    c = make_sku(name="公道杯").product
    Product.objects.filter(pk=c.pk).update(is_active=False)
    d = make_sku(name="旧款").product
    Sku.objects.filter(product=d).update(is_active=False)
    Product.objects.filter(pk=d.pk).update(is_active=False)
    return a, b, c, d


def _flags(field: str) -> dict[str, bool]:
    return dict(Product.objects.values_list("name", field))


def test_service_reports_changed_unchanged_and_refused(three, django_user_model):
    a, b, c, d = three
    boss = django_user_model.objects.create_superuser("boss2")
    result = product_bulk.products_set_active(product_ids=[a.pk, c.pk, d.pk], active=True, user=boss)
    assert (result.changed, result.unchanged, list(result.refused)) == ([c.pk], [a.pk], [d.pk])
    assert _flags("is_active") == {"青瓷盖碗": True, "紫砂壶": True, "公道杯": True, "旧款": False}
    result = product_bulk.products_set_tag(product_ids=[a.pk, b.pk], tag="hot", on=True, user=boss)
    assert result.changed == [a.pk, b.pk] and _flags("is_hot")["紫砂壶"] is True
    consult = Category.objects.create(name="咨询", kind=Kind.CONSULTATION)
    result = product_bulk.products_set_category(product_ids=[a.pk], category_id=consult.pk, user=boss)
    assert result.changed == [] and "不符" in result.refused[a.pk]
    viewer = django_user_model.objects.create_user("v", is_staff=True)
    with pytest.raises(PermissionDenied):
        product_bulk.products_set_active(product_ids=[a.pk], active=False, user=viewer)


def test_off_and_on_sale_from_the_list_report_and_log_each_product(boss, three):
    a, b, c, d = three
    response = action(boss, "catalog.product", "take_off_sale", [a.pk, c.pk])
    shown = texts(response)
    assert ("success", "青瓷盖碗: 已下架") in shown and ("warning", "公道杯: 原已下架") in shown
    assert ("warning", "下架：成功 1 / 共 2") in shown
    assert _flags("is_active") == {"青瓷盖碗": False, "紫砂壶": True, "公道杯": False, "旧款": False}
    assert list(LogEntry.objects.values_list("object_id", "change_message")) == [(str(a.pk), "批量操作：已下架")]
    response = action(boss, "catalog.product", "put_on_sale", [a.pk, d.pk])
    shown = texts(response)
    assert ("success", "青瓷盖碗: 已上架") in shown
    assert ("error", "旧款: 未上架：没有启用的 SKU，顾客无法购买") in shown
    assert _flags("is_active")["青瓷盖碗"] is True and _flags("is_active")["旧款"] is False


def test_category_and_tag_from_the_list(boss, three):
    a, b, _, _ = three
    teaware = Category.objects.create(name="茶具", kind=Kind.GOODS)
    response = action(boss, "catalog.product", "set_category", [a.pk, b.pk], category=str(teaware.pk))
    assert ("success", "设置分类：成功 2 / 共 2") in texts(response)
    assert set(Product.objects.filter(pk__in=[a.pk, b.pk]).values_list("category_id", flat=True)) == {teaware.pk}
    response = action(boss, "catalog.product", "set_tag", [a.pk], tag="recommended:1")
    assert ("success", "青瓷盖碗: 已设为推荐") in texts(response)
    assert _flags("is_recommended") == {"青瓷盖碗": True, "紫砂壶": False, "公道杯": False, "旧款": False}
    response = action(boss, "catalog.product", "set_tag", [a.pk], tag="")
    assert ("error", "请先在操作旁选择一个标签。") in texts(response)
    response = action(boss, "catalog.product", "set_category", [a.pk])
    assert ("error", "请先在操作旁选择一个分类。") in texts(response)


def test_a_view_only_user_sees_no_action_and_a_hand_made_post_changes_nothing(viewer, three):
    a, _, _, _ = three
    page = viewer.get("/admin/catalog/product/").content.decode()
    assert "put_on_sale" not in page and "take_off_sale" not in page and "set_tag" not in page
    for name, extra in (
        ("take_off_sale", {}),
        ("set_tag", {"tag": "hot:1"}),
        ("set_category", {"category": str(a.category_id)}),
    ):
        action(viewer, "catalog.product", name, [a.pk], **extra)
    assert _flags("is_active")["青瓷盖碗"] is True and _flags("is_hot")["青瓷盖碗"] is False
    assert not LogEntry.objects.exists()

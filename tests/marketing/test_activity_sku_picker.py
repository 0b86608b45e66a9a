"""秒杀 / 拼团 / 砍价 pick the product by name (admin autocomplete), then one of its live SKUs (a JSON
endpoint under the admin, permission-checked); the server refuses a SKU of another product."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import Sku
from apps.marketing.models import BargainCampaign, FlashSale, GroupBuy
from starmall.admin_money import yuan

pytestmark = pytest.mark.django_db


def _when(minutes: int, name: str) -> dict:
    local = timezone.localtime(timezone.now() + dt.timedelta(minutes=minutes))
    return {f"{name}_0": local.strftime("%Y-%m-%d"), f"{name}_1": local.strftime("%H:%M:%S")}


FORMS = {
    "flashsale": lambda: {"title": "秒杀", "price_fen": yuan(9900), "stock": 2, "limit_per_customer": 1},
    "groupbuy": lambda: {
        "title": "两人团",
        "price_fen": yuan(6600),
        "stock": 2,
        "group_size": 2,
        "hours": 24,
        "limit_per_customer": 1,
        "simulate_min": 1,
    },
    "bargaincampaign": lambda: {
        "title": "砍一刀",
        "original_price_fen": yuan(10000),
        "floor_price_fen": yuan(100),
        "helpers_needed": 5,
        "hours": 24,
        "stock": 2,
        "limit_per_customer": 1,
    },
}
MODELS = {"flashsale": FlashSale, "groupbuy": GroupBuy, "bargaincampaign": BargainCampaign}


@pytest.fixture
def mugs(make_sku):
    """A mug with two live SKUs and one switched off; a teapot with one SKU."""
    blue = make_sku(price_fen=12800, stock=7, specs={"颜色": "天青"})
    white = Sku.objects.create(product=blue.product, specs={"颜色": "月白"}, price_fen=13800, stock=4)
    Sku.objects.create(product=blue.product, specs={"颜色": "墨黑"}, price_fen=13800, stock=4, is_active=False)
    pot = make_sku(name="紫砂壶", price_fen=30000, stock=3)
    return blue, white, pot


def test_sku_options_lists_the_products_live_skus(boss, mugs):
    blue, white, _ = mugs
    for model in MODELS:
        answer = boss.get(reverse(f"admin:marketing_{model}_sku_options"), {"product": blue.product_id})
        assert answer.status_code == 200
        assert answer.json() == {
            "skus": [
                {"id": blue.pk, "label": "颜色：天青 · ¥128.00 · 库存 7", "stock": 7, "price_fen": 12800},
                {"id": white.pk, "label": "颜色：月白 · ¥138.00 · 库存 4", "stock": 4, "price_fen": 13800},
            ]
        }
    bad = boss.get(reverse("admin:marketing_flashsale_sku_options"), {"product": "x"})
    assert bad.status_code == 400 and bad.json()["message"] == "请先选择商品。"


def test_the_product_is_found_by_name_through_the_admin_autocomplete(boss, mugs):
    answer = boss.get(
        "/admin/autocomplete/", {"app_label": "catalog", "model_name": "sku", "field_name": "product", "term": "紫砂"}
    )
    assert answer.status_code == 200
    assert [row["text"] for row in answer.json()["results"]] == ["紫砂壶"]
    page = boss.get(reverse("admin:marketing_flashsale_add")).content.decode()
    assert 'name="product"' in page and "admin-autocomplete" in page and "data-sku-picker" in page
    assert "marketing/sku_picker.js" in page


@pytest.mark.parametrize("model", list(MODELS))
def test_each_activity_is_scheduled_by_product_and_sku_and_a_foreign_sku_is_refused(boss, mugs, model):
    blue, white, pot = mugs
    base = {**FORMS[model](), **_when(60, "starts_at"), **_when(60 * 48, "ends_at"), "is_active": "on"}
    url = reverse(f"admin:marketing_{model}_add")
    refused = boss.post(url, {**base, "product": blue.product_id, "sku": pot.pk})
    assert refused.status_code == 200
    assert "不属于所选商品" in str(refused.context["adminform"].form.errors["sku"])
    missing = boss.post(url, {**base, "sku": white.pk})
    assert "请选择商品" in str(missing.context["adminform"].form.errors["product"])
    assert not MODELS[model].objects.exists()
    done = boss.post(url, {**base, "product": blue.product_id, "sku": white.pk})
    assert done.status_code == 302, done.context["adminform"].form.errors
    assert MODELS[model].objects.get().sku_id == white.pk


def test_a_view_only_user_gets_no_sku_options_and_cannot_add(mugs, django_user_model):
    blue, white, _ = mugs
    user = django_user_model.objects.create_user("look", password="pw-123456", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    client = Client()
    client.force_login(user)
    for model in MODELS:
        answer = client.get(reverse(f"admin:marketing_{model}_sku_options"), {"product": blue.product_id})
        assert answer.status_code == 403 and answer.json()["code"] == "forbidden"
        assert client.get(reverse(f"admin:marketing_{model}_add")).status_code == 403
    assert not FlashSale.objects.exists()

"""Catalog API: categories, products (paginated, min price), detail with SKUs/teacher, teachers."""

import pytest
from django.core.management import call_command

from apps.catalog.models import Product, Sku, Teacher

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    call_command("loaddata", "fixtures/demo.json", verbosity=0)


def test_demo_fixture_has_the_promised_shape(demo):
    assert Product.objects.filter(kind="goods").count() == 10
    assert Product.objects.filter(kind="consultation").count() == 2
    assert Teacher.objects.filter(product__isnull=False).count() == 2
    multi = [p for p in Product.objects.filter(kind="goods") if p.skus.count() >= 2]
    assert len(multi) == 10
    assert all(isinstance(s.price_fen, int) and s.price_fen > 0 for s in Sku.objects.all())


def test_categories_and_products_listing(client, demo):
    categories = client.get("/api/v1/categories").json()
    assert len(categories) == 4
    assert {c["kind"] for c in categories} == {"goods", "consultation"}
    page = client.get("/api/v1/products").json()
    assert page["count"] == 12 and page["previous"] is None
    first = page["results"][0]
    assert set(first) == {"id", "name", "kind", "cover_url", "min_price_fen", "sales"}
    assert first["min_price_fen"] == 12800
    assert client.get("/api/v1/products", {"kind": "consultation"}).json()["count"] == 2
    assert client.get("/api/v1/products", {"q": "香"}).json()["count"] == 3
    assert client.get("/api/v1/products", {"category": 3}).json()["count"] == 3
    assert client.get("/api/v1/products", {"page_size": 5, "page": 3}).json()["results"][-1]["id"] == 12
    assert client.get("/api/v1/products", {"kind": "food"}).status_code == 400


def test_product_detail_goods_and_consultation(client, demo):
    from apps.appointments.slots import slots_generate

    goods = client.get("/api/v1/products/1").json()
    assert [s["price_fen"] for s in goods["skus"]] == [12800, 13800, 12800, 13800]
    assert goods["skus"][0]["specs"] == {"颜色": "天青", "容量": "120ml"}
    assert goods["teacher"] is None
    slots_generate()
    consult = client.get("/api/v1/products/11").json()
    assert consult["teacher"] == {"id": 1, "name": "李明远", "title": "国学易经讲师"}
    assert len(consult["next_slots"]) == 5
    assert client.get("/api/v1/products/999").json()["code"] == "not_found"


def test_teachers_list(client, demo):
    assert client.get("/api/v1/teachers").json() == [
        {"id": 1, "name": "李明远", "title": "国学易经讲师", "product_id": 11},
        {"id": 2, "name": "王婉清", "title": "择日风水顾问", "product_id": 12},
    ]

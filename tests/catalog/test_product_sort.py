"""The product list sorted (sales, price, -price, new) and tagged (hot, recommended)."""

import pytest

from apps.catalog.models import Product, Sku

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(make_sku):
    a = make_sku(price_fen=5000, name="甲").product
    b = make_sku(price_fen=1000, name="乙").product
    c = make_sku(price_fen=3000, name="丙").product
    Sku.objects.create(product=c, specs={"颜色": "白"}, price_fen=900, is_active=False)  # inactive: not its price
    Product.objects.filter(pk=a.pk).update(sales=5, is_hot=True)
    Product.objects.filter(pk=b.pk).update(sales=9, is_recommended=True)
    Product.objects.filter(pk=c.pk).update(sales=1, is_hot=True)
    return a, b, c


def ids(client, **params):
    response = client.get("/api/v1/products", params)
    assert response.status_code == 200, response.json()
    return [p["id"] for p in response.json()["results"]]


def test_sorts(client, three):
    a, b, c = three
    assert ids(client, sort="sales") == [b.pk, a.pk, c.pk]
    assert ids(client, sort="price") == [b.pk, c.pk, a.pk]
    assert ids(client, sort="-price") == [a.pk, c.pk, b.pk]
    assert ids(client, sort="new") == [c.pk, b.pk, a.pk]
    assert ids(client) == [a.pk, b.pk, c.pk]  # staff's order (sort, id)


def test_tags_and_sort_together(client, three):
    a, b, c = three
    assert ids(client, tag="hot", sort="price") == [c.pk, a.pk]
    assert ids(client, tag="recommended") == [b.pk]


@pytest.mark.parametrize(
    "params, field", [({"sort": "cheap"}, "sort"), ({"tag": "cold"}, "tag"), ({"sort": "sales; DROP"}, "sort")]
)
def test_bad_sort_or_tag_is_400_invalid(client, three, params, field):
    response = client.get("/api/v1/products", params)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and field in body["detail"] and body["message"]


def test_sales_sort_follows_paid_and_refunded_units(client, three):
    from apps.catalog import stock

    a, b, c = three
    stock.product_sales_add(quantities={c.pk: 10})
    assert ids(client, sort="sales")[0] == c.pk
    stock.product_sales_remove(quantities={c.pk: 10})  # fully refunded: out of sales again
    assert ids(client, sort="sales") == [b.pk, a.pk, c.pk]

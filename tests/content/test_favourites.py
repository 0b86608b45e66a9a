"""Favourites: POST keeps a product (201, twice 200, one row), GET lists them paginated,
DELETE forgets (204, also twice); a token is needed."""

import pytest

from apps.content.models import Favourite

pytestmark = pytest.mark.django_db


def test_add_twice_list_and_delete(api, customer, make_sku):
    first, second = make_sku(price_fen=3600).product, make_sku(price_fen=5000, name="茶盘").product
    assert api.post("/api/v1/me/favourites", {"product_id": first.pk}, format="json").status_code == 201
    assert api.post("/api/v1/me/favourites", {"product_id": first.pk}, format="json").status_code == 200
    assert api.post("/api/v1/me/favourites", {"product_id": second.pk}, format="json").status_code == 201
    assert Favourite.objects.filter(customer=customer).count() == 2
    page = api.get("/api/v1/me/favourites").json()
    assert page["count"] == 2
    assert [p["id"] for p in page["results"]] == [second.pk, first.pk]  # last kept first
    assert set(page["results"][0]) >= {"id", "name", "kind", "cover_url", "min_price_fen", "sales"}
    assert page["results"][0]["min_price_fen"] == 5000
    assert api.delete(f"/api/v1/me/favourites/{first.pk}").status_code == 204
    assert api.delete(f"/api/v1/me/favourites/{first.pk}").status_code == 204
    assert [p["id"] for p in api.get("/api/v1/me/favourites").json()["results"]] == [second.pk]


def test_favourites_are_per_customer_and_need_a_token(api, make_api, make_customer, make_sku, client):
    product = make_sku().product
    api.post("/api/v1/me/favourites", {"product_id": product.pk}, format="json")
    assert make_api(make_customer()).get("/api/v1/me/favourites").json()["count"] == 0
    assert client.get("/api/v1/me/favourites").status_code == 401


def test_add_unknown_or_bad_product(api):
    assert api.post("/api/v1/me/favourites", {"product_id": 999999}, format="json").json()["code"] == "not_found"
    bad = api.post("/api/v1/me/favourites", {"product_id": "x"}, format="json")
    assert bad.status_code == 400 and "product_id" in bad.json()["detail"]

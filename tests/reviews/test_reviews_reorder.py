"""Reviews (one per completed line, images from our uploads, product aggregate) and buying again."""

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from apps.catalog.models import Product, Sku
from apps.orders import services, shipments
from apps.orders.models import Order
from apps.reviews import services as reviews
from apps.reviews.models import Review

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]


def complete(order_no):
    order = Order.objects.get(order_no=order_no)
    assert shipments.order_ship(order=order, actor="staff:t", carrier_code="yunda", tracking_no="YD100200300")
    assert services.order_complete(order=Order.objects.get(pk=order.pk), actor="customer")


def image_url(api) -> str:
    out = io.BytesIO()
    Image.new("RGB", (16, 16), (9, 9, 9)).save(out, format="JPEG")
    response = api.post("/api/v1/uploads", {"file": SimpleUploadedFile("a.jpg", out.getvalue())}, format="multipart")
    assert response.status_code == 201
    return response.json()["url"]


def test_review_rules_and_product_rating(buyer, paid, make_api, make_customer):
    order, sku = paid()
    line_id = order["lines"][0]["id"]
    url = f"/api/v1/orders/{order['order_no']}/reviews"
    early = buyer.api.post(url, {"line_id": line_id, "rating": 5, "text": "好"}, format="json")
    assert early.status_code == 409 and early.json()["code"] == "invalid_state"
    complete(order["order_no"])
    pic = image_url(buyer.api)
    foreign = buyer.api.post(
        url, {"line_id": line_id, "rating": 5, "images": ["https://x.example/a.jpg"]}, format="json"
    )
    assert foreign.status_code == 400 and "images" in foreign.json()["detail"]
    too_many = buyer.api.post(url, {"line_id": line_id, "rating": 5, "images": [pic] * 7}, format="json")
    assert too_many.status_code == 400
    bad = buyer.api.post(url, {"line_id": line_id, "rating": 6}, format="json")
    assert bad.status_code == 400 and "rating" in bad.json()["detail"]
    others = make_api(make_customer()).post(url, {"line_id": line_id, "rating": 1}, format="json")
    assert others.status_code == 404

    created = buyer.api.post(url, {"line_id": line_id, "rating": 4, "text": "釉色很好", "images": [pic]}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["rating"] == 4 and created.json()["images"] == [pic] and created.json()["reply"] is None
    again = buyer.api.post(url, {"line_id": line_id, "rating": 1}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"
    assert Review.objects.count() == 1

    second, _ = paid(sku=sku, quantity=1)
    complete(second["order_no"])
    buyer.api.post(
        f"/api/v1/orders/{second['order_no']}/reviews",
        {"line_id": second["lines"][0]["id"], "rating": 5},
        format="json",
    )
    product = Product.objects.get(pk=sku.product_id)
    assert (product.review_count, product.rating_total, product.rating) == (2, 9, 4.5)
    anonymous = make_api()
    detail = anonymous.get(f"/api/v1/products/{sku.product_id}").json()
    assert (detail["rating"], detail["review_count"]) == (4.5, 2)
    listing = anonymous.get(f"/api/v1/products/{sku.product_id}/reviews").json()
    assert listing["count"] == 2
    assert [r["rating"] for r in listing["results"]] == [5, 4]
    assert listing["results"][1]["text"] == "釉色很好"
    assert listing["results"][1]["nickname"].endswith("*")

    first = Review.objects.get(line_id=line_id)
    assert reviews.review_reply(review_id=first.pk, text="谢谢惠顾", actor="staff:t")
    assert reviews.review_set_hidden(review_id=Review.objects.exclude(pk=first.pk).get().pk, hidden=True, actor="s")
    product.refresh_from_db()
    assert (product.review_count, product.rating_total, product.rating) == (1, 4, 4.0)
    listing = anonymous.get(f"/api/v1/products/{sku.product_id}/reviews").json()
    assert listing["count"] == 1 and listing["results"][0]["reply"] == "谢谢惠顾"


def test_product_without_reviews_has_null_rating(make_api, make_sku):
    sku = make_sku()
    detail = make_api().get(f"/api/v1/products/{sku.product_id}").json()
    assert (detail["rating"], detail["review_count"]) == (None, 0)
    assert make_api().get("/api/v1/products/999999/reviews").status_code == 404


def test_reorder_confirms_the_same_lines_and_lists_what_is_gone(buyer, paid, make_sku, place_order):
    a = make_sku(price_fen=1000, stock=10, name="甲")
    b = make_sku(price_fen=2000, stock=10, name="乙")
    c = make_sku(price_fen=3000, stock=10, name="丙")
    order = place_order(buyer.api, items=[(a, 2), (b, 1), (c, 3)])
    Sku.objects.filter(pk=b.pk).update(is_active=False)
    Sku.objects.filter(pk=c.pk).update(stock=1)
    Sku.objects.filter(pk=a.pk).update(price_fen=1100)
    response = buyer.api.post(f"/api/v1/orders/{order['order_no']}/reorder")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [
        (line["sku_id"], line["quantity"], line["price_fen"])
        for line in sorted(body["lines"], key=lambda x: x["sku_id"])
    ] == [(a.pk, 2, 1100), (c.pk, 1, 3000)]
    assert body["goods_fen"] == 5200 and body["order_key"]
    assert body["missing"] == [
        {"sku_id": b.pk, "name": "乙", "specs": {"颜色": "天青"}, "quantity": 1, "reason": "off_sale"}
    ]
    created = buyer.api.post("/api/v1/orders", {"order_key": body["order_key"]}, format="json")
    assert created.status_code == 201 and created.json()["goods_fen"] == 5200
    Sku.objects.filter(pk__in=[a.pk, c.pk]).update(is_active=False)
    gone = buyer.api.post(f"/api/v1/orders/{order['order_no']}/reorder")
    assert gone.status_code == 409 and len(gone.json()["detail"]["missing"]) == 3

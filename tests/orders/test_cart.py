"""The cart (API.md Additions, "Cart"): add, change, remove, availability, and buying from it."""

import pytest

from apps.catalog.models import Sku
from apps.orders import cart as cart_services
from apps.orders.confirm import MAX_LINES, MAX_QUANTITY
from apps.orders.models import CartItem, Order

pytestmark = pytest.mark.django_db


def add(api, sku, quantity):
    return api.post("/api/v1/cart/items", {"sku_id": sku.pk, "quantity": quantity}, format="json")


def lines(customer):
    return sorted(CartItem.objects.filter(customer=customer).values_list("sku_id", "quantity"))


def test_add_returns_the_item_and_the_same_sku_adds_to_its_line(api, customer, make_sku):
    sku = make_sku(price_fen=12800, stock=10, specs={"颜色": "天青"})
    first = add(api, sku, 2)
    assert first.status_code == 201
    item = first.json()
    assert item == {
        "id": item["id"],
        "sku_id": sku.pk,
        "product_id": sku.product_id,
        "name": "青瓷盖碗",
        "specs": {"颜色": "天青"},
        "price_fen": 12800,
        "quantity": 2,
        "stock": 10,
        "available": True,
    }
    again = add(api, sku, 3)
    assert again.status_code == 201
    assert (again.json()["id"], again.json()["quantity"]) == (item["id"], 5)
    assert lines(customer) == [(sku.pk, 5)]


def test_cart_lists_lines_newest_first_with_count(api, customer, make_sku):
    a, b = make_sku(price_fen=3600, name="宣纸"), make_sku(price_fen=6800, name="公道杯")
    add(api, a, 2)
    add(api, b, 1)
    body = api.get("/api/v1/cart").json()
    assert [(i["name"], i["quantity"], i["price_fen"], i["available"]) for i in body["items"]] == [
        ("公道杯", 1, 6800, True),
        ("宣纸", 2, 3600, True),
    ]
    assert (body["count"], body["quantity_total"]) == (2, 3)


def test_add_checks_stock_and_the_quantity_cap(api, customer, make_sku):
    sku = make_sku(stock=5)
    assert add(api, sku, 4).status_code == 201
    over = add(api, sku, 2)  # 4 + 2 > 5
    assert over.status_code == 409
    assert over.json()["code"] == "insufficient_stock"
    assert over.json()["message"] == "库存不足，最多可购买 5 件。"
    assert over.json()["detail"] == {"sku_id": sku.pk, "requested": 6, "available": 5}
    assert lines(customer) == [(sku.pk, 4)]  # unchanged
    big = make_sku(stock=5000)
    assert add(api, big, 999).status_code == 201
    capped = add(api, big, 1)
    assert (capped.status_code, capped.json()["code"]) == (409, "limit_exceeded")
    assert (add(api, big, 1000).status_code, CartItem.objects.get(sku=big).quantity) == (400, 999)
    sold_out = add(api, make_sku(stock=0), 1)
    assert (sold_out.status_code, sold_out.json()["message"]) == (409, "该商品已售罄。")


def test_add_past_999_units_in_a_line_is_limit_exceeded(api, customer, make_sku):
    """API.md Additions: a per-customer cap is 409 ``limit_exceeded``; the cart's 999 units a
    line is one. The request itself (1..999) is valid, the line it would make is not."""
    sku = make_sku(stock=5000)
    assert add(api, sku, 990).status_code == 201
    over = add(api, sku, 10)
    assert over.status_code == 409
    assert over.json() == {
        "code": "limit_exceeded",
        "message": "购物车中每种商品最多 999 件，已有 990 件。",
        "detail": {"sku_id": sku.pk, "requested": 1000, "max_quantity": 999},
    }
    assert lines(customer) == [(sku.pk, 990)]  # unchanged
    assert (add(api, sku, 9).status_code, lines(customer)) == (201, [(sku.pk, 999)])
    low = make_sku(stock=100)  # past both the cap and the stock: the cap is named
    assert add(api, low, 50).status_code == 201
    CartItem.objects.filter(sku=low).update(quantity=995)
    assert add(api, low, 10).json()["code"] == "limit_exceeded"


def test_add_past_999_racing_an_insert_is_limit_exceeded(customer, make_sku, monkeypatch):
    """The line appears between our UPDATE and our INSERT (UNIQUE): the add to it is judged
    as any add, 409 ``limit_exceeded`` past 999 units."""
    from starmall.errors import LimitExceeded

    sku = make_sku(stock=5000)
    real_insert = cart_services._insert_line

    def insert_after_another(*, customer_id, sku, quantity):
        CartItem.objects.create(customer_id=customer_id, sku=sku, quantity=995)  # the other request's line
        return real_insert(customer_id=customer_id, sku=sku, quantity=quantity)

    monkeypatch.setattr(cart_services, "_insert_line", insert_after_another)
    with pytest.raises(LimitExceeded) as refused:
        cart_services.cart_item_add(customer_id=customer.pk, sku_id=sku.pk, quantity=10)
    assert refused.value.detail == {"sku_id": sku.pk, "requested": 1005, "max_quantity": 999}
    assert refused.value.message == "购物车中每种商品最多 999 件，已有 995 件。"


def test_a_request_quantity_outside_1_to_999_is_invalid(api, customer, make_sku):
    """One request's own value out of range is a field error (400 ``invalid``), whatever the cart
    holds, at the API and at the service."""
    sku = make_sku(stock=5000)
    item_id = add(api, sku, 5).json()["id"]
    for quantity in (0, 1000):
        added = add(api, sku, quantity)
        assert (added.status_code, added.json()["code"], list(added.json()["detail"])) == (400, "invalid", ["quantity"])
    patched = api.patch(f"/api/v1/cart/items/{item_id}", {"quantity": 1000}, format="json")
    assert (patched.status_code, patched.json()["code"], list(patched.json()["detail"])) == (
        400,
        "invalid",
        ["quantity"],
    )
    assert lines(customer) == [(sku.pk, 5)]  # unchanged
    from starmall.errors import InvalidInput

    for quantity in (0, 1000):
        with pytest.raises(InvalidInput):
            cart_services.cart_item_add(customer_id=customer.pk, sku_id=sku.pk, quantity=quantity)
        with pytest.raises(InvalidInput):
            cart_services.cart_item_update(customer_id=customer.pk, item_id=item_id, quantity=quantity)
    assert lines(customer) == [(sku.pk, 5)]


def test_add_refuses_consultations_and_skus_off_sale(api, customer, make_sku, consultation):
    refused = api.post("/api/v1/cart/items", {"sku_id": consultation.sku.pk, "quantity": 1}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid")
    assert "sku_id" in refused.json()["detail"]
    off = make_sku()
    Sku.objects.filter(pk=off.pk).update(is_active=False)
    assert add(api, off, 1).status_code == 404
    assert api.post("/api/v1/cart/items", {"sku_id": 10**9, "quantity": 1}, format="json").status_code == 404
    assert CartItem.objects.count() == 0


def test_add_caps_distinct_lines(api, customer, make_sku, monkeypatch):
    monkeypatch.setattr(cart_services, "MAX_LINES", 3)
    skus = [make_sku(name=f"商品{n}") for n in range(4)]
    for sku in skus[:3]:
        assert add(api, sku, 1).status_code == 201
    refused = add(api, skus[3], 1)
    assert (refused.status_code, refused.json()["code"]) == (409, "limit_exceeded")
    assert add(api, skus[0], 1).status_code == 201  # an existing line may still grow
    assert CartItem.objects.filter(customer=customer).count() == 3


def test_patch_sets_the_quantity_within_stock(api, customer, make_sku):
    sku = make_sku(stock=6)
    item_id = add(api, sku, 1).json()["id"]
    changed = api.patch(f"/api/v1/cart/items/{item_id}", {"quantity": 6}, format="json")
    assert (changed.status_code, changed.json()["quantity"], changed.json()["available"]) == (200, 6, True)
    too_many = api.patch(f"/api/v1/cart/items/{item_id}", {"quantity": 7}, format="json")
    assert (too_many.status_code, too_many.json()["code"]) == (409, "insufficient_stock")
    assert api.patch(f"/api/v1/cart/items/{item_id}", {"quantity": 0}, format="json").status_code == 400
    assert lines(customer) == [(sku.pk, 6)]


def test_delete_removes_the_line(api, customer, make_sku):
    item_id = add(api, make_sku(), 1).json()["id"]
    assert api.delete(f"/api/v1/cart/items/{item_id}").status_code == 204
    assert api.delete(f"/api/v1/cart/items/{item_id}").status_code == 404
    assert CartItem.objects.count() == 0


def test_someone_elses_line_is_not_found(api, make_customer, make_api, make_sku):
    other = make_customer()
    theirs = add(make_api(other), make_sku(), 2).json()["id"]
    assert api.patch(f"/api/v1/cart/items/{theirs}", {"quantity": 1}, format="json").status_code == 404
    assert api.delete(f"/api/v1/cart/items/{theirs}").status_code == 404
    assert api.get("/api/v1/cart").json() == {"items": [], "count": 0, "quantity_total": 0}
    assert CartItem.objects.get(pk=theirs).quantity == 2


def test_lines_off_sale_or_out_of_stock_are_unavailable(api, customer, make_sku):
    on, sku_off, product_off, empty, short = (make_sku(stock=5, name=f"商品{n}") for n in range(5))
    for sku in (on, sku_off, product_off, empty, short):
        add(api, sku, 3)
    Sku.objects.filter(pk=sku_off.pk).update(is_active=False)
    product_off.product.is_active = False
    product_off.product.save()
    Sku.objects.filter(pk=empty.pk).update(stock=0)
    Sku.objects.filter(pk=short.pk).update(stock=2)  # fewer than the line's 3
    items = {i["sku_id"]: (i["available"], i["stock"]) for i in api.get("/api/v1/cart").json()["items"]}
    assert items == {
        on.pk: (True, 5),
        sku_off.pk: (False, 0),
        product_off.pk: (False, 0),
        empty.pk: (False, 0),
        short.pk: (False, 2),
    }


def test_the_cart_needs_a_token(client):
    assert client.get("/api/v1/cart").status_code == 401
    assert (
        client.post("/api/v1/cart/items", {"sku_id": 1, "quantity": 1}, content_type="application/json").status_code
        == 401
    )


# --- buying from the cart -------------------------------------------------------------------


def confirm_cart(api, ids, **extra):
    return api.post("/api/v1/orders/confirm", {"cart_item_ids": ids, **extra}, format="json")


def test_confirm_with_cart_item_ids_prices_those_lines_and_create_removes_them(
    api, customer, address, make_sku, freight_default, django_capture_on_commit_callbacks
):
    a, b, kept = make_sku(price_fen=3600, stock=10), make_sku(price_fen=1200, stock=10), make_sku(stock=10)
    ids = [add(api, a, 2).json()["id"], add(api, b, 1).json()["id"]]
    add(api, kept, 1)
    confirmed = confirm_cart(api, ids)
    assert confirmed.status_code == 200, confirmed.json()
    draft = confirmed.json()
    assert [(line["sku_id"], line["quantity"], line["amount_fen"]) for line in draft["lines"]] == [
        (a.pk, 2, 7200),
        (b.pk, 1, 1200),
    ]
    # 8400 < 9900 (the default template's free-shipping amount): its first fee
    assert (draft["goods_fen"], draft["freight_fen"]) == (8400, freight_default.first_fee_fen)
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/orders", {"order_key": draft["order_key"]}, format="json")
    assert created.status_code == 201
    assert created.json()["pay_fen"] == 8400 + freight_default.first_fee_fen
    assert lines(customer) == [(kept.pk, 1)]  # only the bought lines are gone
    assert (Sku.objects.get(pk=a.pk).stock, Sku.objects.get(pk=b.pk).stock) == (8, 9)


def test_a_failed_create_keeps_the_cart(api, customer, address, make_sku):
    sku = make_sku(price_fen=3600, stock=3)
    item_id = add(api, sku, 3).json()["id"]
    key = confirm_cart(api, [item_id]).json()["order_key"]
    Sku.objects.filter(pk=sku.pk).update(stock=2)  # someone else bought one meanwhile
    failed = api.post("/api/v1/orders", {"order_key": key}, format="json")
    assert (failed.status_code, failed.json()["code"]) == (409, "insufficient_stock")
    assert lines(customer) == [(sku.pk, 3)]  # rolled back with the order
    assert Order.objects.count() == 0


def test_confirm_refuses_items_and_cart_ids_together_or_anothers_lines(api, make_customer, make_api, address, make_sku):
    sku = make_sku()
    mine = add(api, sku, 1).json()["id"]
    both = api.post(
        "/api/v1/orders/confirm", {"cart_item_ids": [mine], "items": [{"sku_id": sku.pk, "quantity": 1}]}, format="json"
    )
    assert (both.status_code, both.json()["code"]) == (400, "invalid")
    assert "cart_item_ids" in both.json()["detail"]
    theirs = add(make_api(make_customer()), sku, 1).json()["id"]
    refused = confirm_cart(api, [mine, theirs])
    assert (refused.status_code, refused.json()["code"]) == (404, "not_found")
    assert refused.json()["detail"] == {"cart_item_ids": [theirs]}
    assert confirm_cart(api, []).status_code == 400


def test_a_line_grown_after_confirm_keeps_the_difference(
    api, customer, address, make_sku, django_capture_on_commit_callbacks
):
    """Bought 2 at confirm, 3 more added in another tab before create: 3 stay in the cart. A line
    lowered after confirm (to 1; 2 were bought) is removed: nothing of it is left to buy."""
    grows, shrinks = make_sku(price_fen=5000, stock=10), make_sku(price_fen=5000, stock=10)
    ids = [add(api, grows, 2).json()["id"], add(api, shrinks, 2).json()["id"]]
    key = confirm_cart(api, ids).json()["order_key"]
    add(api, grows, 3)
    api.patch(f"/api/v1/cart/items/{ids[1]}", {"quantity": 1}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        order = api.post("/api/v1/orders", {"order_key": key}, format="json").json()
    assert [(line["sku_id"], line["quantity"]) for line in order["lines"]] == [(grows.pk, 2), (shrinks.pk, 2)]
    assert lines(customer) == [(grows.pk, 3)]


def test_the_same_key_again_does_not_touch_the_cart_twice(
    api, customer, address, make_sku, django_capture_on_commit_callbacks
):
    sku = make_sku(price_fen=3600, stock=10)
    item_id = add(api, sku, 2).json()["id"]
    key = confirm_cart(api, [item_id]).json()["order_key"]
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/v1/orders", {"order_key": key}, format="json").status_code == 201
    add(api, sku, 1)  # a new line of the same SKU
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/v1/orders", {"order_key": key}, format="json").status_code == 200
    assert lines(customer) == [(sku.pk, 1)]


def test_remove_bought_touches_only_the_customers_own_lines(make_customer, make_sku):
    mine, other = make_customer(), make_customer()
    sku = make_sku()
    theirs = CartItem.objects.create(customer=other, sku=sku, quantity=1)
    assert cart_services.cart_items_remove_bought(customer_id=mine.pk, bought=[[theirs.pk, 1]]) == 0
    assert CartItem.objects.filter(pk=theirs.pk).exists()


def test_service_caps_match_confirms():
    assert (cart_services.MAX_LINES, cart_services.MAX_QUANTITY) == (
        MAX_LINES,
        MAX_QUANTITY,
    )

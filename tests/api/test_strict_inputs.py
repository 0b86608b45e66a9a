"""Request values are what the served schema says (starmall/api/fields.py, pagination.py): JSON
types in bodies (API.md: "Money and counts in request bodies are JSON integers"), stated formats
in query strings, and the bounds the schema states are the ones the server keeps."""

import pytest
from django.urls import reverse

from apps.accounts.models import Address, Customer
from apps.distribution.withdrawals import MAX_AMOUNT_FEN
from apps.orders.models import CartItem

pytestmark = pytest.mark.django_db


def _invalid(response, field: str) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid" and field in body["detail"], body


def _schema(client) -> dict:
    return client.get(reverse("schema"), {"format": "json"}, HTTP_ACCEPT="application/json").json()


@pytest.mark.parametrize("amount", ["100", 100.5, True, None, [100]])
def test_money_in_a_body_is_a_json_integer(api, amount):
    _invalid(api.post("/api/v1/withdrawals", {"amount_fen": amount}, format="json"), "amount_fen")


@pytest.mark.parametrize("quantity", ["1", "01", True, 1.5, 2.0])
def test_counts_in_a_body_are_json_integers(api, make_sku, quantity):
    sku = make_sku(price_fen=100, stock=10)
    _invalid(api.post("/api/v1/cart/items", {"sku_id": sku.pk, "quantity": quantity}, format="json"), "quantity")
    _invalid(api.post("/api/v1/cart/items", {"sku_id": str(sku.pk), "quantity": 1}, format="json"), "sku_id")
    assert CartItem.objects.count() == 0
    ok = api.post("/api/v1/cart/items", {"sku_id": sku.pk, "quantity": 2}, format="json")
    assert ok.status_code == 201 and CartItem.objects.get().quantity == 2


@pytest.mark.parametrize("flag", ["0", "true", 1, 0, None])
def test_booleans_in_a_body_are_json_booleans(api, address, flag):
    other = Address.objects.create(
        customer=address.customer, name="李四", phone="13900000000", province="浙", city="杭", detail="路"
    )
    _invalid(api.patch(f"/api/v1/addresses/{other.pk}", {"is_default": flag}, format="json"), "is_default")
    assert Address.objects.get(pk=other.pk).is_default is False
    assert api.patch(f"/api/v1/addresses/{other.pk}", {"is_default": True}, format="json").status_code == 200


@pytest.mark.parametrize("nickname", [0, 12.5, False, ["a"]])
def test_strings_in_a_body_are_json_strings(api, customer, nickname):
    _invalid(api.patch("/api/v1/me", {"nickname": nickname}, format="json"), "nickname")
    assert Customer.objects.get(pk=customer.pk).nickname == customer.nickname


@pytest.mark.parametrize("phone", ["000000", "0571-88886666", "+8613800000000", "12800000000", "1380000000"])
def test_an_address_phone_is_a_mainland_mobile_number(api, address, phone):
    body = {"name": "王五", "phone": phone, "province": "浙江省", "city": "杭州市", "detail": "文三路 1 号"}
    _invalid(api.post("/api/v1/addresses", body, format="json"), "phone")
    _invalid(api.patch(f"/api/v1/addresses/{address.pk}", {"phone": phone}, format="json"), "phone")
    _invalid(api.post("/api/v1/sms/codes", {"phone": phone}, format="json"), "phone")
    assert Address.objects.get(pk=address.pk).phone == "13800000000" and Address.objects.count() == 1
    assert api.post("/api/v1/addresses", {**body, "phone": "19912345678"}, format="json").status_code == 201


def test_withdrawal_bounds_are_the_schema_bounds(api, client, settings):
    schema = _schema(client)["components"]["schemas"]["WithdrawalInRequest"]["properties"]["amount_fen"]
    assert (schema["minimum"], schema["maximum"]) == (settings.WITHDRAW_MIN_FEN, MAX_AMOUNT_FEN)
    _invalid(api.post("/api/v1/withdrawals", {"amount_fen": MAX_AMOUNT_FEN + 1}, format="json"), "amount_fen")


LIST_FILTERS = [
    "/api/v1/orders",
    "/api/v1/me/coupons",
    "/api/v1/me/commissions",
    "/api/v1/consultations",
    "/api/v1/flash-sales",
    "/api/v1/group-buys",
    "/api/v1/bargains",
]


@pytest.mark.parametrize("path", LIST_FILTERS)
def test_an_empty_status_filter_is_no_filter_and_the_schema_says_so(api, client, path, place_order, make_sku, address):
    """``?status=`` (API.md writes the filter so) lists what no filter lists; a value not among the
    choices is refused; the served schema's enum holds ``""``."""
    place_order(api, items=[(make_sku(), 1)], address=address)
    everything = api.get(path)
    assert everything.status_code == 200
    empty = api.get(path, {"status": ""})
    assert (empty.status_code, empty.json()) == (200, everything.json())
    _invalid(api.get(path, {"status": "nonsense"}), "status")
    parameters = _schema(client)["paths"][path]["get"]["parameters"]
    status = next(p for p in parameters if p["name"] == "status")
    assert "" in status["schema"]["enum"], status


def test_team_level_is_1_or_2(api):
    _invalid(api.get("/api/v1/me/team", {"level": ""}), "level")
    _invalid(api.get("/api/v1/me/team", {"level": "3"}), "level")
    assert api.get("/api/v1/me/team", {"level": "2"}).status_code == 200


@pytest.mark.parametrize("size", ["", "null", "0", "101", "1.0", " 5", "-1"])
def test_page_size_outside_1_to_100_is_refused(api, size):
    _invalid(api.get("/api/v1/orders", {"page_size": size}), "page_size")


@pytest.mark.parametrize("page", ["", "last", "0", "1.0", "x"])
def test_a_page_that_is_not_a_number_from_1_is_not_found(api, page):
    response = api.get("/api/v1/orders", {"page": page})
    assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert api.get("/api/v1/orders", {"page": "1", "page_size": "100"}).status_code == 200


@pytest.mark.parametrize("value", ["nan", "inf", "", "1,5", "0x10"])
def test_store_coordinates_are_finite_decimals(client, value):
    _invalid(client.get("/api/v1/stores", {"lat": value, "lng": "120"}), "lat")
    assert client.get("/api/v1/stores", {"lat": "3.02e1", "lng": "120"}).status_code == 200


@pytest.mark.parametrize("date", ["20261207", "2026-W49-1", "", "２０２６-１２-０７"])
def test_query_dates_are_yyyy_mm_dd(client, consultation, date):
    teacher = consultation.teacher
    _invalid(client.get(f"/api/v1/teachers/{teacher.pk}/slots", {"from": date}), "from")


def test_cart_patch_without_quantity_changes_nothing(api, make_sku):
    sku = make_sku(price_fen=100, stock=10)
    item = api.post("/api/v1/cart/items", {"sku_id": sku.pk, "quantity": 3}, format="json").json()
    answer = api.patch(f"/api/v1/cart/items/{item['id']}", {}, format="json")
    assert answer.status_code == 200 and answer.json()["quantity"] == 3
    assert CartItem.objects.get().quantity == 3
    assert api.patch("/api/v1/cart/items/999999", {}, format="json").status_code == 404


def test_blank_after_trimming_is_refused_and_said_so(api, customer, client):
    _invalid(api.patch("/api/v1/me", {"nickname": " \x1e\u3000"}, format="json"), "nickname")
    schema = _schema(client)["components"]["schemas"]["PatchedProfileInRequest"]["properties"]["nickname"]
    assert schema["minLength"] == 1 and schema["not"] == {"pattern": "\\x00"}
    assert "\\x1c-\\x20" in schema["pattern"] and "\\u3000" in schema["pattern"]

import pytest


@pytest.fixture
def place_order():
    """``place_order(api, items=[(sku, qty)], address=None, slot=None)`` -> order JSON (unpaid)."""

    def place(api, *, items, address=None, slot=None, **extra):
        body = {"items": [{"sku_id": sku.pk, "quantity": qty} for sku, qty in items], **extra}
        if address is not None:
            body["address_id"] = address.pk
        if slot is not None:
            body["slot_id"] = slot.pk
        confirmed = api.post("/api/v1/orders/confirm", body, format="json")
        assert confirmed.status_code == 200, confirmed.json()
        created = api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")
        assert created.status_code == 201, created.json()
        return created.json()

    return place

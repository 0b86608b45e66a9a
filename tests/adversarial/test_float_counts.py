"""Counts and money as JSON numbers with a fraction part (found from outside). API.md,
corrections: "Money and counts in request bodies are JSON integers". ``use_points: 1.0`` is
refused (400 invalid), but ``quantity: 1.0`` (cart), ``package_id: 1.0`` (recharges) and
``amount_fen: 100.0`` (withdrawals) are taken as integers: one rule, two behaviours. These
expect the strict one that use_points already has."""

from __future__ import annotations

import json

import pytest
from adv_helpers import assert_error

from apps.catalog.models import Sku
from apps.orders.models import Order

pytestmark = pytest.mark.django_db


def post(api, path, raw: str):
    return api.post(path, data=raw, content_type="application/json")


def test_use_points_float_is_refused_as_the_reference(shopper, make_sku):
    _, api, address = shopper(points=500)
    sku = make_sku()
    raw = (
        json.dumps({"items": [{"sku_id": sku.pk, "quantity": 1}], "address_id": address.pk})[:-1]
        + ', "use_points": 1.0}'
    )
    assert_error(post(api, "/api/v1/orders/confirm", raw), 400, "invalid")


def test_cart_quantity_float_is_refused(shopper, make_sku):
    _, api, _ = shopper()
    sku = make_sku()
    response = post(api, "/api/v1/cart/items", f'{{"sku_id": {sku.pk}, "quantity": 1.0}}')
    assert_error(response, 400, "invalid")


def test_confirm_quantity_float_is_refused(shopper, make_sku):
    _, api, address = shopper()
    sku = make_sku()
    raw = f'{{"items": [{{"sku_id": {sku.pk}, "quantity": 2.0}}], "address_id": {address.pk}}}'
    assert_error(post(api, "/api/v1/orders/confirm", raw), 400, "invalid")
    assert not Order.objects.exists()
    assert Sku.objects.filter(pk=sku.pk).exists()


def test_withdrawal_amount_float_is_refused(shopper):
    _, api, _ = shopper()
    assert_error(post(api, "/api/v1/withdrawals", '{"amount_fen": 100.0}'), 400, "invalid")

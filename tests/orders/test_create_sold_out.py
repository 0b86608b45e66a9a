"""Create's first rule: a draft whose SKU is flagged sold out is refused before any row is taken.

The flag (``apps.catalog.soldout``) is set only from a committed stock of 0, so a buyer who
confirmed just before the last unit went is answered as their confirm would be now, without a
transaction. A 秒杀's draft holds units reserved on the sale's quota and is left to the
database. After a commit the drafts are dropped before the SKU is flagged, so a buyer retrying
the create that took the last unit finds their order, never the sold-out answer.
"""

import pytest
from django.core.cache import cache

from apps.catalog import soldout
from apps.catalog.models import Sku
from apps.orders import drafts
from apps.orders.models import Order

pytestmark = pytest.mark.django_db


def _confirm(api, sku, units=1, **extra) -> dict:
    response = api.post(
        "/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": units}], **extra}, format="json"
    )
    assert response.status_code == 200, response.json()
    return response.json()


def _create(api, order_key: str):
    return api.post("/api/v1/orders", {"order_key": order_key}, format="json")


def test_a_flagged_sku_refuses_the_create_first_and_keeps_nothing(api, make_sku, address, settings):
    sku, other = make_sku(stock=4), make_sku(stock=4)
    draft = _confirm(api, sku, 2)
    cart = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": other.pk, "quantity": 1}, {"sku_id": sku.pk, "quantity": 1}]},
        format="json",
    ).json()
    assert _create(api, _confirm(api, other)["order_key"]).status_code == 201
    settings.MAX_UNPAID_ORDERS = 1  # the caps would refuse these creates too: the flag answers first
    soldout.mark(soldout.sku_key(sku.pk))

    refused = _create(api, draft["order_key"])
    assert refused.status_code == 409
    assert refused.json()["code"] == "insufficient_stock"
    assert refused.json()["detail"] == {"sku_id": sku.pk, "requested": 2, "available": 0}
    mixed = _create(api, cart["order_key"])  # the flagged SKU of a cart, as confirm names it
    assert (mixed.status_code, mixed.json()["detail"]) == (409, {"sku_id": sku.pk, "requested": 1, "available": 0})
    assert Order.objects.count() == 1
    assert Sku.objects.get(pk=sku.pk).stock == 4 and Sku.objects.get(pk=other.pk).stock == 3
    assert drafts.draft_get(draft["order_key"])["pay_fen"] == draft["pay_fen"]  # kept: confirm's to replace

    cache.delete(soldout.sku_key(sku.pk))  # a restock drops the flag: the database judges again
    settings.MAX_UNPAID_ORDERS = 5
    made = _create(api, draft["order_key"])
    assert made.status_code == 201 and Sku.objects.get(pk=sku.pk).stock == 2


def test_a_flash_sale_draft_is_left_to_the_database(api, make_flash_sale, address):
    sale = make_flash_sale(stock=3, sku_stock=10, price_fen=900)
    draft = _confirm(api, sale.sku, flash_sale_id=sale.pk)
    soldout.mark(soldout.sku_key(sale.sku_id))  # its units are reserved on the sale's quota
    made = _create(api, draft["order_key"])
    assert made.status_code == 201, made.json()
    assert Sku.objects.get(pk=sale.sku_id).stock == 9
    assert Order.objects.get().flash_sale_id == sale.pk


def test_the_last_units_draft_is_dropped_before_its_sku_is_flagged(
    api, make_sku, address, monkeypatch, django_capture_on_commit_callbacks
):
    sku = make_sku(stock=2)
    draft = _confirm(api, sku, 2)
    seen = []
    real_mark = soldout.mark
    monkeypatch.setattr(
        soldout, "mark", lambda key, value=1: (seen.append(drafts.draft_get(draft["order_key"])), real_mark(key, value))
    )
    with django_capture_on_commit_callbacks(execute=True):
        made = _create(api, draft["order_key"])
    assert made.status_code == 201 and Sku.objects.get(pk=sku.pk).stock == 0
    assert seen == [None]  # flagged once, the draft already gone
    again = _create(api, draft["order_key"])  # the buyer's retry while the SKU is flagged
    assert again.status_code == 200 and again.json()["order_no"] == made.json()["order_no"]
    assert Order.objects.count() == 1

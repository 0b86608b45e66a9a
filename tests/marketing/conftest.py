"""Flash-sale fixtures: a goods SKU (128.00 yuan, 20 in stock) and sales of it."""

import datetime as dt

import pytest
from django.utils import timezone


@pytest.fixture
def flash_sku(make_sku):
    return make_sku(price_fen=12800, stock=20, name="青瓷盖碗")


@pytest.fixture
def make_sale(flash_sku):
    """``make_sale(stock=5, limit=2, price_fen=9900, starts_in=-10, lasts=60)`` (minutes) -> FlashSale.

    Written straight to the table (not through flash_sale_schedule) so tests can place the
    window in the past; the scheduling rules have their own tests.
    """
    from apps.marketing.models import FlashSale

    def make(*, stock=5, limit=2, price_fen=9900, starts_in=-10, lasts=60, sku=None, is_active=True,
             title="限时秒杀"):
        starts_at = timezone.now() + dt.timedelta(minutes=starts_in)
        return FlashSale.objects.create(
            title=title, sku=sku or flash_sku, price_fen=price_fen, stock=stock, limit_per_customer=limit,
            starts_at=starts_at, ends_at=starts_at + dt.timedelta(minutes=lasts), is_active=is_active,
        )

    return make


@pytest.fixture
def buy():
    """``buy(api, sale, quantity=1, address=..., **extra)`` -> (confirm response, create response or None)."""

    def run(api, sale, quantity=1, *, address, **extra):
        body = {"items": [{"sku_id": sale.sku_id, "quantity": quantity}], "flash_sale_id": sale.pk,
                "address_id": address.pk, **extra}
        confirmed = api.post("/api/v1/orders/confirm", body, format="json")
        if confirmed.status_code != 200:
            return confirmed, None
        return confirmed, api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")

    return run

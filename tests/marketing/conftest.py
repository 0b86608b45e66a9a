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

    def make(*, stock=5, limit=2, price_fen=9900, starts_in=-10, lasts=60, sku=None, is_active=True, title="限时秒杀"):
        starts_at = timezone.now() + dt.timedelta(minutes=starts_in)
        return FlashSale.objects.create(
            title=title,
            sku=sku or flash_sku,
            price_fen=price_fen,
            stock=stock,
            limit_per_customer=limit,
            starts_at=starts_at,
            ends_at=starts_at + dt.timedelta(minutes=lasts),
            is_active=is_active,
        )

    return make


@pytest.fixture
def buy():
    """``buy(api, sale, quantity=1, address=..., **extra)`` -> (confirm response, create response or None)."""

    def run(api, sale, quantity=1, *, address, **extra):
        body = {
            "items": [{"sku_id": sale.sku_id, "quantity": quantity}],
            "flash_sale_id": sale.pk,
            "address_id": address.pk,
            **extra,
        }
        confirmed = api.post("/api/v1/orders/confirm", body, format="json")
        if confirmed.status_code != 200:
            return confirmed, None
        return confirmed, api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")

    return run


# --- 拼团 and 砍价 --------------------------------------------------------------------------


@pytest.fixture
def group_sku(make_sku):
    return make_sku(price_fen=10000, stock=20, name="紫砂壶")


@pytest.fixture
def make_group_buy(group_sku):
    """``make_group_buy(stock=10, size=2, hours=24, limit=1, price_fen=6000, simulate=False,
    simulate_min=1, starts_in=-10, lasts=600)`` (minutes) -> GroupBuy, written straight to the table."""
    from apps.marketing.models import GroupBuy

    def make(
        *,
        stock=10,
        size=2,
        hours=24,
        limit=1,
        price_fen=6000,
        simulate=False,
        simulate_min=1,
        starts_in=-10,
        lasts=600,
        sku=None,
    ):
        starts_at = timezone.now() + dt.timedelta(minutes=starts_in)
        return GroupBuy.objects.create(
            title="两人拼团",
            sku=sku or group_sku,
            price_fen=price_fen,
            stock=stock,
            group_size=size,
            hours=hours,
            limit_per_customer=limit,
            simulate=simulate,
            simulate_min=simulate_min,
            starts_at=starts_at,
            ends_at=starts_at + dt.timedelta(minutes=lasts),
        )

    return make


@pytest.fixture
def shopper(make_customer, make_api):
    """``shopper()`` -> (customer, api client, address): another customer with an address."""
    from apps.accounts.models import Address

    def make(balance_fen=0):
        customer = make_customer(balance_fen=balance_fen)
        Address.objects.create(
            customer=customer,
            name="买家",
            phone="13800000000",
            province="浙江省",
            city="杭州市",
            district="西湖区",
            detail="1号",
            is_default=True,
        )
        return customer, make_api(customer)

    return make


@pytest.fixture
def group_order():
    """``group_order(api, sku, group_buy_id=.. | group_id=.., quantity=1)`` -> (confirm response,
    create response or None)."""

    def run(api, sku, quantity=1, **extra):
        confirmed = api.post(
            "/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": quantity}], **extra}, format="json"
        )
        if confirmed.status_code != 200:
            return confirmed, None
        return confirmed, api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")

    return run


@pytest.fixture
def wechat_pay(wechat, deliver):
    """``wechat_pay(api, order_no)``: start the WeChat payment, the customer pays, WeChat notifies."""

    def run(api, order_no):
        started = api.post(f"/api/v1/orders/{order_no}/pay", {"method": "wechat"}, format="json")
        assert started.status_code == 200, started.json()
        wechat.control.pay(order_no)
        deliver()

    return run


@pytest.fixture
def make_bargain(group_sku):
    """``make_bargain(original=10000, floor=5000, helpers=3, hours=24, stock=5, limit=1)`` -> BargainCampaign."""
    from apps.marketing.models import BargainCampaign

    def make(*, original=10000, floor=5000, helpers=3, hours=24, stock=5, limit=1, starts_in=-10, lasts=600, sku=None):
        starts_at = timezone.now() + dt.timedelta(minutes=starts_in)
        return BargainCampaign.objects.create(
            title="好友砍价",
            sku=sku or group_sku,
            original_price_fen=original,
            floor_price_fen=floor,
            helpers_needed=helpers,
            hours=hours,
            stock=stock,
            limit_per_customer=limit,
            starts_at=starts_at,
            ends_at=starts_at + dt.timedelta(minutes=lasts),
        )

    return make

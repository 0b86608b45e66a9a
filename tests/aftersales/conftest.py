"""A customer with balance and a default address, and paid goods orders (balance pay)."""

from types import SimpleNamespace

import pytest

from apps.accounts.models import Address


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


@pytest.fixture
def buyer(make_customer, make_api, wechat):
    customer = make_customer(balance_fen=1_000_000)
    wechat.state.upsert_user(customer.openid)
    Address.objects.create(customer=customer, name="张三", phone="13800001234", province="浙江省",
                           city="杭州市", district="西湖区", detail="文三路100号", is_default=True)
    return SimpleNamespace(customer=customer, api=make_api(customer))


@pytest.fixture
def paid(buyer, make_sku, place_order):
    """``paid(price_fen=5000, stock=10, quantity=2, sku=None)`` -> (order JSON, sku): paid by balance."""

    def make(*, price_fen=5000, stock=10, quantity=2, sku=None):
        sku = sku or make_sku(price_fen=price_fen, stock=stock)
        order = place_order(buyer.api, items=[(sku, quantity)])
        response = buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
        assert response.status_code == 200, response.json()
        return response.json()["order"], sku

    return make

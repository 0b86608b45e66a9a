"""Balance pay: conditional balance decrement in the same transaction as unpaid -> paid."""

import pytest

from apps.accounts.models import Customer, WalletEvent
from apps.orders.models import Order
from apps.payments.models import Payment

pytestmark = pytest.mark.django_db


@pytest.fixture
def rich(make_customer):
    return make_customer(balance_fen=20000)


def test_balance_pay_takes_exact_amount_once(rich, make_api, make_sku, place_order):
    from apps.accounts.models import Address

    api = make_api(rich)
    address = Address.objects.create(customer=rich, name="甲", phone="13800000000", province="浙江省",
                                     city="杭州市", detail="1号")
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert response.status_code == 200
    assert response.json()["method"] == "balance"
    assert response.json()["order"]["status"] == "paid"
    assert Customer.objects.get(pk=rich.pk).balance_fen == 20000 - 12800
    assert list(WalletEvent.objects.values_list("kind", "reason", "amount", "ref")) == [
        ("balance", "pay", -12800, order["order_no"])]
    again = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"
    assert Customer.objects.get(pk=rich.pk).balance_fen == 7200
    assert Payment.objects.get(order__order_no=order["order_no"]).total_fee == 12800


def test_balance_short_is_409_and_nothing_changes(api, customer, make_sku, address, place_order):
    Customer.objects.filter(pk=customer.pk).update(balance_fen=100)
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "insufficient_balance"
    assert Customer.objects.get(pk=customer.pk).balance_fen == 100
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    assert Payment.objects.count() == WalletEvent.objects.count() == 0


def test_balance_pay_after_wechat_prepay_closes_the_wechat_trade(rich, make_api, make_sku, place_order, wechat):
    from apps.accounts.models import Address

    api = make_api(rich)
    address = Address.objects.create(customer=rich, name="甲", phone="13800000000", province="浙江省",
                                     city="杭州市", detail="1号")
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert response.status_code == 200
    assert wechat.state.trades[order["order_no"]].trade_state == "CLOSED"
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "closed"
    assert Customer.objects.get(pk=rich.pk).balance_fen == 7200


def test_balance_pay_refused_when_wechat_already_took_the_money(rich, make_api, make_sku, place_order, wechat):
    from apps.accounts.models import Address

    api = make_api(rich)
    address = Address.objects.create(customer=rich, name="甲", phone="13800000000", province="浙江省",
                                     city="杭州市", detail="1号")
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])  # notification still on its way
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert response.status_code == 409
    assert Order.objects.get(order_no=order["order_no"]).pay_method == "wechat"
    assert Customer.objects.get(pk=rich.pk).balance_fen == 20000

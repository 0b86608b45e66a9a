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
    address = Address.objects.create(
        customer=rich, name="甲", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert response.status_code == 200
    assert response.json()["method"] == "balance"
    assert response.json()["order"]["status"] == "paid"
    assert Customer.objects.get(pk=rich.pk).balance_fen == 20000 - 12800
    assert list(WalletEvent.objects.values_list("kind", "reason", "amount", "ref")) == [
        ("balance", "pay", -12800, order["order_no"])
    ]
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
    address = Address.objects.create(
        customer=rich, name="甲", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
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
    address = Address.objects.create(
        customer=rich, name="甲", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])  # notification still on its way
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert response.status_code == 409
    assert Order.objects.get(order_no=order["order_no"]).pay_method == "wechat"
    assert Customer.objects.get(pk=rich.pk).balance_fen == 20000


def test_wechat_pay_still_works_after_a_balance_attempt_closed_the_first_trade(
    make_customer, make_api, make_sku, place_order, wechat, deliver
):
    from apps.accounts.models import Address

    customer = make_customer(balance_fen=13000)
    api = make_api(customer)
    address = Address.objects.create(
        customer=customer, name="甲", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    Customer.objects.filter(pk=customer.pk).update(balance_fen=13000)
    # The balance covers it at the check, then WeChat's trade is closed; suppose the balance
    # pay then fails (another order spent it meanwhile): the customer must still be able to pay.
    from apps.payments import order_lifecycle

    assert order_lifecycle.wechat_settle_before_cancel(order=Order.objects.get(order_no=order["order_no"])) == "clear"
    assert wechat.state.trades[order["order_no"]].trade_state == "CLOSED"
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 200
    second = f"{order['order_no']}P2"
    assert response.json()["pay_params"]["package"] == f"prepay_id={wechat.state.trades[second].prepay_id}"
    wechat.control.pay(second)
    deliver()
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert list(
        Payment.objects.filter(order__order_no=order["order_no"]).order_by("id").values_list("out_trade_no", "status")
    ) == [(order["order_no"], "closed"), (second, "paid")]


def test_balance_short_does_not_close_the_wechat_trade(api, customer, make_sku, address, place_order, wechat):
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "insufficient_balance"
    assert wechat.state.trades[order["order_no"]].trade_state == "NOTPAY"

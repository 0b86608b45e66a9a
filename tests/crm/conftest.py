import pytest


@pytest.fixture
def paid_order(make_api, place_order, address_of):
    """``paid_order(customer, sku, quantity=1)`` -> the Order, confirmed, created and paid from the balance."""
    from apps.accounts.models import Address
    from apps.orders.models import Order

    def make(customer, sku, quantity: int = 1) -> Order:
        address = Address.objects.filter(customer=customer).first() or address_of(customer)
        api = make_api(customer)
        order = place_order(api, items=[(sku, quantity)], address=address)
        paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
        assert paid.status_code == 200, paid.json()
        return Order.objects.get(order_no=order["order_no"])

    return make

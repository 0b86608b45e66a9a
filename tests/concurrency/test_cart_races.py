"""The cart under races (PostgreSQL, real threads): concurrent adds of one SKU sum up in one line."""

import pytest

from apps.orders.models import CartItem

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _add(make_api, customer, sku, quantity):
    def call(i):
        response = make_api(customer).post(
            "/api/v1/cart/items", {"sku_id": sku.pk, "quantity": quantity}, format="json"
        )
        return response.status_code, response.json()

    return call


def test_two_racing_adds_of_one_sku_make_one_line_with_the_sum(make_customer, make_api, make_sku, race):
    customer, sku = make_customer(), make_sku(stock=100)

    results = race(_add(make_api, customer, sku, 3), 2)

    assert [status for status, _ in results] == [201, 201], results
    assert list(CartItem.objects.filter(customer=customer).values_list("sku_id", "quantity")) == [(sku.pk, 6)]
    assert {body["id"] for _, body in results} == {CartItem.objects.get(customer=customer).pk}


def test_eight_racing_adds_never_pass_the_stock(make_customer, make_api, make_sku, race):
    """Stock 10, eight adds of 2: at most five fit (10 units); the others are 409 and the line
    holds exactly 2 x the number of 201s."""
    customer, sku = make_customer(), make_sku(stock=10)

    results = race(_add(make_api, customer, sku, 2), 8)

    statuses = sorted(status for status, _ in results)
    assert statuses == [201] * 5 + [409] * 3, results
    assert CartItem.objects.get(customer=customer, sku=sku).quantity == 10
    assert CartItem.objects.filter(customer=customer).count() == 1

"""Fixtures of the adversarial suite (plain helpers are in adv_helpers.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def raw_client():
    """A Django test client that answers 500s instead of raising (WeChat's view of the shop)."""
    from django.test import Client

    return Client(raise_request_exception=False)


@pytest.fixture
def shopper(make_customer, safe_api):
    """``shopper(balance_fen=0, points=0)`` -> (customer, api, address)."""
    from apps.accounts.models import Address

    def make(**kwargs):
        customer = make_customer(**kwargs)
        address = Address.objects.create(
            customer=customer,
            name="买家",
            phone="13800000000",
            province="浙江省",
            city="杭州市",
            district="西湖区",
            detail="1号",
        )
        return customer, safe_api(customer), address

    return make

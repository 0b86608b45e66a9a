"""The demo freight templates (seed_demo -> seed_freight), priced as the README walkthrough shows."""

import pytest
from django.core.management import call_command

from apps.accounts.models import Address, Customer
from apps.shipping.models import FreightRegionRule, FreightTemplate

pytestmark = pytest.mark.django_db


def test_seed_demo_freight_walkthrough_numbers(make_api):
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # again: nothing more
    assert list(FreightTemplate.objects.values_list("name", "mode", "is_default")) == [
        ("默认运费", "piece", True),
        ("重货（按重量）", "weight", False),
    ]
    assert FreightRegionRule.objects.count() == 3
    customer = Customer.objects.get(pk=1)
    api = make_api(customer)
    hangzhou = Address.objects.get(pk=1)
    urumqi = Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="新疆维吾尔自治区",
        city="乌鲁木齐市",
        district="天山区",
        detail="解放北路1号",
    )
    items = [{"sku_id": 21, "quantity": 1}, {"sku_id": 9, "quantity": 1}]  # 端砚 1800 g, 公道杯

    def freight(address):
        response = api.post("/api/v1/orders/confirm", {"items": items, "address_id": address.pk}, format="json")
        assert response.status_code == 200, response.json()
        return response.json()["goods_fen"], response.json()["freight_fen"]

    # 杭州: the ink stone's template has a city rule 8.00 + 2.00 per 500 g; the cup's (default) 10.00.
    # Highest first fee: the default's 1000 (+ 0 for no further piece); the stone extra only:
    # ceil(1800/500) = 4 x 200 = 800 -> 1800. (29800 < 50000 and 6800 < 9900: neither free.)
    assert freight(hangzhou) == (36600, 1800)
    # 乌鲁木齐: stone 3000 + ceil(800/500) = 2 x 1000 = 5000; cup extra only 1 x 500 -> 5500.
    assert freight(urumqi) == (36600, 5500)

"""The demo data of the members part: a points-mall coupon and goods item the demo customer can
exchange, a new-customer template a first login receives, and two customer tags."""

import pytest
from django.core.management import call_command

from apps.accounts.models import Coupon, Customer
from apps.members.models_tags import Tag
from apps.points_mall.models import Item

pytestmark = pytest.mark.django_db


def test_seed_demo_adds_a_points_mall_new_customer_coupons_and_tags(make_api, wechat):
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # again: nothing more

    assert sorted(Item.objects.values_list("kind", "points", "limit_per_customer")) == [
        ("coupon", 100, 3),
        ("goods", 300, 1),
    ]
    assert sorted(Tag.objects.values_list("name", "rule")) == [("重点客户", "manual"), ("高消费", "spent_over")]
    demo = Customer.objects.get(openid="oDemoCustomer0000000000000001")
    api = make_api(demo)
    listed = api.get("/api/v1/points-mall").json()
    assert [item["kind"] for item in listed] == ["goods", "coupon"]
    coupon_item = next(item for item in listed if item["kind"] == "coupon")
    exchanged = api.post(f"/api/v1/points-mall/{coupon_item['id']}/exchange", {}, format="json")
    assert exchanged.status_code == 201, exchanged.json()
    goods = api.post(f"/api/v1/points-mall/{listed[0]['id']}/exchange", {}, format="json")  # the default address
    assert goods.status_code == 201, goods.json()
    assert api.get("/api/v1/me").json()["points"] == 500 - 100 - 300

    login = make_api().post(
        "/api/v1/auth/wechat/login",
        {"code": wechat.state.issue_login_code("oSeedNewbie00000000000001").code},
        format="json",
    )
    newbie = login.json()["user"]["id"]
    assert list(Coupon.objects.filter(customer_id=newbie).values_list("title", flat=True)) == ["新人礼 满30减10"]

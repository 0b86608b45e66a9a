"""The marketing demo data: coupon templates, recharge packages, sign-in rules, and a coupon
the demo customer received; what the README walkthrough does with them."""

import pytest
from django.core.management import call_command

from apps.accounts.models import Coupon, Customer
from apps.marketing.models import CouponTemplate, SignInRule
from apps.payments.models import RechargePackage

pytestmark = pytest.mark.django_db


def test_seed_demo_adds_templates_packages_rules_and_a_received_coupon(make_api, wechat, deliver):
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # again: nothing more
    assert sorted(CouponTemplate.objects.values_list("name", "kind", "scope", "occasion")) == [
        ("新人满100减20", "amount", "all", ""),
        ("新人礼 满30减10", "amount", "all", "new_customer"),  # given at the first login, not listed
        ("满200享9折 最高减30元", "percent", "all", ""),
        ("生日礼 9折券", "percent", "all", "birthday"),
        ("积分兑换 满50减5", "amount", "all", "points_mall"),  # the points mall's coupon item
        ("香道满150减30", "amount", "category", ""),
    ]
    assert list(RechargePackage.objects.values_list("pay_fen", "bonus_fen")) == [(10000, 1000), (50000, 6000)]
    assert list(SignInRule.objects.values_list("points", flat=True)) == [5, 5, 10, 10, 15, 15, 30]
    demo = Customer.objects.get(openid="oDemoCustomer0000000000000001")
    received = Coupon.objects.get(customer=demo, template__isnull=False)
    assert received.template.issued == 1

    api = make_api(demo)
    mine = api.get("/api/v1/me/coupons?status=usable").json()
    assert mine["results"][0]["id"] == received.pk
    assert {t["name"] for t in api.get("/api/v1/coupons/available").json()} == {
        "满200享9折 最高减30元",
        "香道满150减30",
    }
    confirm = api.post(
        "/api/v1/orders/confirm",
        {
            "items": [{"sku_id": 1, "quantity": 1}, {"sku_id": 9, "quantity": 2}],
            "address_id": 1,
            "coupon_id": mine["results"][0]["id"],
            "use_points": 100,
        },
        format="json",
    )
    assert confirm.status_code == 200, confirm.json()
    assert confirm.json()["coupon_fen"] == 2000
    assert received.pk in [c["id"] for c in confirm.json()["usable_coupons"]]
    # recharge 100 yuan, paid through the sandbox: +110 yuan
    before = demo.balance_fen
    package = RechargePackage.objects.get(pay_fen=10000)
    recharge = api.post("/api/v1/recharges", {"package_id": package.pk}, format="json").json()
    wechat.control.pay(recharge["recharge_no"])
    deliver()
    assert api.get(f"/api/v1/recharges/{recharge['recharge_no']}").json()["status"] == "paid"
    assert api.get("/api/v1/me/balance").json()["balance_fen"] == before + 11000
    signed = api.post("/api/v1/me/sign-in").json()
    assert (signed["points"], signed["streak"], signed["already"]) == (5, 1, False)

"""Coupons the shop gives: a ``new_customer`` template once at the first login, a ``birthday``
template once per customer and calendar year (apps.marketing.gifts); neither can be received."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.models import Coupon, Customer
from apps.marketing import coupons, gifts
from apps.marketing.models import CouponGift, CouponTemplate
from starmall.errors import NotFound

pytestmark = pytest.mark.django_db

SHANGHAI = dt.timezone(dt.timedelta(hours=8))


def _template(**terms) -> CouponTemplate:
    return CouponTemplate.objects.create(
        **{"name": "新人券", "kind": "amount", "amount_fen": 500, "valid_days": 7, "total": 100, **terms}
    )


def _login(client, wechat, openid: str):
    response = client.post(
        "/api/v1/auth/wechat/login", {"code": wechat.state.issue_login_code(openid).code}, format="json"
    )
    assert response.status_code == 200, response.json()
    return response.json()


def test_the_first_login_gives_each_new_customer_template_once(wechat, make_api):
    welcome = _template(occasion="new_customer")
    _template(name="停用的新人券", occasion="new_customer", is_active=False)
    _template(name="普通券")

    first = _login(make_api(), wechat, "oGiftNewbie000000000000001")
    _login(make_api(), wechat, "oGiftNewbie000000000000001")

    customer_id = first["user"]["id"]
    assert list(Coupon.objects.filter(customer_id=customer_id).values_list("template_id", "discount_fen")) == [
        (welcome.pk, 500)
    ]
    assert CouponTemplate.objects.get(pk=welcome.pk).issued == 1
    # the hook once more (a retried login, a second worker): the UNIQUE key gives nothing
    customer = Customer.objects.get(pk=customer_id)
    assert gifts.new_customer_gifts_give(customer=customer, first=True) == 0
    assert Coupon.objects.filter(customer_id=customer_id).count() == 1


def test_an_existing_customer_logging_in_gets_no_new_customer_coupon(wechat, make_api, make_customer):
    _template(occasion="new_customer")
    make_customer(openid="oGiftOldhand00000000000001")

    body = _login(make_api(), wechat, "oGiftOldhand00000000000001")

    assert Coupon.objects.filter(customer_id=body["user"]["id"]).count() == 0


def test_given_templates_are_neither_listed_nor_receivable(make_api, customer):
    welcome = _template(occasion="new_customer")
    birthday = _template(name="生日券", occasion="birthday")
    plain = _template(name="普通券")

    listed = [t["template_id"] for t in make_api(customer).get("/api/v1/coupons/available").json()]

    assert listed == [plain.pk]
    for template in (welcome, birthday):
        with pytest.raises(NotFound):
            coupons.coupon_receive(template_id=template.pk, customer_id=customer.pk)
    assert Coupon.objects.count() == 0


def test_a_customer_sets_and_clears_the_birthday(make_api, customer):
    api = make_api(customer)

    set_ = api.patch("/api/v1/me", {"birthday": "1990-12-06"}, format="json")
    assert (set_.status_code, set_.json()["birthday"]) == (200, "1990-12-06")
    assert Customer.objects.get(pk=customer.pk).birthday == dt.date(1990, 12, 6)
    bad = api.patch("/api/v1/me", {"birthday": "1990-13-01"}, format="json")
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid")
    cleared = api.patch("/api/v1/me", {"birthday": None}, format="json")
    assert cleared.json()["birthday"] is None
    assert Customer.objects.get(pk=customer.pk).birthday is None


def test_birthday_coupons_once_per_customer_and_year(make_customer):
    template = _template(name="生日券", occasion="birthday")
    today_born = make_customer()
    Customer.objects.filter(pk=today_born.pk).update(birthday=dt.date(1990, 12, 6))
    other_day = make_customer()
    Customer.objects.filter(pk=other_day.pk).update(birthday=dt.date(1990, 12, 7))
    make_customer()  # no birthday set
    at = dt.datetime(2026, 12, 6, 9, 0, tzinfo=SHANGHAI)

    assert gifts.birthday_gifts_give(now=at) == 1
    assert gifts.birthday_gifts_give(now=at + dt.timedelta(hours=10)) == 0  # the same day again
    assert gifts.birthday_gifts_give(now=at.replace(year=2027)) == 1  # next year: again

    assert list(CouponGift.objects.order_by("year").values_list("customer_id", "year")) == [
        (today_born.pk, 2026),
        (today_born.pk, 2027),
    ]
    assert Coupon.objects.filter(customer=today_born, template=template).count() == 2
    assert Coupon.objects.filter(customer=other_day).count() == 0


def test_a_29_february_birthday_counts_on_28_february_of_other_years(make_customer):
    _template(name="生日券", occasion="birthday")
    leap = make_customer()
    Customer.objects.filter(pk=leap.pk).update(birthday=dt.date(2000, 2, 29))

    assert gifts.birthday_gifts_give(now=dt.datetime(2027, 2, 28, 9, 0, tzinfo=SHANGHAI)) == 1
    assert gifts.birthday_gifts_give(now=dt.datetime(2028, 2, 28, 9, 0, tzinfo=SHANGHAI)) == 0  # 2028 has a 29th
    assert gifts.birthday_gifts_give(now=dt.datetime(2028, 2, 29, 9, 0, tzinfo=SHANGHAI)) == 1


def test_a_template_with_none_left_gives_nothing_and_a_later_run_tries_again(make_customer):
    template = _template(name="生日券", occasion="birthday", total=1)
    CouponTemplate.objects.filter(pk=template.pk).update(issued=1)
    born = make_customer()
    Customer.objects.filter(pk=born.pk).update(birthday=timezone.localdate())

    assert gifts.birthday_gifts_give() == 0
    assert CouponGift.objects.count() == 0
    CouponTemplate.objects.filter(pk=template.pk).update(total=2)
    assert gifts.birthday_gifts_give() == 1
    assert CouponGift.objects.get().coupon.customer_id == born.pk

"""Freight at confirm: templates from the database, the address chosen (or the default one)."""

import pytest

from apps.accounts.models import Address
from apps.shipping import selectors
from apps.shipping.models import FreeShippingRule, FreightRegionRule, FreightTemplate

pytestmark = pytest.mark.django_db

XJ, XZ = "新疆维吾尔自治区", "西藏自治区"


@pytest.fixture
def remote_rule(freight_default):
    """The default template charges 新疆/西藏 25.00 for the first piece, 5.00 for each further."""
    return FreightRegionRule.objects.create(
        template=freight_default, provinces=[XJ, XZ], first_fee_fen=2500, extra_fee_fen=500
    )


@pytest.fixture
def heavy():
    """By weight: first 1000 g 12.00, each started 500 g 3.00; 新疆/西藏 30.00 + 10.00."""
    template = FreightTemplate.objects.create(
        name="重货", mode="weight", first_unit=1000, first_fee_fen=1200, extra_unit=500, extra_fee_fen=300
    )
    FreightRegionRule.objects.create(template=template, provinces=[XJ, XZ], first_fee_fen=3000, extra_fee_fen=1000)
    return template


def address_in(customer, province, city, *, is_default=False):
    return Address.objects.create(
        customer=customer,
        name="李四",
        phone="13900000000",
        province=province,
        city=city,
        district="",
        detail="人民路1号",
        is_default=is_default,
    )


def confirm(api, items, address=None, **extra):
    body = {"items": [{"sku_id": sku.pk, "quantity": qty} for sku, qty in items], **extra}
    if address is not None:
        body["address_id"] = address.pk
    return api.post("/api/v1/orders/confirm", body, format="json")


def test_confirm_freight_differs_by_province(api, customer, make_sku, remote_rule, freight_default):
    """2 pieces at 36.00 (7200 < 9900, not free). 广东: the default's own 1000 + 1 x 0 = 1000.
    新疆: the region rule 2500 + 1 x 500 = 3000."""
    sku = make_sku(price_fen=3600)
    guangdong = address_in(customer, "广东省", "广州市")
    xinjiang = address_in(customer, XJ, "乌鲁木齐市")
    near, far = confirm(api, [(sku, 2)], guangdong).json(), confirm(api, [(sku, 2)], xinjiang).json()
    assert (near["goods_fen"], near["freight_fen"], near["pay_fen"]) == (7200, freight_default.first_fee_fen, 8200)
    assert (far["goods_fen"], far["freight_fen"], far["pay_fen"]) == (7200, 3000, 10200)
    assert far["address"]["province"] == XJ


def test_confirm_uses_the_default_address_when_none_is_chosen(api, customer, make_sku, remote_rule):
    address_in(customer, "广东省", "深圳市")
    address_in(customer, "西藏", "拉萨市", is_default=True)  # short name: still 西藏自治区's rule
    data = confirm(api, [(make_sku(price_fen=3600), 1)]).json()
    assert (data["freight_fen"], data["address"]["city"]) == (2500, "拉萨市")


def test_confirm_product_template_weight_and_combination(api, customer, make_sku, heavy, remote_rule):
    """An ink stone of 1800 g with the weight template (x2 = 3600 g) and 1 cup of default goods.
    Free-shipping thresholds count each template's own goods: the default's are the cup's 3600
    (< 9900: not free), although the order's goods are 2 x 29800 + 3600 = 63200.
    浙江: HEAVY has the highest first fee (1200 > 1000): 1200 + ceil(2600/500) = 6 x 300 = 3000;
    the default pays only extra: 1 x 0 = 0 -> 3000.
    新疆: first fees HEAVY 3000 > default 2500: HEAVY 3000 + 6 x 1000 = 9000; the default extra
    only: 1 x 500 = 500 -> 9500."""
    stone = make_sku(price_fen=29800, name="端砚")
    stone.weight_g = 1800
    stone.save()
    stone.product.freight_template = heavy
    stone.product.save()
    cup = make_sku(price_fen=3600, name="公道杯")
    zhejiang = address_in(customer, "浙江省", "杭州市")
    xinjiang = address_in(customer, XJ, "乌鲁木齐市")
    assert confirm(api, [(stone, 2), (cup, 1)], zhejiang).json()["freight_fen"] == 3000
    assert confirm(api, [(stone, 2), (cup, 1)], xinjiang).json()["freight_fen"] == 9500
    # Without the ink stones the cup alone (3600 < 9900) pays the default's 1000 in 浙江, 2500 in 新疆.
    assert confirm(api, [(cup, 1)], zhejiang).json()["freight_fen"] == 1000
    assert confirm(api, [(cup, 1)], xinjiang).json()["freight_fen"] == 2500


def test_confirm_free_shipping_rule_from_the_database(api, customer, make_sku, freight_default):
    """The seeded rule: free from 9900 fen of goods. 9800: 1000; 9900: 0. A count rule added
    for 广东 (from 3 pieces): 3 x 100 fen in 广东 is free, in 浙江 it pays 1000."""
    guangdong = address_in(customer, "广东省", "广州市")
    zhejiang = address_in(customer, "浙江省", "杭州市")
    assert confirm(api, [(make_sku(price_fen=9800), 1)], guangdong).json()["freight_fen"] == 1000
    assert confirm(api, [(make_sku(price_fen=9900), 1)], guangdong).json()["freight_fen"] == 0
    FreeShippingRule.objects.create(template=freight_default, provinces=["广东省"], min_count=3)
    cheap = make_sku(price_fen=100)
    assert confirm(api, [(cheap, 3)], guangdong).json()["freight_fen"] == 0
    assert confirm(api, [(cheap, 3)], zhejiang).json()["freight_fen"] == 1000


def test_consultation_has_no_freight(api, consultation, remote_rule):
    slot = consultation.slots[0]
    data = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": consultation.sku.pk, "quantity": 1}], "slot_id": slot.pk},
        format="json",
    ).json()
    assert (data["goods_fen"], data["freight_fen"], data["pay_fen"]) == (29900, 0, 29900)


def test_the_order_keeps_the_freight_of_its_confirm(api, customer, make_sku, remote_rule):
    """The order is created with the draft's freight; a later change of the template does not
    reprice it."""
    xinjiang = address_in(customer, XJ, "乌鲁木齐市")
    key = confirm(api, [(make_sku(price_fen=3600), 1)], xinjiang).json()["order_key"]
    FreightRegionRule.objects.filter(pk=remote_rule.pk).update(first_fee_fen=9900)
    order = api.post("/api/v1/orders", {"order_key": key}, format="json").json()
    assert (order["freight_fen"], order["pay_fen"]) == (2500, 3600 + 2500)


def test_freight_for_lines_three_queries_and_default_for_no_template(freight_default, heavy, django_assert_num_queries):
    lines = [
        {"template_id": None, "quantity": 2, "weight_g": 0, "volume_cm3": 0, "amount_fen": 2000},
        {"template_id": heavy.pk, "quantity": 1, "weight_g": 2100, "volume_cm3": 0, "amount_fen": 21800},
    ]
    # 浙江: HEAVY 1200 + ceil(1100/500) = 3 x 300 = 2100; default extra 2 x 0 -> 2100.
    with django_assert_num_queries(3):  # templates, region rules, free-shipping rules
        assert selectors.freight_for_lines(lines=lines, province="浙江省", city="杭州市") == 2100


def test_a_shop_without_a_default_template_charges_no_freight_for_unassigned_products(freight_default):
    FreightTemplate.objects.filter(pk=freight_default.pk).update(is_default=False)
    lines = [{"template_id": None, "quantity": 1, "amount_fen": 100}]
    assert selectors.freight_for_lines(lines=lines, province="浙江省", city="杭州市") == 0


def test_confirm_reads_cached_terms_and_sees_every_edit(
    api, customer, make_sku, freight_default, django_assert_num_queries, django_capture_on_commit_callbacks
):
    """The terms are cached in Redis: a second confirm runs no freight query, and any
    write (rule added, fee changed, rule deleted, another template made default) is priced by
    the very next confirm."""
    from django.core.cache import cache

    from apps.shipping import services

    sku = make_sku(price_fen=3600)
    xinjiang = address_in(customer, XJ, "乌鲁木齐市")
    assert confirm(api, [(sku, 1)], xinjiang).json()["freight_fen"] == freight_default.first_fee_fen
    assert cache.get(selectors.TERMS_CACHE_KEY) is not None
    with django_assert_num_queries(0):
        assert selectors.templates_terms([None])[None].first_fee_fen == freight_default.first_fee_fen

    with django_capture_on_commit_callbacks(execute=True):
        rule = FreightRegionRule.objects.create(
            template=freight_default, provinces=[XJ], first_fee_fen=2500, extra_fee_fen=0
        )
    assert confirm(api, [(sku, 1)], xinjiang).json()["freight_fen"] == 2500
    rule.first_fee_fen = 2700
    rule.save()
    assert confirm(api, [(sku, 1)], xinjiang).json()["freight_fen"] == 2700
    rule.delete()
    assert confirm(api, [(sku, 1)], xinjiang).json()["freight_fen"] == freight_default.first_fee_fen
    other = FreightTemplate.objects.create(
        name="统一 8 元", mode="piece", first_unit=1, first_fee_fen=800, extra_unit=1, extra_fee_fen=0
    )
    assert confirm(api, [(sku, 1)], xinjiang).json()["freight_fen"] == freight_default.first_fee_fen
    services.freight_template_make_default(template_id=other.pk)  # a queryset update: no post_save
    assert confirm(api, [(sku, 1)], xinjiang).json()["freight_fen"] == 800


def test_freight_is_priced_from_the_database_when_redis_fails(freight_default, remote_rule, monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("redis down")

    monkeypatch.setattr(selectors.cache, "get", broken)
    monkeypatch.setattr(selectors.cache, "set", broken)
    assert selectors.templates_terms([None])[None].first_fee_fen == freight_default.first_fee_fen
    assert (
        selectors.freight_for_lines(
            lines=[{"template_id": None, "quantity": 2, "amount_fen": 7200}], province=XJ, city="乌鲁木齐市"
        )
        == 3000
    )

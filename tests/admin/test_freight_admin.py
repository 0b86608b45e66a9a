"""Freight templates in the back office: provinces ticked by name, amounts in yuan stored in fen,
one default template, everything behind shipping.change_freighttemplate."""

import pytest
from admin_helpers import form_data
from django.urls import reverse

from apps.catalog.models import Product
from apps.shipping.models import FreeShippingRule, FreightRegionRule, FreightTemplate
from apps.shipping.regions import PROVINCE_NAMES

pytestmark = pytest.mark.django_db

ADD = reverse("admin:shipping_freighttemplate_add")


def change_url(template):
    return reverse("admin:shipping_freighttemplate_change", args=[template.pk])


def inline_management(prefix: str, total: int = 0, initial: int = 0) -> dict:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def new_template(**fields) -> dict:
    data = {
        "name": "重货",
        "mode": "weight",
        "first_unit": "1000",
        "first_fee_fen": "12",
        "extra_unit": "500",
        "extra_fee_fen": "3.5",
        **inline_management("region_rules"),
        **inline_management("free_rules"),
        "_save": "Save",
    }
    data.update(fields)
    return data


def test_add_a_template_with_provinces_by_name_and_yuan_amounts(make_staff):
    staff = make_staff("shipping.add_freighttemplate", "shipping.change_freighttemplate")
    page = staff.get(ADD)
    assert page.status_code == 200
    html = page.content.decode()
    assert all(f'value="{name}"' in html for name in PROVINCE_NAMES)  # 34 checkboxes, by name
    assert len(PROVINCE_NAMES) == 34
    data = new_template(
        **{
            **inline_management("region_rules", total=1),
            "region_rules-0-provinces": ["新疆维吾尔自治区", "西藏自治区"],
            "region_rules-0-cities": "",
            "region_rules-0-first_fee_fen": "30",
            "region_rules-0-extra_fee_fen": "10.00",
            **inline_management("free_rules", total=1),
            "free_rules-0-provinces": ["浙江省", "江苏省", "上海市"],
            "free_rules-0-cities": "",
            "free_rules-0-min_amount_fen": "500.00",
            "free_rules-0-min_count": "",
        }
    )
    assert staff.post(ADD, data).status_code == 302
    template = FreightTemplate.objects.get(name="重货")
    assert (
        template.mode,
        template.first_unit,
        template.first_fee_fen,
        template.extra_unit,
        template.extra_fee_fen,
        template.is_default,
    ) == ("weight", 1000, 1200, 500, 350, False)
    assert list(template.region_rules.values_list("provinces", "cities", "first_fee_fen", "extra_fee_fen")) == [
        (["新疆维吾尔自治区", "西藏自治区"], [], 3000, 1000)
    ]
    assert list(template.free_rules.values_list("provinces", "min_amount_fen", "min_count")) == [
        (["浙江省", "江苏省", "上海市"], 50000, None)
    ]
    shown = staff.get(change_url(template)).content.decode()
    assert 'value="12.00"' in shown and 'value="3.50"' in shown and 'value="500.00"' in shown  # yuan


def test_city_rules_are_typed_by_name_and_a_free_rule_needs_a_threshold(make_staff, freight_default):
    staff = make_staff("shipping.change_freighttemplate")
    page = staff.get(change_url(freight_default))
    data = {
        **form_data(page),
        **inline_management("region_rules", total=1),
        "region_rules-0-provinces": ["广东省"],
        "region_rules-0-cities": "深圳市，广州市、深圳",
        "region_rules-0-first_fee_fen": "8",
        "region_rules-0-extra_fee_fen": "1",
    }
    assert staff.post(change_url(freight_default), data).status_code == 302
    assert list(FreightRegionRule.objects.values_list("provinces", "cities", "first_fee_fen")) == [
        (["广东省"], ["深圳市", "广州市"], 800)
    ]
    page = staff.get(change_url(freight_default))
    bad = {
        **form_data(page),
        "free_rules-TOTAL_FORMS": "2",
        "free_rules-1-provinces": ["广东省"],
        "free_rules-1-cities": "",
        "free_rules-1-min_amount_fen": "",
        "free_rules-1-min_count": "",
    }
    refused = staff.post(change_url(freight_default), bad)
    assert refused.status_code == 200
    assert "请填写满金额或满件数" in refused.content.decode()
    assert FreeShippingRule.objects.count() == 1  # the seeded one only


def test_one_default_template_moved_by_ticking_another(make_staff, freight_default):
    staff = make_staff(
        "shipping.add_freighttemplate", "shipping.change_freighttemplate", "shipping.delete_freighttemplate"
    )
    assert staff.post(ADD, new_template(is_default="on")).status_code == 302
    new = FreightTemplate.objects.get(name="重货")
    assert list(FreightTemplate.objects.filter(is_default=True)) == [new]
    # Un-ticking the default on the default itself is refused: the shop must keep one.
    page = staff.get(change_url(new))
    data = form_data(page)
    data.pop("is_default")
    refused = staff.post(change_url(new), data)
    assert refused.status_code == 200 and "必须有一个默认运费模板" in refused.content.decode()
    assert FreightTemplate.objects.get(pk=new.pk).is_default
    # ... and the default cannot be deleted.
    delete = reverse("admin:shipping_freighttemplate_delete", args=[new.pk])
    assert staff.post(delete, {"post": "yes"}).status_code == 403
    assert (
        staff.post(
            reverse("admin:shipping_freighttemplate_delete", args=[freight_default.pk]), {"post": "yes"}
        ).status_code
        == 302
    )
    assert list(FreightTemplate.objects.values_list("name", "is_default")) == [("重货", True)]


def test_view_only_staff_cannot_change_templates_or_rules(viewer, freight_default):
    page = viewer.get(change_url(freight_default))
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert viewer.post(change_url(freight_default), {"name": "改了"}).status_code == 403
    assert viewer.post(ADD, new_template()).status_code == 403
    assert FreightTemplate.objects.get(pk=freight_default.pk).name == "默认运费"
    assert FreightTemplate.objects.count() == 1


def test_product_page_chooses_the_template(make_staff, make_sku, freight_default):
    staff = make_staff("catalog.change_product", "catalog.view_product")
    heavy = FreightTemplate.objects.create(
        name="重货", mode="weight", first_unit=1000, first_fee_fen=1200, extra_unit=500, extra_fee_fen=300
    )
    product = make_sku().product
    url = reverse("admin:catalog_product_change", args=[product.pk])
    page = staff.get(url)
    assert "重货" in page.content.decode()
    assert staff.post(url, {**form_data(page), "freight_template": str(heavy.pk)}).status_code == 302
    assert Product.objects.get(pk=product.pk).freight_template_id == heavy.pk

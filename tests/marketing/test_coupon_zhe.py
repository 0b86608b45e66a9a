"""A percent coupon is entered and shown as staff say it, in 折 (9折 = 10% off), stored as before
(percent off)."""

import pytest
from django.urls import reverse

from apps.marketing.models import CouponTemplate
from starmall.admin_display import coupon_terms_text, percent_off_from_zhe, zhe_text

pytestmark = pytest.mark.django_db


def test_zhe_converts_both_ways():
    assert [percent_off_from_zhe(v) for v in ("9", "9折", "8.5", "8.8折", " 7 ", "0.1", "9.9")] == [
        10,
        10,
        15,
        12,
        30,
        99,
        1,
    ]
    assert [zhe_text(p) for p in (10, 15, 12, 30, 1, 99)] == ["9折", "8.5折", "8.8折", "7折", "9.9折", "0.1折"]
    for bad in ("10", "85", "0", "8.55", "九折", ""):
        with pytest.raises(ValueError):
            percent_off_from_zhe(bad)
    assert (
        coupon_terms_text(kind="percent", amount_fen=0, percent=10, max_discount_fen=3000, threshold_fen=20000)
        == "满 200.00 打 9折，最多减 30.00"
    )
    assert (
        coupon_terms_text(kind="percent", amount_fen=0, percent=15, max_discount_fen=None, threshold_fen=0)
        == "无门槛8.5折"
    )


def test_template_form_takes_zhe_and_stores_percent_off(client, django_user_model):
    django_user_model.objects.create_superuser("boss", password="pw-123456")
    client.login(username="boss", password="pw-123456")
    form = {
        "name": "满200享9折",
        "kind": "percent",
        "amount_fen": "",
        "percent": "9",
        "max_discount_fen": "30.00",
        "threshold_fen": "200",
        "scope": "all",
        "valid_days": "30",
        "total": "500",
        "per_customer": "1",
        "is_active": "on",
    }
    response = client.post(reverse("admin:marketing_coupontemplate_add"), form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    template = CouponTemplate.objects.get()
    assert (template.kind, template.percent) == ("percent", 10)
    page = client.get(reverse("admin:marketing_coupontemplate_change", args=[template.pk])).content.decode()
    assert 'name="percent" value="9"' in page and "折扣（几折）" in page
    assert "打 9折" in client.get(reverse("admin:marketing_coupontemplate_changelist")).content.decode()
    refused = client.post(reverse("admin:marketing_coupontemplate_add"), {**form, "name": "错", "percent": "85"})
    assert refused.status_code == 200 and CouponTemplate.objects.count() == 1

"""Promotion codes: getwxacodeunlimit (sandbox PNG) once per scene, served from storage."""

from urllib.parse import urlparse

import pytest

from apps.distribution import codes, referral
from apps.distribution.models import Channel, CommissionSettings, PromotionCode

pytestmark = pytest.mark.django_db


def test_referral_code_image_is_made_once_and_served_from_storage(customer, api, wechat, client):
    first = api.post("/api/v1/me/codes", {"kind": "referral"}, format="json")
    assert first.status_code == 200, first.json()
    code = referral.distributor_for(customer_id=customer.pk).referral_code
    assert first.json()["scene"] == f"r={code}"
    calls = wechat.state.api_calls["wxa/getwxacodeunlimit"]  # 1, or 2 after a stale cached token
    again = api.post("/api/v1/me/codes", {"kind": "referral"}, format="json")
    assert again.json() == first.json()
    assert wechat.state.api_calls["wxa/getwxacodeunlimit"] == calls and PromotionCode.objects.count() == 1
    image = client.get(urlparse(first.json()["url"]).path)
    assert image.status_code == 200
    assert b"".join(image.streaming_content).startswith(codes.PNG_MAGIC)


def test_product_and_teacher_codes_carry_the_id(api, make_sku, consultation, customer):
    sku = make_sku()
    product = api.post("/api/v1/me/codes", {"kind": "product", "id": sku.product_id}, format="json")
    assert product.status_code == 200 and product.json()["scene"].endswith(f"&p={sku.product_id}")
    teacher = api.post("/api/v1/me/codes", {"kind": "teacher", "id": consultation.teacher.pk}, format="json")
    assert teacher.status_code == 200 and teacher.json()["scene"].endswith(f"&t={consultation.teacher.pk}")
    assert len(product.json()["scene"]) <= 32
    assert api.post("/api/v1/me/codes", {"kind": "product"}, format="json").status_code == 400
    assert api.post("/api/v1/me/codes", {"kind": "product", "id": 999999}, format="json").status_code == 404
    assert api.post("/api/v1/me/codes", {"kind": "poster"}, format="json").status_code == 400
    assert referral.scene_parse(product.json()["scene"])["p"] == str(sku.product_id)


def test_wechat_failure_is_503_and_nothing_is_kept(api, wechat):
    wechat.control.set_faults({"cgi-bin/token": {"system_error": True, "count": 5}})
    answer = api.post("/api/v1/me/codes", {"kind": "referral"}, format="json")
    assert (answer.status_code, answer.json()["code"]) == (503, "wechat_unavailable")
    assert PromotionCode.objects.count() == 0


def test_channel_code_image(wechat, v3_sandbox):
    channel = Channel.objects.create(code="EXPO2026", name="展会")
    url = codes.channel_code_image(channel=channel)
    assert url.endswith(".png") and Channel.objects.get(pk=channel.pk).image
    assert v3_sandbox.codes == [{"scene": "c=EXPO2026", "page": ""}]


def test_seed_distribution_is_idempotent(db):
    from django.core.management import call_command

    call_command("seed_distribution")
    call_command("seed_distribution")
    assert list(CommissionSettings.objects.values_list("level1_rate_bp", "level2_rate_bp")) == [(1000, 500)]
    assert Channel.objects.filter(code="DEMO").count() == 1

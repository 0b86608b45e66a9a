"""``message`` is Chinese, the language of DRF's field errors (API.md "Additions"); codes unchanged."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

pytestmark = pytest.mark.django_db

CJK = re.compile(r"[\u4e00-\u9fff]")


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    body = response.json()
    assert body["code"] == code and CJK.search(body["message"]), body
    return body


@pytest.fixture
def client(make_api, customer):
    client = make_api(customer)
    client.raise_request_exception = False
    return client


def test_field_errors_and_message_are_chinese(client):
    body = error(client.post("/api/v1/orders/confirm", {}, format="json"), 400, "invalid")
    assert body["message"] == "输入有误，请检查后重试。"
    assert body["detail"]["items"] == ["该字段是必填项。"]  # DRF's own zh-hans text


def test_malformed_json_unsupported_media_and_method(client):
    bad = client.generic("POST", "/api/v1/orders/confirm", b'{"items": [', content_type="application/json")
    assert error(bad, 400, "invalid")["message"] == "请求内容不是有效的 JSON。"
    plain = client.generic("POST", "/api/v1/orders/confirm", b"items", content_type="text/plain")
    assert error(plain, 415, "unsupported_media_type")["message"] == "请以 JSON（application/json）格式提交。"
    assert error(client.get("/api/v1/orders/confirm"), 405, "method_not_allowed")["message"] == "不支持该请求方法。"


def test_not_found_messages(client, make_api):
    assert error(client.get("/api/v1/nowhere"), 404, "not_found")["message"] == "接口不存在。"
    assert error(client.get("/api/v1/products/424242"), 404, "not_found")["message"] == "商品不存在。"
    assert error(client.get("/api/v1/teachers/424242/slots"), 404, "not_found")["message"] == "老师不存在。"
    assert (
        error(make_api().get("/api/v1/me"), 401, "unauthenticated")["message"] == "请先登录（令牌缺失、无效或已过期）。"
    )


def test_query_validation_messages(client, consultation):
    today = timezone.localdate()
    query = f"from={today + dt.timedelta(days=5)}&to={today}"
    body = error(client.get(f"/api/v1/teachers/{consultation.teacher.pk}/slots?{query}"), 400, "invalid")
    assert body["detail"] == {"to": ["不能早于 from。"]}
    body = error(client.get("/api/v1/almanac/months/2025-13"), 400, "invalid")
    assert body["detail"] == {"month": ["请使用 YYYY-MM 格式，例如 2025-06。"]}
    assert error(client.get("/api/v1/products?page=abc"), 404, "not_found")["message"] == "内容不存在。"

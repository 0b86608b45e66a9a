"""WeChat login: code -> code2session (sandbox) -> customer -> revocable token in Redis."""

import pytest

from apps.accounts.models import Customer

pytestmark = pytest.mark.django_db


def login(client, code):
    return client.post("/api/v1/auth/wechat/login", {"code": code}, format="json")


def test_login_creates_customer_once_and_token_works_until_logout(wechat, make_api):
    client = make_api()
    first = login(client, wechat.state.issue_login_code("oLoginUser000000000000000001").code)
    assert first.status_code == 200
    body = first.json()
    assert body["user"]["balance_fen"] == 0 and body["user"]["points"] == 0
    assert body["expires_in"] == 7 * 24 * 3600
    second = login(client, wechat.state.issue_login_code("oLoginUser000000000000000001").code)
    assert second.json()["user"]["id"] == body["user"]["id"]
    assert Customer.objects.filter(openid="oLoginUser000000000000000001").count() == 1

    client.credentials(HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    assert client.get("/api/v1/me").json()["id"] == body["user"]["id"]
    assert client.post("/api/v1/auth/logout").status_code == 204
    after = client.get("/api/v1/me")
    assert after.status_code == 401
    assert after.json()["code"] == "unauthenticated"


def test_login_code_is_single_use(wechat, make_api):
    client = make_api()
    code = wechat.state.issue_login_code().code
    assert login(client, code).status_code == 200
    again = login(client, code)
    assert again.status_code == 400
    assert again.json()["code"] == "invalid"
    assert again.json()["detail"]["wechat_errcode"] == 40163


def test_login_unknown_code_is_400_and_creates_nobody(make_api):
    response = login(make_api(), "not-a-real-code")
    assert response.status_code == 400
    assert response.json()["detail"]["wechat_errcode"] == 40029
    assert Customer.objects.count() == 0


def test_login_when_wechat_is_down_is_503(make_api, settings):
    settings.WECHAT_API_BASE = "http://127.0.0.1:9/"  # nothing listens on the discard port
    response = login(make_api(), "whatever")
    assert response.status_code == 503
    assert response.json()["code"] == "wechat_unavailable"


@pytest.mark.parametrize("header", ["", "Bearer", "Bearer nope", "Token abc", "Bearer a b"])
def test_protected_endpoint_without_valid_token_is_401(make_api, header):
    client = make_api()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/me")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


def test_addresses_first_is_default_and_new_default_replaces_it(api):
    body = {
        "name": "张三",
        "phone": "13800000000",
        "province": "浙江省",
        "city": "杭州市",
        "district": "西湖区",
        "detail": "文三路100号",
    }
    first = api.post("/api/v1/addresses", body, format="json").json()
    assert first["is_default"] is True
    second = api.post("/api/v1/addresses", {**body, "detail": "文二路1号", "is_default": True}, format="json").json()
    listed = api.get("/api/v1/addresses").json()
    assert [(a["id"], a["is_default"]) for a in listed] == [(second["id"], True), (first["id"], False)]
    bad = api.post("/api/v1/addresses", {**body, "phone": "call me"}, format="json")
    assert bad.status_code == 400 and "phone" in bad.json()["detail"]

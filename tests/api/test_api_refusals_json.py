"""What Django refuses before a view runs (a ``Host`` not allowed, a CSRF refusal) is answered
under ``/api/`` in the API's error format, also with DEBUG on (``make run``), never as HTML."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("debug", [True, False])
def test_a_host_not_allowed_is_a_json_400(client, settings, debug):
    settings.DEBUG = debug
    response = client.get("/api/v1/products", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"code": "invalid", "message": "输入有误，请检查后重试。", "detail": {}}


def test_outside_the_api_django_answers_as_before(client, settings):
    settings.DEBUG = False
    response = client.get("/admin/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert not response["Content-Type"].startswith("application/json")


def test_a_json_refusal_of_the_api_is_left_as_it_is(client):
    response = client.post("/api/v1/cart/items", data="{", content_type="application/json")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"

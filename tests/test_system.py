"""/healthz, the OpenAPI schema, configuration checks, and WeChat's signing test vector."""

import os
import subprocess
import sys

import pytest
from wechatpy.pay.utils import calculate_signature


@pytest.mark.django_db
def test_healthz_ok(client):
    # No worker or beat runs in the suite: "missing", and the status stays 200 all the same.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "redis": "ok", "worker": "missing", "beat": "missing"}


@pytest.mark.django_db
def test_healthz_reports_the_shops_worker_and_beat_heartbeats(client):
    import time

    from django.core.cache import cache

    from starmall.heartbeats import FRESH_SECONDS, heartbeat

    heartbeat("worker", "worker1@web-b")
    heartbeat("beat", "beat@web-c")
    body = client.get("/healthz").json()
    assert (body["worker"], body["beat"]) == ("ok", "ok")
    # A heartbeat older than 60 s no longer counts (the key also expires after 60 s).
    cache.set("heartbeat:beat", {"who": "beat@web-c", "at": time.time() - FRESH_SECONDS - 1}, timeout=30)
    assert client.get("/healthz").json()["beat"] == "missing"
    cache.delete_many(["heartbeat:worker", "heartbeat:beat"])
    assert client.get("/healthz").json()["worker"] == "missing"


@pytest.mark.django_db
def test_healthz_503_names_redis_when_it_is_down(client, settings):
    # Changing CACHES makes Django drop its cache connections (setting_changed signal).
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:9/0"}}
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "error",
        "database": "ok",
        "redis": "error",
        "worker": "unknown",
        "beat": "unknown",
    }


def test_schema_lists_the_contract_paths(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in [
        "/api/v1/auth/wechat/login",
        "/api/v1/orders/confirm",
        "/api/v1/orders",
        "/api/v1/orders/{order_no}/pay",
        "/api/v1/orders/{order_no}/pay-status",
        "/api/v1/teachers/{teacher_id}/slots",
        "/api/v1/products/{product_id}",
        "/api/v1/orders/{order_no}/refund",
        "/api/v1/payments/wechat/notify",
        "/api/v1/payments/wechat/refund-notify",
        "/api/v1/almanac/search",
    ]:
        assert path in schema["paths"], path
    create = schema["paths"]["/api/v1/orders"]["post"]["responses"]
    assert {"200", "201", "400", "409", "410"} <= set(create)
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"cdn.jsdelivr" not in docs.content  # Swagger UI is served locally (works offline)


def test_schema_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))
    assert (tmp_path / "schema.yml").stat().st_size > 10_000


def test_wechat_official_signature_vector():
    params = {
        "appid": "wxd930ea5d5a258f4f",
        "mch_id": "10000100",
        "device_info": "1000",
        "body": "test",
        "nonce_str": "ibuaiVcKdpRxkhJA",
    }
    assert calculate_signature(params, "192006250b4c09247ec02edce69f6a2d") == "9A0A8659F005D6984697E2CA0A9CF3B7"


@pytest.mark.parametrize(
    "env, message",
    [
        ({"ORDER_DRAFT_TTL_SECONDS": "0"}, "ORDER_DRAFT_TTL_SECONDS"),
        ({"WECHAT_PAY_API_KEY": "short"}, "WECHAT_PAY_API_KEY"),
        ({"WECHAT_PAY_API_BASE": "http://example.invalid"}, "must end in '/'"),
        ({"AUTH_TOKEN_TTL_SECONDS": "0"}, "AUTH_TOKEN_TTL_SECONDS"),
        ({"WECHAT_TIMEOUT_SECONDS": "0"}, "WECHAT_TIMEOUT_SECONDS"),
        ({"REFUND_AUTO_APPROVE_HOURS": "-1"}, "REFUND_AUTO_APPROVE_HOURS"),
        ({"WECHAT_OFFICIAL_MODE": "strict"}, "WECHAT_OFFICIAL_MODE must be plaintext, compatible or safe"),
        ({"WECHAT_OFFICIAL_MODE": "safe", "WECHAT_OFFICIAL_AES_KEY": ""}, "needs WECHAT_OFFICIAL_AES_KEY"),
    ],
)
def test_bad_configuration_stops_startup(env, message):
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "starmall.settings.local", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize("aes_key, mode", [("", "plaintext"), ("k" * 43, "safe")])
def test_wechat_official_mode_defaults_to_safe_with_an_aes_key(aes_key, mode):
    env = {k: v for k, v in os.environ.items() if k != "WECHAT_OFFICIAL_MODE"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings as s; print(s.WECHAT_OFFICIAL_MODE)",
        ],
        env={**env, "DJANGO_SETTINGS_MODULE": "starmall.settings.local", "WECHAT_OFFICIAL_AES_KEY": aes_key},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout.strip()) == (0, mode), result.stderr


def test_production_settings_demand_secrets():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WECHAT_", "DJANGO_SECRET"))}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={**env, "DJANGO_SETTINGS_MODULE": "starmall.settings.production"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr and "WECHAT_PAY_API_KEY" in result.stderr


def test_manage_py_reports_bad_configuration_in_one_line():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "starmall.settings.local", "ORDER_DRAFT_TTL_SECONDS": "0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "Starmall configuration error: ORDER_DRAFT_TTL_SECONDS must be a positive number of seconds"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/coupons", "/api/v1/orders/x/y/z", "/api/v1/"])
def test_unknown_api_path_is_a_json_404(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": "接口不存在。", "detail": {"path": path}}

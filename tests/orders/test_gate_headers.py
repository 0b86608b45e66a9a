"""The gates' Host check, HTTPS and response headers follow Django's settings and middleware
(``starmall.gates.http``): after a setting changes, the sold-out gate's answer is still the one
Django's stack gives, header for header, and ``Content-Length`` is the body's length."""

import pytest

from apps.catalog import soldout
from starmall.gates import http
from starmall.gates.orders import OrderGate
from tests.orders.test_soldout_gate import Inner, _body, _same, call, django_answer

pytestmark = pytest.mark.django_db

SECURITY = "django.middleware.security.SecurityMiddleware"
XFRAME = "django.middleware.clickjacking.XFrameOptionsMiddleware"
PROXY = {"SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https")}


@pytest.fixture
def sold_out(make_sku, customer):
    """(gate, inner, body, headers) of a confirm the gate answers 409 (its SKU flagged sold out)."""
    from apps.accounts.tokens import token_issue

    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    inner = Inner()
    headers = {
        "Host": "127.0.0.1:8000",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token_issue(customer_id=customer.pk)}",
        "X-Forwarded-Proto": "https",
    }
    return OrderGate(inner), inner, _body(items=[{"sku_id": sku.pk, "quantity": 1}]), headers


def _without(path):
    from django.conf import settings

    return [name for name in settings.MIDDLEWARE if name != path]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({**PROXY, "SECURE_HSTS_SECONDS": 600}, {"strict-transport-security": "max-age=600"}),
        (
            {**PROXY, "SECURE_HSTS_SECONDS": 60, "SECURE_HSTS_INCLUDE_SUBDOMAINS": True, "SECURE_HSTS_PRELOAD": True},
            {"strict-transport-security": "max-age=60; includeSubDomains; preload"},
        ),
        ({"SECURE_REFERRER_POLICY": "no-referrer, strict-origin"}, {"referrer-policy": "no-referrer,strict-origin"}),
        ({"SECURE_REFERRER_POLICY": ["origin", "no-referrer"]}, {"referrer-policy": "origin,no-referrer"}),
        ({"SECURE_REFERRER_POLICY": None}, {"referrer-policy": None}),
        ({"SECURE_CONTENT_TYPE_NOSNIFF": False}, {"x-content-type-options": None}),
        ({"SECURE_CROSS_ORIGIN_OPENER_POLICY": "unsafe-none"}, {"cross-origin-opener-policy": "unsafe-none"}),
        ({"X_FRAME_OPTIONS": "sameorigin"}, {"x-frame-options": "SAMEORIGIN"}),  # Django upper-cases it
        ({"MIDDLEWARE": XFRAME}, {"x-frame-options": None}),
        ({"MIDDLEWARE": SECURITY}, {"x-content-type-options": None, "referrer-policy": None}),
    ],
    ids=lambda value: "-".join(sorted(value)) if isinstance(value, dict) else None,
)
def test_gate_headers_follow_a_changed_setting_as_djangos_do(sold_out, settings, changes, expected):
    gate, inner, body, headers = sold_out
    before = call(gate, body=body, headers=headers)  # the default settings' headers, now cached
    assert before[0] == 409 and before[1]["x-frame-options"] == "DENY"
    assert before[1]["x-content-type-options"] == "nosniff" and "strict-transport-security" not in before[1]
    for name, value in changes.items():
        setattr(settings, name, _without(value) if name == "MIDDLEWARE" else value)
    answer = call(gate, body=body, headers=headers)
    assert answer[0] == 409 and inner.bodies == []
    for name, value in expected.items():
        assert answer[1].get(name) == value
    assert answer[1]["content-length"] == str(len(answer[2]))
    django = django_answer(body, headers)
    _same(answer, django)
    assert answer[1]["content-length"] == django[1]["content-length"]


def test_gate_headers_keep_djangos_order(sold_out, settings):
    settings.SECURE_PROXY_SSL_HEADER = PROXY["SECURE_PROXY_SSL_HEADER"]
    settings.SECURE_HSTS_SECONDS = 600
    gate, _inner, body, headers = sold_out
    answer = call(gate, body=body, headers=headers)
    names = list(answer[1])
    assert names == [
        "content-type",
        "allow",
        "x-frame-options",
        "content-length",
        "strict-transport-security",
        "x-content-type-options",
        "referrer-policy",
        "cross-origin-opener-policy",
    ]
    assert names == [name for name in django_answer(body, headers)[1] if name in names]


@pytest.mark.parametrize(
    ("changes", "host", "answers"),
    [
        ({"ALLOWED_HOSTS": [".example.com"]}, "shop.example.com", True),
        ({"ALLOWED_HOSTS": [".example.com"]}, "127.0.0.1:8000", False),
        ({"ALLOWED_HOSTS": ["*"]}, "anything.test", True),
        ({"ALLOWED_HOSTS": ["shop.example.com"], "USE_X_FORWARDED_HOST": True}, "elsewhere.test", True),
    ],
)
def test_gate_host_check_is_djangos_get_host(sold_out, settings, changes, host, answers):
    for name, value in changes.items():
        setattr(settings, name, value)
    gate, inner, body, headers = sold_out
    headers = {**headers, "Host": host, "X-Forwarded-Host": "shop.example.com"}
    answer = call(gate, body=body, headers=headers)
    if answers:
        assert answer[0] == 409 and inner.bodies == []
        _same(answer, django_answer(body, headers))
    else:
        assert answer == (200, {}, b"django") and inner.bodies == [body]
        assert django_answer(body, headers)[0] == 400


def test_gate_is_secure_reads_a_repeated_proxy_header_as_django_does(sold_out, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_SSL", "on")
    settings.SECURE_HSTS_SECONDS = 600
    gate, inner, body, headers = sold_out
    pairs = [*headers.items(), ("X-Forwarded-Ssl", "on"), ("X-Forwarded-Ssl", "off")]
    answer = call(gate, body=body, headers=pairs)
    assert answer[0] == 409 and answer[1]["strict-transport-security"] == "max-age=600"
    # a2wsgi joins the two into one environ value; Django reads its first part
    _same(answer, django_answer(body, {**headers, "X-Forwarded-Ssl": "on,off"}))
    scope = {"headers": [(b"x-forwarded-ssl", b"off"), (b"x-forwarded-ssl", b"on")], "scheme": "https"}
    assert http.is_secure(scope, {}) is False

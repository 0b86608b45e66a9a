"""Review of the sold-out gate (attack round): requests where the gate answered and Django
would have answered something else. Fixed in the gate: the query string (DRF's ?format=), a
chunked body (no Content-Length: Django reads an empty body), a body over API_MAX_BODY_BYTES,
spaces inside the media type, header names with "_" (a2wsgi merges them with the "-" ones).
Still open (xfail, strict): tokens that outlive their customer's deactivation."""

import json

import pytest
from django.core.cache import cache

from apps.accounts.tokens import token_issue, token_key
from apps.catalog import soldout
from apps.orders.api.soldout_gate import SoldOutGate
from tests.orders.test_soldout_gate import IGNORED, Inner, _call_with_header_list, call, django_answer

pytestmark = pytest.mark.django_db
PATH = "/api/v1/orders/confirm"


@pytest.fixture
def sold(make_sku):
    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    return sku


@pytest.fixture
def body(sold):
    return json.dumps({"items": [{"sku_id": sold.pk, "quantity": 1}]}).encode()


@pytest.fixture
def headers(customer):
    return {"Host": "127.0.0.1:8000", "Content-Type": "application/json",
            "Authorization": f"Bearer {token_issue(customer_id=customer.pk)}"}


def through_gate(body, headers, **kw):
    inner = Inner()
    answer = call(SoldOutGate(inner), body=body, headers=headers, **kw)
    return answer, inner.bodies == [body]


def _strip(answer):
    status, head, content = answer
    return status, {k: v for k, v in head.items() if k not in IGNORED}, content


def test_a_query_string_goes_to_django(body, headers):
    from django.test import Client

    answer, passed = through_gate(body, headers, query_string=b"format=xml")
    django = Client(HTTP_HOST=headers["Host"]).generic("POST", PATH + "?format=xml", body, content_type="application/json",
                                                       HTTP_AUTHORIZATION=headers["Authorization"])
    assert django.status_code == 404  # DRF: no renderer for format xml
    assert passed, answer


def test_a_chunked_body_goes_to_django(body, headers):
    """No Content-Length: a2wsgi gives Django no CONTENT_LENGTH and Django reads b"" (400 items)."""
    answer, passed = through_gate(body, headers, content_length=False, chunks=3)
    assert passed, answer


def test_a_body_over_api_max_body_bytes_goes_to_django(body, headers, settings):
    settings.API_MAX_BODY_BYTES = 100
    body = body + b" " * 200
    assert django_answer(body, headers)[0] == 413
    answer, passed = through_gate(body, headers)
    assert passed, answer


@pytest.mark.parametrize("ctype", ["application/ json", "application /json", "application/js on"])
def test_a_space_inside_the_media_type_goes_to_django(body, headers, ctype):
    assert django_answer(body, {**headers, "Content-Type": ctype})[0] == 415
    answer, passed = through_gate(body, {**headers, "Content-Type": ctype})
    assert passed, answer


@pytest.mark.parametrize("ctype", ["APPLICATION/JSON", "application/json; charset=UTF-8", "application/json ;charset=utf-8"])
def test_spellings_django_takes_are_still_answered_the_same(body, headers, ctype):
    answer, passed = through_gate(body, {**headers, "Content-Type": ctype})
    assert not passed
    assert _strip(answer) == _strip(django_answer(body, {**headers, "Content-Type": ctype}))


def test_an_underscore_header_goes_to_django(body, headers, settings):
    """X_Forwarded_Proto: http + X-Forwarded-Proto: https is HTTP_X_FORWARDED_PROTO "http,https"
    under a2wsgi: Django redirects (301); the gate read only the dashed one and answered 409."""
    from a2wsgi.wsgi import build_environ

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    header_list = [*headers.items(), ("X_Forwarded_Proto", "http"), ("X-Forwarded-Proto", "https")]
    scope = {"headers": [(k.lower().encode(), v.encode()) for k, v in header_list], "path": PATH,
             "method": "POST", "query_string": b"", "http_version": "1.1"}
    assert build_environ(scope, None)["HTTP_X_FORWARDED_PROTO"] == "http,https"
    inner = Inner()
    answer = _call_with_header_list(SoldOutGate(inner), body, header_list)
    assert inner.bodies == [body], answer


@pytest.mark.xfail(strict=True, reason="open: a token not listed in the customer's set outlives deactivation")
def test_a_legacy_token_of_a_deactivated_customer(sold, customer, body):
    """Tokens issued before this release are not in the per-customer set (the same for a token
    whose revocation failed because Redis was down at the deactivation)."""
    token = "legacy-token-issued-before-the-release"
    cache.set(token_key(token), customer.pk, timeout=3600)  # as the old token_issue wrote it
    customer.is_active = False
    customer.save()  # the signal runs: nothing listed to revoke
    head = {"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    assert django_answer(body, head)[0] == 401
    answer, passed = through_gate(body, head)
    assert passed, answer  # the gate answers 409 insufficient_stock


@pytest.mark.xfail(strict=True, reason="open: login racing the deactivation issues a token after the revocation")
def test_login_racing_deactivation(sold, customer, body, monkeypatch, django_capture_on_commit_callbacks):
    """customer_login reads is_active, then token_issue; staff deactivate (and revoke) in between."""
    from apps.accounts import services, tokens, wechat

    monkeypatch.setattr(wechat, "code_to_session",
                        lambda code: type("S", (), {"openid": customer.openid, "unionid": ""})())
    real_issue = tokens.token_issue

    def issue(*, customer_id):
        with django_capture_on_commit_callbacks(execute=True):  # the admin's save, committed, revoked
            customer.is_active = False
            customer.save(update_fields=["is_active"])
        return real_issue(customer_id=customer_id)

    monkeypatch.setattr(tokens, "token_issue", issue)
    try:
        token = services.customer_login(code="x").token
    except Exception:  # a fix may refuse the login: then there is no token to try
        return
    head = {"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    assert django_answer(body, head)[0] == 401
    answer, passed = through_gate(body, head)
    assert passed, answer

"""Review of the sold-out gate (attack round): requests where the gate answered and Django
would have answered something else. Fixed in the gate: the query string (DRF's ?format=), a
chunked body (no Content-Length: Django reads an empty body), a body over API_MAX_BODY_BYTES,
spaces inside the media type, header names with "_" (a2wsgi merges them with the "-" ones).
Also closed: a login racing the deactivation, tokens issued before the per-customer sets
(migration accounts.0008), a token whose revocation failed (Redis down after the commit) and
a deactivation done by SQL (both revoked by beat's sweep, ``apps.accounts.revocations``)."""

import json

import pytest
from django.core.cache import cache

from apps.accounts.tokens import token_issue, token_key
from apps.catalog import soldout
from starmall.gates.orders import OrderGate
from tests.orders.test_soldout_gate import Inner, _same, call, django_answer

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
    return {
        "Host": "127.0.0.1:8000",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token_issue(customer_id=customer.pk)}",
    }


def through_gate(body, headers, **kw):
    inner = Inner()
    answer = call(OrderGate(inner), body=body, headers=headers, **kw)
    return answer, inner.bodies == [body]


def test_a_query_string_goes_to_django(body, headers):
    from django.test import Client

    answer, passed = through_gate(body, headers, query_string=b"format=xml")
    django = Client(HTTP_HOST=headers["Host"]).generic(
        "POST", PATH + "?format=xml", body, content_type="application/json", HTTP_AUTHORIZATION=headers["Authorization"]
    )
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


@pytest.mark.parametrize(
    "ctype", ["APPLICATION/JSON", "application/json; charset=UTF-8", "application/json ;charset=utf-8"]
)
def test_spellings_django_takes_are_still_answered_the_same(body, headers, ctype):
    answer, passed = through_gate(body, {**headers, "Content-Type": ctype})
    assert not passed
    _same(answer, django_answer(body, {**headers, "Content-Type": ctype}))


def test_an_underscore_header_goes_to_django(body, headers, settings):
    """X_Forwarded_Proto: http + X-Forwarded-Proto: https is HTTP_X_FORWARDED_PROTO "http,https"
    under a2wsgi: Django redirects (301); the gate read only the dashed one and answered 409."""
    from a2wsgi.wsgi import build_environ

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    header_list = [*headers.items(), ("X_Forwarded_Proto", "http"), ("X-Forwarded-Proto", "https")]
    scope = {
        "headers": [(k.lower().encode(), v.encode()) for k, v in header_list],
        "path": PATH,
        "method": "POST",
        "query_string": b"",
        "http_version": "1.1",
    }
    assert build_environ(scope, None)["HTTP_X_FORWARDED_PROTO"] == "http,https"
    inner = Inner()
    answer = call(OrderGate(inner), body=body, headers=header_list)
    assert inner.bodies == [body], answer


def test_a_token_whose_revocation_failed_is_revoked_by_the_sweep(
    sold, customer, body, monkeypatch, django_capture_on_commit_callbacks
):
    """Redis refuses the revocation after the deactivation's commit: the row it left is retried
    by beat's sweep once Redis is back, and the gate then sends the token to Django (401)."""
    import redis

    from apps.accounts import revocations, tokens
    from apps.accounts.models import TokenRevocation

    head = {
        "Host": "127.0.0.1:8000",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token_issue(customer_id=customer.pk)}",
    }
    real = tokens.tokens_revoke_customer
    failures = [redis.ConnectionError("Connection refused.")]  # Redis down for the first call only

    def revoke(customer_id):
        if failures:
            raise failures.pop()
        return real(customer_id)

    monkeypatch.setattr(tokens, "tokens_revoke_customer", revoke)
    with django_capture_on_commit_callbacks(execute=True):
        customer.is_active = False
        customer.save()
    assert TokenRevocation.objects.filter(customer_id=customer.pk, attempts=1).exists()
    assert django_answer(body, head)[0] == 401
    assert through_gate(body, head)[0][0] == 409  # the window: until the sweep runs
    assert revocations.token_revocations_sweep()["revoked"] == 1  # Redis is back
    answer, passed = through_gate(body, head)
    assert passed, answer
    assert django_answer(body, head)[0] == 401
    assert not TokenRevocation.objects.exists()


def test_a_customer_deactivated_by_sql_is_revoked_by_the_sweep(sold, customer, body, headers):
    from django.db import connection

    from apps.accounts import revocations
    from apps.accounts.models import Customer

    assert through_gate(body, headers)[0][0] == 409
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {Customer._meta.db_table} SET is_active = %s WHERE id = %s", [False, customer.pk])
    assert through_gate(body, headers)[0][0] == 409  # Django knows nothing of it yet
    assert revocations.token_revocations_sweep()["found"] == 1
    answer, passed = through_gate(body, headers)
    assert passed, answer
    assert django_answer(body, headers)[0] == 401


def test_login_racing_deactivation_is_refused_and_leaves_no_token(
    sold, customer, monkeypatch, django_capture_on_commit_callbacks
):
    """customer_login reads is_active, then token_issue; staff deactivate (and revoke) in between:
    the login reads again after issuing, takes the token back and refuses."""
    from django_redis import get_redis_connection

    from apps.accounts import services, tokens, wechat
    from apps.accounts.exceptions import LoginCodeInvalid

    monkeypatch.setattr(
        wechat, "code_to_session", lambda code: type("S", (), {"openid": customer.openid, "unionid": ""})()
    )
    real_issue = tokens.token_issue
    issued = []

    def issue(*, customer_id):
        with django_capture_on_commit_callbacks(execute=True):  # the admin's save, committed, revoked
            customer.is_active = False
            customer.save(update_fields=["is_active"])
        issued.append(real_issue(customer_id=customer_id))
        return issued[-1]

    monkeypatch.setattr(tokens, "token_issue", issue)
    with pytest.raises(LoginCodeInvalid):
        services.customer_login(code="x")
    assert len(issued) == 1
    assert tokens.token_customer_id(issued[0]) is None
    assert list(get_redis_connection("default").scan_iter(cache.make_key("auth:token:*"))) == []


def test_the_migration_lists_old_tokens_and_drops_those_of_inactive_customers(make_customer):
    from django.apps import apps as django_apps
    from django_redis import get_redis_connection

    from apps.accounts.tokens import tokens_revoke_customer

    index_tokens = __import__("apps.accounts.migrations.0008_index_api_tokens", fromlist=["index_tokens"]).index_tokens
    active, inactive = make_customer(), make_customer()
    type(inactive).objects.filter(pk=inactive.pk).update(is_active=False)  # no signal: as before the release
    for n, customer in enumerate((active, active, inactive)):
        cache.set(token_key(f"old-{n}"), customer.pk, timeout=3600)  # as the old token_issue wrote them
    cache.set(token_key("old-gone"), 999999, timeout=3600)  # a deleted customer's
    index_tokens(django_apps, None)
    assert [cache.get(token_key(f"old-{n}")) for n in range(3)] == [active.pk, active.pk, None]
    assert cache.get(token_key("old-gone")) is None
    listed = get_redis_connection("default").smembers(cache.make_key(f"auth:customer:{active.pk}:tokens"))
    assert len(listed) == 2
    assert tokens_revoke_customer(active.pk) == 2
    assert [cache.get(token_key(f"old-{n}")) for n in range(2)] == [None, None]

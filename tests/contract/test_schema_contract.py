"""The served OpenAPI schema (/api/schema/) against the running API, by schemathesis.

A bounded property-based run: for every operation, ``EXAMPLES`` cases of schema-valid data
(positive) and as many of invalid data (negative), each sent with a customer's valid token and
without one. Checks: no 5xx, no status the schema does not declare, the declared content
type and body schema.
Calls go through Django's WSGI application into this test's database (the schema is loaded
from the served ``/api/schema/``, so it is what a client downloads). Hypothesis runs
derandomized: the same cases every run, so a failure reproduces.

Each operation is driven by hypothesis directly (``APIOperation.as_strategy``) rather than by
schemathesis' pytest plugin, whose lazy fixture loader does not work with pytest 9.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from starmall.wsgi import application

CHECKS = (not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance)
EXAMPLES = 6  # per operation, mode and token: about 500 calls in all (fewer where nothing can be made invalid)

pytestmark = pytest.mark.django_db


@pytest.fixture
def api_schema(db, wechat):
    # Django closes "old" connections when a request starts and ends; inside the test's
    # transaction that would close it (on PostgreSQL). Django's test client unhooks the same
    # signals around each request; the WSGI calls here go around it.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/schema/", application)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def token_header(customer, address, make_sku, consultation):
    """Rows for the generated calls to find (goods, slots, an address) and a valid token."""
    from apps.accounts.tokens import token_issue

    make_sku(price_fen=3600, stock=100)
    return {"Authorization": f"Bearer {token_issue(customer_id=customer.pk)}"}


def _operations(api_schema) -> list:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 25, [f"{o.method} {o.path}" for o in operations]
    return operations


def _run(operation, mode: GenerationMode, headers: dict | None) -> int:
    calls = []

    @settings(
        max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case):
        response = case.call(headers=headers)
        calls.append(response.status_code)
        case.validate_response(response, checks=CHECKS)

    try:
        check()
    except Unsatisfiable:  # nothing in this operation can be made invalid (negative mode)
        assert mode == GenerationMode.NEGATIVE and not calls
    return len(calls)


@pytest.mark.parametrize("with_token", [True, False], ids=["token", "anonymous"])
def test_api_conforms_to_its_served_schema(api_schema, token_header, with_token):
    headers = token_header if with_token else None
    total = 0
    for operation in _operations(api_schema):
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            total += _run(operation, mode, headers)
    assert total >= 150  # operations whose negative space is empty still run their positive cases

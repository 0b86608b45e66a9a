"""Schemathesis (ST202, 4.x, seed 4242) against the running shop: ``POST
/api/v1/refunds/{refund_no}/return`` with ``{"carrier": "00", "tracking_no": "0"}`` is valid by
the published schema (``tracking_no``: any non-blank string) and answered 400 ``invalid``
"6 到 40 位字母、数字或短横线" (apps/payments/returns.py). The schema should state the rule it
enforces, so that a client built from it does not send what is refused."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_return_tracking_no_schema_states_the_rule(client):
    schema = client.get("/api/schema/?format=json").json()
    tracking = schema["components"]["schemas"]["ReturnInRequest"]["properties"]["tracking_no"]
    assert tracking.get("minLength", 0) >= 6, tracking
    assert tracking.get("maxLength", 10**9) <= 40, tracking
    pattern = tracking.get("pattern", "")
    assert pattern and not re.search(pattern, "0 中文!"), tracking

"""The Kuaidi100-shaped provider against the sandbox: signed queries, refused signs, no-result answers."""

import datetime as dt
import json

import pytest
import requests

from apps.logistics import providers
from wechat_sandbox import logistics as sandbox

pytestmark = pytest.mark.django_db


def test_provider_reads_the_route_and_a_wrong_key_is_unavailable(wechat, settings):
    tracking = providers.Kuaidi100Provider().query(com="shunfeng", num="SF1000000009", phone="1234")
    assert tracking.state == "signed" and len(tracking.events) == 5
    assert tracking.events[0]["text"].endswith("如有疑问请联系派件员")
    settings.LOGISTICS_KEY = "wrong"
    with pytest.raises(providers.LogisticsUnavailable):
        providers.Kuaidi100Provider().query(com="shunfeng", num="SF1000000009")


def test_sandbox_answers_in_kuaidi100_shape():
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    param = json.dumps({"com": "zhongtong", "num": "ZT123456"})
    body = sandbox.query(sandbox.CUSTOMER, sandbox.sign(param), param, now=now)
    assert (body["status"], body["message"], body["state"], body["ischeck"]) == ("200", "ok", "0", "0")
    assert [e["time"] for e in body["data"]] == [
        "2026-12-01 09:00:00",
        "2026-11-30 16:00:00",
        "2026-11-30 06:00:00",
        "2026-11-29 20:00:00",
    ]
    assert sandbox.query(sandbox.CUSTOMER, "BAD", param)["returnCode"] == "601"
    long_num = json.dumps({"com": "zhongtong", "num": "9" * 41})
    assert sandbox.query(sandbox.CUSTOMER, sandbox.sign(long_num), long_num)["returnCode"] == "500"


def test_no_result_yet_is_an_empty_route_not_an_outage(wechat, settings):
    tracking = providers.Kuaidi100Provider().query(com="shunfeng", num="9" * 41)
    assert (tracking.state, tracking.events) == ("unknown", [])


def test_the_sandbox_switch(wechat):
    url = wechat.url.rstrip("/") + "/sandbox/logistics"
    assert requests.post(url, json={"down": True}, timeout=5).json()["down"] is True
    with pytest.raises(providers.LogisticsUnavailable):
        providers.Kuaidi100Provider().query(com="ems", num="EM123456789CN")
    assert requests.get(url, timeout=5).json() == {"down": True, "queries": 1}
    wechat.state.reset()
    assert requests.get(url, timeout=5).json() == {"down": False, "queries": 0}

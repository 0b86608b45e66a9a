"""A logistics tracking sandbox (Kuaidi100's real-time query, ``POST /poll/query.do``) served by
the WeChat sandbox's process, so ``make run`` and the tests get it with the WeChat sandbox.

Request (form): ``customer``, ``sign`` = upper(MD5(param + key + customer)), ``param`` = JSON
``{"com", "num", ...}``. Answer, as Kuaidi100's: ``{"message": "ok", "status": "200", "state",
"ischeck", "com", "nu", "data": [{"time", "ftime", "context"}]}`` newest first, or
``{"result": false, "returnCode": "...", "message": ...}``. Any number gets plausible events
(times relative to now); a number ending in ``9`` has been signed for (state 3, ischeck 1).
A bad sign answers returnCode 601 (the shop's sandbox key is ``LOGISTICS_SANDBOX_KEY``).

Control: ``POST /sandbox/logistics {"down": true}`` makes every query fail with HTTP 503 (as
an outage), ``{"down": false}`` heals it; ``GET /sandbox/logistics`` shows the switch and
the number of queries. ``POST /sandbox/reset`` heals it too.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

CUSTOMER = "STARMALLSANDBOX"
KEY = "starmall-logistics-sandbox-key"
_TZ = dt.timezone(dt.timedelta(hours=8))
_STEPS = [  # (hours before now, text); the first is the newest
    (3, "【{city}】快件已到达【{city}转运中心】，正在派送途中"),
    (20, "【{city}】快件已从【杭州转运中心】发出，准备发往【{city}转运中心】"),
    (30, "【杭州】快件已到达【杭州转运中心】"),
    (40, "【杭州】【西湖区营业部】已揽收，揽投员：王师傅 电话：95338"),
]
_CITIES = ["北京", "上海", "广州", "深圳", "成都", "南京", "武汉", "西安"]


def rules() -> list[Rule]:
    return [
        Rule("/poll/query.do", endpoint="logistics:query", methods=["POST"]),
        Rule("/sandbox/logistics", endpoint="logistics:control", methods=["GET", "POST"]),
    ]


def _switch(state) -> dict:
    return state.logistics  # {"down", "queries"}, put back by SandboxState.reset


def handle(state, request: Request, name: str) -> Response:
    """``logistics:query`` or ``logistics:control``."""
    with state.lock:
        switch = _switch(state)
        if name == "control":
            if request.method == "POST":
                try:
                    data = json.loads(request.get_data() or b"{}")
                except ValueError:
                    return _json({"error": "body is not JSON"}, 400)
                switch["down"] = bool(data.get("down"))
            return _json({"down": switch["down"], "queries": switch["queries"]})
        switch["queries"] += 1
        down = switch["down"]
    if down:
        return Response("Service Unavailable", status=503, content_type="text/plain")
    return _json(query(request.form.get("customer", ""), request.form.get("sign", ""), request.form.get("param", "")))


def sign(param: str, key: str = KEY, customer: str = CUSTOMER) -> str:
    return hashlib.md5((param + key + customer).encode()).hexdigest().upper()


def query(customer: str, signature: str, param: str, now: dt.datetime | None = None) -> dict:
    """Kuaidi100's answer for one query (see the module docstring)."""
    if customer != CUSTOMER or signature != sign(param):
        return {"result": False, "returnCode": "601", "message": "验证签名失败"}
    try:
        data = json.loads(param)
        com, num = str(data["com"]), str(data["num"])
    except (ValueError, KeyError, TypeError):
        return {"result": False, "returnCode": "400", "message": "找不到对应公司"}
    if not num or len(num) > 40:
        return {"result": False, "returnCode": "500", "message": "查询无结果，请隔段时间再查"}
    now = now or dt.datetime.now(_TZ)
    city = _CITIES[int(hashlib.md5(num.encode()).hexdigest(), 16) % len(_CITIES)]
    steps = [(hours, text.format(city=city)) for hours, text in _STEPS]
    signed = num.endswith("9")
    if signed:
        steps.insert(0, (1, f"【{city}】已签收，签收人：本人。如有疑问请联系派件员"))
    events = []
    for hours, text in steps:
        at = (now - dt.timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S")
        events.append({"time": at, "ftime": at, "context": text})
    return {
        "message": "ok",
        "nu": num,
        "ischeck": "1" if signed else "0",
        "com": com,
        "status": "200",
        "condition": "F00",
        "state": "3" if signed else "0",
        "data": events,
    }


def _json(data: object, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False), status=status, content_type="application/json; charset=utf-8")

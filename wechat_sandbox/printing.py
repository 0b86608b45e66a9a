"""A cloud receipt printer (飞鹅云 ``Open_printMsg``) and a Kuaidi100 electronic-waybill
(电子面单 ``label/order``) sandbox, served by the WeChat sandbox's process so ``make run``, the
demo and the tests have both providers with no account.

飞鹅: ``POST /Api/Open/`` (form) ``user``, ``stime`` (Unix seconds), ``sig`` = lower(SHA1(user +
UKEY + stime)), ``apiname`` = ``Open_printMsg``, ``sn``, ``content``, ``times`` (copies). Answer
``{"msg": "ok", "ret": 0, "data": "<sn>_<yyyymmddHHMMSS>_<n>", "serverExecutedTime": 3}``; a bad
user or signature ``{"msg": "参数错误 : 签名错误。", "ret": -2, "data": null}``; an unknown
apiname ``ret`` -3; a sn that is empty ``ret`` 1002 (the sandbox takes any other sn as added).

Kuaidi100: ``POST /label/order`` (form) ``method`` = ``order``, ``key``, ``t`` (ms), ``sign`` =
upper(MD5(param + t + key + secret)), ``param`` JSON (``kuaidicom``, ``recMan``/``sendMan``
``{name, mobile, printAddr}``, ``cargo``, ``count``, ``printType``...). Answer ``{"success":
true, "code": 200, "message": "success", "data": {"taskId", "kuaidinum", "kuaidicom", "label"}}``
(``label``: a URL of this server showing the label), or ``{"success": false, "code": 30002,
"message": "验证签名失败"}`` / 30003 (key) / 30001 (param).

Control: ``GET /sandbox/printer`` lists what was printed (``[{sn, content, times, orderid,
at}]``) and the waybills ordered; ``DELETE`` forgets them; ``POST {"down": true}`` makes both
answer HTTP 503 (an outage) until ``{"down": false}``. ``GET /sandbox/waybill/<taskId>`` is a
label as HTML.
"""

from __future__ import annotations

import hashlib
import html
import json
import secrets
import time

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

FEIE_USER = "starmall-sandbox@feieyun"
FEIE_UKEY = "starmallSandboxUkey0001"
WAYBILL_KEY = "starmallWaybillSandboxKey"
WAYBILL_SECRET = "starmallWaybillSandboxSecret0001"


def rules() -> list[Rule]:
    return [
        Rule("/Api/Open/", endpoint="printing:feie", methods=["POST"]),
        Rule("/label/order", endpoint="printing:waybill", methods=["POST"]),
        Rule("/sandbox/printer", endpoint="printing:control", methods=["GET", "POST", "DELETE"]),
        Rule("/sandbox/waybill/<task_id>", endpoint="printing:label", methods=["GET"]),
    ]


def feie_sig(user: str, ukey: str, stime: str) -> str:
    """飞鹅's ``sig``: SHA1 of user + ukey + stime, 40 lowercase hex digits."""
    return hashlib.sha1((user + ukey + stime).encode()).hexdigest()


def kuaidi100_sign(param: str, t: str, key: str, secret: str) -> str:
    """Kuaidi100's ``sign``: MD5 of param + t + key + secret, 32 uppercase hex digits."""
    return hashlib.md5((param + t + key + secret).encode()).hexdigest().upper()


def _st(state) -> dict:
    return state.extras.setdefault("printing", {"prints": [], "waybills": [], "down": False})


def _json(data: object, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False), status=status, content_type="application/json; charset=utf-8")


def handle(state, request: Request, name: str) -> Response:
    """``printing:feie|waybill|control|label`` (see the module docstring)."""
    with state.lock:
        st = _st(state)
        if name == "control":
            if request.method == "DELETE":
                st["prints"].clear()
                st["waybills"].clear()
            elif request.method == "POST":
                try:
                    st["down"] = bool((json.loads(request.get_data() or b"{}") or {}).get("down"))
                except ValueError:
                    return _json({"error": "body is not JSON"}, 400)
            return _json({"down": st["down"], "prints": list(st["prints"]), "waybills": list(st["waybills"])})
        if name == "label":
            task_id = request.path.rstrip("/").rsplit("/", 1)[-1]
            found = next((w for w in st["waybills"] if w["taskId"] == task_id), None)
            if found is None:
                return Response("not found", status=404, content_type="text/plain")
            return Response(label_html(found), content_type="text/html; charset=utf-8")
        if st["down"]:
            return Response("Service Unavailable", status=503, content_type="text/plain")
        if name == "feie":
            return _json(print_msg(st, request.form))
        return _json(waybill_order(st, request.form, request.host_url))


def print_msg(st: dict, form) -> dict:
    """One 飞鹅 call (module docstring); the caller holds the state's lock."""
    user, stime, sig = form.get("user", ""), form.get("stime", ""), form.get("sig", "")
    if user != FEIE_USER or sig != feie_sig(user, FEIE_UKEY, stime):
        return {"msg": "参数错误 : 签名错误。", "ret": -2, "data": None, "serverExecutedTime": 1}
    if form.get("apiname") != "Open_printMsg":
        return {"msg": "参数错误 : 接口名称错误。", "ret": -3, "data": None, "serverExecutedTime": 1}
    sn = form.get("sn", "").strip()
    if not sn:
        return {"msg": "错误：打印机编号不存在。", "ret": 1002, "data": None, "serverExecutedTime": 1}
    try:
        times = max(1, int(form.get("times") or 1))
    except ValueError:
        times = 1
    orderid = f"{sn}_{time.strftime('%Y%m%d%H%M%S')}_{len(st['prints']) + 1}"
    st["prints"].append(
        {"sn": sn, "content": form.get("content", ""), "times": times, "orderid": orderid, "at": time.time()}
    )
    return {"msg": "ok", "ret": 0, "data": orderid, "serverExecutedTime": 3}


def waybill_order(st: dict, form, base: str) -> dict:
    """One Kuaidi100 电子面单 order (module docstring); the caller holds the state's lock."""
    param, t, key = form.get("param", ""), form.get("t", ""), form.get("key", "")
    if key != WAYBILL_KEY:
        return {"success": False, "code": 30003, "message": "账号信息不正确"}
    if form.get("sign", "") != kuaidi100_sign(param, t, key, WAYBILL_SECRET):
        return {"success": False, "code": 30002, "message": "验证签名失败"}
    try:
        data = json.loads(param)
        com, rec, send = str(data["kuaidicom"]), data["recMan"], data["sendMan"]
        if not (com and rec.get("name") and rec.get("mobile") and rec.get("printAddr") and send.get("name")):
            raise ValueError
    except (ValueError, KeyError, TypeError, AttributeError):
        return {"success": False, "code": 30001, "message": "参数错误"}
    task_id = secrets.token_hex(16)
    number = f"SB{int(time.time()) % 10**8:08d}{len(st['waybills']) + 1:04d}"
    label = f"{base.rstrip('/')}/sandbox/waybill/{task_id}"
    st["waybills"].append(
        {"taskId": task_id, "kuaidinum": number, "kuaidicom": com, "param": data, "label": label, "at": time.time()}
    )
    return {
        "success": True,
        "code": 200,
        "message": "success",
        "data": {"taskId": task_id, "kuaidinum": number, "kuaidicom": com, "label": label},
    }


def label_html(waybill: dict) -> str:
    """A plain 100 x 150 mm label: carrier, number, receiver, sender, cargo."""
    p, esc = waybill["param"], html.escape
    rec, send = p.get("recMan", {}), p.get("sendMan", {})
    return (
        "<!doctype html><meta charset='utf-8'><title>电子面单</title>"
        "<div style='width:100mm;height:150mm;border:1px solid #000;font-family:sans-serif;padding:4mm'>"
        f"<h2>{esc(waybill['kuaidicom'])} {esc(waybill['kuaidinum'])}</h2>"
        f"<p>收：{esc(rec.get('name', ''))} {esc(rec.get('mobile', ''))}<br>{esc(rec.get('printAddr', ''))}</p>"
        f"<p>寄：{esc(send.get('name', ''))} {esc(send.get('mobile', ''))}<br>{esc(send.get('printAddr', ''))}</p>"
        f"<p>物品：{esc(str(p.get('cargo', '')))} × {esc(str(p.get('count', 1)))}</p>"
        f"<p>备注：{esc(str(p.get('remark', '')))}</p></div>"
    )

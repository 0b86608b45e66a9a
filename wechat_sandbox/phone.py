"""The mini-program's phone-number API: ``POST wxa/business/getuserphonenumber?access_token=``
``{"code"}`` -> ``{"errcode": 0, "errmsg": "ok", "phone_info": {"phoneNumber", "purePhoneNumber",
"countryCode", "watermark": {"timestamp", "appid"}}}``; errors 41001/40001/42001 (token),
47001 bad JSON, 40029 unknown or expired code (5 minutes), 40163 code already used.

Control: ``POST /sandbox/phone-codes {"phone": "13800000000", "country_code"?: "86"}`` ->
``{"code"}`` (what the getPhoneNumber button gives the mini-program); ``GET`` lists the codes
issued and whether they were used.
"""

from __future__ import annotations

import json

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from . import wire
from .miniprogram import error, json_object

CODE_TTL_SECONDS = 300


def rules() -> list[Rule]:
    return [
        Rule("/wxa/business/getuserphonenumber", endpoint="phone:api", methods=["POST"]),
        Rule("/sandbox/phone-codes", endpoint="phone:control", methods=["GET", "POST"]),
    ]


def _codes(state) -> dict:
    return state.extras.setdefault("phone_codes", {})


def _json(data: object, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False), status=status, content_type="application/json; charset=utf-8")


def handle(state, request: Request, name: str) -> Response:
    if name == "control":
        with state.lock:
            codes = _codes(state)
            if request.method == "GET":
                return _json(list(codes.values()))
            body = json_object(request.get_data() or b"{}") or {}
            phone = str(body.get("phone") or "")
            if not phone.isdigit():
                return _json({"error": "phone (digits) is required"}, 400)
            code = wire.nonce_str(32)
            codes[code] = {
                "code": code,
                "phone": phone,
                "country_code": str(body.get("country_code") or "86"),
                "expires_at": state.clock() + CODE_TTL_SECONDS,
                "used": False,
            }
            return _json({"code": code})
    with state.lock:
        state.api_calls["wxa/business/getuserphonenumber"] += 1
    access_token = request.args.get("access_token")
    if not access_token:
        return _json(error(41001, "access_token missing"))
    status = state.token_status(access_token)
    if status != "ok":
        return _json(error(40001 if status == "invalid" else 42001, "invalid credential"))
    body = json_object(request.get_data())
    if body is None:
        return _json(error(47001, "data format error"))
    with state.lock:
        record = _codes(state).get(str(body.get("code") or ""))
        if record is None or state.clock() >= record["expires_at"]:
            return _json(error(40029, "invalid code"))
        if record["used"]:
            return _json(error(40163, "code been used"))
        record["used"] = True
        country, pure = record["country_code"], record["phone"]
        return _json(
            {
                "errcode": 0,
                "errmsg": "ok",
                "phone_info": {
                    "phoneNumber": pure if country == "86" else f"+{country}{pure}",
                    "purePhoneNumber": pure,
                    "countryCode": country,
                    "watermark": {"timestamp": int(state.clock()), "appid": state.config.appid},
                },
            }
        )

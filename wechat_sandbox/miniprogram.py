"""Mini-program server APIs (JSON): code2session, access token, subscription messages.

WeChat answers these with HTTP 200 and, on error, ``{"errcode": n, "errmsg": "... rid: ..."}``.
"""

from __future__ import annotations

import json
import secrets

from . import wire
from .state import SandboxState


def _rid() -> str:
    """WeChat appends a request id to every errmsg: ``rid: 65f0a1b2-0c2d4e6f-3a5b7c9d``."""
    return "-".join(secrets.token_hex(4) for _ in range(3))


def error(errcode: int, errmsg: str) -> dict:
    return {"errcode": errcode, "errmsg": f"{errmsg}, rid: {_rid()}"}


def json_object(raw: bytes) -> dict | None:
    """A request body that is a UTF-8 JSON object, or None (WeChat: errcode 47001)."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _check_app(state: SandboxState, args: dict, secret_key: str) -> dict | None:
    if args.get("appid") != state.config.appid:
        return error(40013, "invalid appid")
    if args.get(secret_key) != state.config.app_secret:
        return error(40125, "invalid appsecret")
    return None


def jscode2session(state: SandboxState, args: dict) -> dict:
    """``GET sns/jscode2session?appid&secret&js_code&grant_type=authorization_code``.

    Returns ``{"openid", "session_key", "unionid"?}`` or an error: 40013 appid, 40125 secret,
    41008 missing code, 40029 unknown or expired code, 40163 code already used, 40226 user
    blocked. A code is single-use and lives ``login_code_ttl_seconds`` (WeChat: about 5 min).
    """
    if args.get("grant_type") != "authorization_code":
        return error(40002, "invalid grant_type")
    failed = _check_app(state, args, "secret")
    if failed:
        return failed
    code = args.get("js_code")
    if not code:
        return error(41008, "missing code")
    with state.lock:
        record = state.login_codes.get(code)
        if record is None or state.clock() >= record.expires_at:
            return error(40029, "invalid code")
        if record.used:
            return error(40163, "code been used")
        record.used = True
        user = state.users[record.openid]
        if user.blocked:
            return error(40226, "code blocked")
        answer = {"session_key": wire.new_session_key(), "openid": user.openid}
        if user.unionid:
            answer["unionid"] = user.unionid
        return answer


def token(state: SandboxState, args: dict) -> dict:
    """``GET cgi-bin/token?grant_type=client_credential&appid&secret`` ->
    ``{"access_token", "expires_in": 7200}``; errors 40002, 40013, 40125."""
    if args.get("grant_type") != "client_credential":
        return error(40002, "invalid grant_type")
    failed = _check_app(state, args, "secret")
    if failed:
        return failed
    access_token, expires_in = state.issue_access_token()
    return {"access_token": access_token, "expires_in": expires_in}


def subscribe_send(state: SandboxState, access_token: str | None, raw: bytes) -> dict:
    """``POST cgi-bin/message/subscribe/send?access_token=`` with JSON ``{touser, template_id,
    page?, data, miniprogram_state?, lang?}`` -> ``{"errcode": 0, "errmsg": "ok", "msgid"}``.

    Errors: 41001 no token, 40001 invalid token, 42001 expired token, 47001 bad JSON,
    40003 unknown openid, 40037 unknown template, 47003 bad data, 43101 the user refuses.
    Accepted messages are recorded (``GET /sandbox/messages``).
    """
    if not access_token:
        return error(41001, "access_token missing")
    status = state.token_status(access_token)
    if status == "invalid":
        return error(40001, "invalid credential, access_token is invalid or not latest")
    if status == "expired":
        return error(42001, "access_token expired")
    body = json_object(raw)
    if body is None:
        return error(47001, "data format error")
    touser, template_id = body.get("touser"), body.get("template_id")
    with state.lock:
        user = state.users.get(touser) if isinstance(touser, str) else None
        if user is None:
            return error(40003, "invalid openid")
        known = state.config.known_templates
        if not isinstance(template_id, str) or not template_id or (known is not None and template_id not in known):
            return error(40037, "invalid template_id")
        data = body.get("data")
        if not isinstance(data, dict) or not all(isinstance(v, dict) and "value" in v for v in data.values()):
            return error(47003, "argument invalid! data.value invalid")
        if user.refuse_messages:
            return error(43101, "user refuse to accept the msg")
        extra = {k: body[k] for k in ("miniprogram_state", "lang") if k in body}
        message = state.record_message(touser, template_id, body.get("page"), data, extra)
        return {"errcode": 0, "errmsg": "ok", "msgid": message.msgid}

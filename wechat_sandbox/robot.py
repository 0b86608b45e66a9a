"""The enterprise-WeChat (WeCom, 企业微信) group robot's webhook, served beside the WeChat APIs so
that the shop's alerts (``apps.alerts``) reach "a group" in development and tests.

WeCom's contract (developer.work.weixin.qq.com/document/path/91770, "群机器人配置说明"):
``POST https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY`` with a UTF-8 JSON body
``{"msgtype": "text", "text": {"content", "mentioned_list"?, "mentioned_mobile_list"?}}`` or
``{"msgtype": "markdown", "markdown": {"content"}}``; the answer is HTTP 200 and
``{"errcode": 0, "errmsg": "ok"}``, or an errcode with an errmsg such as
``"invalid webhook url, hint: [...], from ip: ..., more info at
https://open.work.weixin.qq.com/devtool/query?e=93000"``. Text content is at most 2048 bytes,
markdown content 4096 bytes; each robot may send 20 messages a minute.

Emulated errors: 93000 unknown or missing key, 43002 not POST, 47001 body not a JSON object,
40008 msgtype missing or not text/markdown (the image, news, file, voice and template-card types
are not emulated), 44004 empty content, 40058 content too long, 45009 more than
``robot_per_minute`` messages in the last 60 s. Accepted messages are recorded
(``GET /sandbox/robot-messages``, ``DELETE`` clears them).
"""

from __future__ import annotations

import secrets

from .miniprogram import json_object
from .state import SandboxState

#: msgtype -> the most bytes (UTF-8) its content may have
CONTENT_LIMITS = {"text": 2048, "markdown": 4096}


def error(errcode: int, errmsg: str) -> dict:
    """WeCom's error answer: the message, a hint (request id), the caller and the help link."""
    hint = secrets.randbelow(10**25)
    return {
        "errcode": errcode,
        "errmsg": f"{errmsg}, hint: [{hint}], from ip: 127.0.0.1, more info at "
        f"https://open.work.weixin.qq.com/devtool/query?e={errcode}",
    }


def send(state: SandboxState, key: str | None, raw: bytes, method: str = "POST") -> dict:
    """``POST cgi-bin/webhook/send?key=`` -> ``{"errcode": 0, "errmsg": "ok"}`` or an error
    (module docstring). Checks in WeCom's order: the key first, then the body."""
    if not key or key != state.config.robot_key:
        return error(93000, "invalid webhook url")
    if method != "POST":
        return error(43002, "require POST method")
    body = json_object(raw)
    if body is None:
        return error(47001, "data format error")
    msgtype = body.get("msgtype")
    if msgtype not in CONTENT_LIMITS:
        return error(40008, "invalid message type")
    part = body.get(msgtype)
    content = part.get("content") if isinstance(part, dict) else None
    if not isinstance(content, str) or not content:
        return error(44004, "empty content")
    limit = CONTENT_LIMITS[msgtype]
    if len(content.encode("utf-8")) > limit:
        return error(40058, f"{msgtype}.content exceed max length {limit}. invalid Request Parameter")
    mentions = {
        k: part[k]
        for k in ("mentioned_list", "mentioned_mobile_list")
        if msgtype == "text" and isinstance(part.get(k), list)
    }
    if state.record_robot_message(key, msgtype, content, mentions) is None:
        return error(45009, "api freq out of limit")
    return {"errcode": 0, "errmsg": "ok"}

"""The official account (公众号) side: WeChat's APIs for menus, permanent materials and mass
sending, and WeChat's server calling the shop's official-account URL (a control call).

WeChat's contract (developers.weixin.qq.com/doc/offiaccount, WECHAT.md "official account"):

- access token: ``GET cgi-bin/token`` with the official account's appid and secret (app.py
  routes it here when the appid is :data:`DEMO_OFFICIAL_APPID` or the configured one).
- ``POST cgi-bin/menu/create`` ``{"button": [...]}`` (1-3 buttons, each 0-5 ``sub_button``;
  a button has a ``name`` and a ``type`` click/view/miniprogram/scancode_push..., or sub
  buttons) -> ``{"errcode": 0, "errmsg": "ok"}``; 40016 bad button count, 40017 bad type,
  40018 bad name; ``GET cgi-bin/menu/get`` -> ``{"menu": {"button": [...]}}`` or 46003.
- ``POST cgi-bin/material/add_material?type=image|voice|thumb`` multipart ``media`` ->
  ``{"media_id", "url"?}``; ``POST cgi-bin/material/add_news`` ``{"articles": [...]}``
  (``thumb_media_id`` must be an image material: 40007) -> ``{"media_id"}``;
  ``POST cgi-bin/material/batchget_material`` ``{"type", "offset", "count"}`` ->
  ``{"total_count", "item_count", "item": [...]}``.
- ``POST cgi-bin/message/mass/sendall`` ``{"filter": {"is_to_all", "tag_id"}, "msgtype",
  <msgtype>: {...}, "clientmsgid"?}`` and ``POST cgi-bin/message/mass/send`` ``{"touser":
  [openids], ...}`` -> ``{"errcode": 0, "errmsg": "send job submission success", "msg_id",
  "msg_data_id"}``; a ``clientmsgid`` used in the last 24 h -> 45065 (WeChat's own guard
  against a mass send twice); a media_id not uploaded -> 40007.

Control (JSON): ``POST /sandbox/official/verify {"url", "token"?}`` makes WeChat's signed GET
(``signature, timestamp, nonce, echostr``) and answers ``{"status", "body", "echostr"}``;
``POST /sandbox/official/send {"url", "message": {"MsgType": "text", "Content": ...} |
{"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_x"}, "openid"?, "encrypt"?,
"token"?, "aes_key"?, "appid"?, "bad_signature"?}`` POSTs it to the shop as WeChat would (signed;
``encrypt``: safe mode, AES with the EncodingAESKey) and answers ``{"status", "body", "reply"}``
(``reply``: the shop's reply XML as fields, decrypted in safe mode; ``elapsed_ms``).
``GET /sandbox/official`` -> ``{"menus", "materials", "mass", "exchanges"}`` (everything
recorded, oldest first); ``DELETE`` forgets it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import struct
import time
from dataclasses import dataclass, field

import requests
import xmltodict
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from . import wire
from .miniprogram import error, json_object
from .state import SandboxError, SandboxState

DEMO_OFFICIAL_APPID = "wx5e2f7a9c1b3d4e60"
DEMO_OFFICIAL_SECRET = "7c6b5a4938271605f4e3d2c1b0a99887"
DEMO_OFFICIAL_TOKEN = "starmallofficialtoken"

BUTTON_TYPES = {
    "click",
    "view",
    "miniprogram",
    "scancode_push",
    "scancode_waitmsg",
    "pic_sysphoto",
    "pic_photo_or_album",
    "pic_weixin",
    "location_select",
    "media_id",
    "article_id",
}
MASS_TYPES = {"text", "image", "voice", "mpnews"}


@dataclass
class OfficialState:
    menus: list[dict] = field(default_factory=list)  # every accepted menu/create body
    materials: dict[str, dict] = field(default_factory=dict)  # media_id -> record
    mass: list[dict] = field(default_factory=list)  # every accepted mass send
    clientmsgids: dict[str, float] = field(default_factory=dict)
    exchanges: list[dict] = field(default_factory=list)  # control sends and the shop's replies


def _st(state: SandboxState) -> OfficialState:
    return state.extras.setdefault("official", OfficialState())


def rules() -> list[Rule]:
    api = [
        "cgi-bin/menu/create",
        "cgi-bin/menu/get",
        "cgi-bin/material/add_material",
        "cgi-bin/material/add_news",
        "cgi-bin/material/batchget_material",
        "cgi-bin/message/mass/sendall",
        "cgi-bin/message/mass/send",
    ]
    return [Rule("/" + path, endpoint=f"official:{path}") for path in api] + [
        Rule("/sandbox/official", endpoint="official:control", methods=["GET", "DELETE"]),
        Rule("/sandbox/official/send", endpoint="official:send", methods=["POST"]),
        Rule("/sandbox/official/verify", endpoint="official:verify", methods=["POST"]),
    ]


def is_official(args: dict) -> bool:
    return args.get("appid") == DEMO_OFFICIAL_APPID


def token(state: SandboxState, args: dict) -> dict:
    """``cgi-bin/token`` for the official account (its own appid and secret)."""
    if args.get("grant_type") != "client_credential":
        return error(40002, "invalid grant_type")
    if args.get("secret") != DEMO_OFFICIAL_SECRET:
        return error(40125, "invalid appsecret")
    access_token, expires_in = state.issue_access_token()
    return {"access_token": access_token, "expires_in": expires_in}


def _json(data: object, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False), status=status, content_type="application/json; charset=utf-8")


def handle(state: SandboxState, request: Request, name: str) -> Response:
    """One ``official:<name>`` endpoint (module docstring)."""
    if name in ("control", "send", "verify"):
        try:
            return _json(_CONTROL[name](state, request))
        except SandboxError as exc:
            return _json({"error": exc.message}, exc.status)
    with state.lock:
        state.api_calls[name] += 1
    access_token = request.args.get("access_token")
    if not access_token:
        return _json(error(41001, "access_token missing"))
    status = state.token_status(access_token)
    if status != "ok":
        return _json(error(40001 if status == "invalid" else 42001, "invalid credential"))
    if name == "cgi-bin/menu/get":
        with state.lock:
            menus = _st(state).menus
            return _json({"menu": {"button": menus[-1]["button"]}} if menus else error(46003, "menu no exist"))
    if name == "cgi-bin/material/add_material":
        return _json(_add_material(state, request))
    body = json_object(request.get_data())
    if body is None:
        return _json(error(47001, "data format error"))
    with state.lock:
        return _json(_HANDLERS[name](state, body))


def _menu_create(state: SandboxState, body: dict) -> dict:
    buttons = body.get("button")
    if not isinstance(buttons, list) or not 1 <= len(buttons) <= 3:
        return error(40016, "invalid button size")
    for button in buttons:
        subs = button.get("sub_button") if isinstance(button, dict) else None
        if not isinstance(button, dict) or not button.get("name") or len(str(button["name"]).encode()) > 16:
            return error(40018, "invalid button name size")
        if subs:
            if not isinstance(subs, list) or len(subs) > 5:
                return error(40023, "invalid sub button size")
            for sub in subs:
                if not isinstance(sub, dict) or not sub.get("name") or len(str(sub["name"]).encode()) > 60:
                    return error(40018, "invalid button name size")
                if sub.get("type") not in BUTTON_TYPES:
                    return error(40017, "invalid button type")
        elif button.get("type") not in BUTTON_TYPES:
            return error(40017, "invalid button type")
    _st(state).menus.append({"button": buttons, "at": state.clock()})
    return {"errcode": 0, "errmsg": "ok"}


def _add_material(state: SandboxState, request: Request) -> dict:
    kind = request.args.get("type")
    if kind not in ("image", "voice", "thumb"):
        return error(40004, "invalid media type")
    media = request.files.get("media")
    if media is None:
        return error(41005, "media data missing")
    data = media.read()
    if not data:
        return error(40005, "invalid file type")
    media_id = wire.nonce_str(43)
    record = {
        "media_id": media_id,
        "type": kind,
        "name": media.filename or "",
        "size": len(data),
        "sha1": hashlib.sha1(data).hexdigest(),
        "update_time": int(state.clock()),
    }
    if kind in ("image", "thumb"):
        record["url"] = f"http://mmbiz.qpic.cn/sandbox/{media_id}/0"
    with state.lock:
        _st(state).materials[media_id] = record
    return {"media_id": media_id, **({"url": record["url"]} if "url" in record else {})}


def _add_news(state: SandboxState, body: dict) -> dict:
    articles = body.get("articles")
    if not isinstance(articles, list) or not 1 <= len(articles) <= 8:
        return error(40007, "invalid articles")
    materials = _st(state).materials
    for article in articles:
        if not isinstance(article, dict) or not article.get("title") or not article.get("content"):
            return error(44003, "empty news data")
        thumb = materials.get(article.get("thumb_media_id") or "")
        if thumb is None or thumb["type"] not in ("image", "thumb"):
            return error(40007, "invalid media_id")
    media_id = wire.nonce_str(43)
    materials[media_id] = {
        "media_id": media_id,
        "type": "news",
        "update_time": int(state.clock()),
        "content": {"news_item": articles},
    }
    return {"media_id": media_id}


def _batchget(state: SandboxState, body: dict) -> dict:
    kind, offset, count = body.get("type"), body.get("offset", 0), body.get("count", 20)
    if kind not in ("image", "voice", "video", "news") or not isinstance(offset, int) or not isinstance(count, int):
        return error(40004, "invalid media type")
    rows = [m for m in _st(state).materials.values() if m["type"] == kind]
    page = rows[offset : offset + max(1, min(count, 20))]
    return {"total_count": len(rows), "item_count": len(page), "item": page}


def _mass(state: SandboxState, body: dict, endpoint: str) -> dict:
    st = _st(state)
    msgtype = body.get("msgtype")
    if msgtype not in MASS_TYPES or not isinstance(body.get(msgtype), dict):
        return error(40008, "invalid message type")
    part = body[msgtype]
    if msgtype == "text" and not part.get("content"):
        return error(44004, "empty content")
    if msgtype != "text" and part.get("media_id") not in st.materials:
        return error(40007, "invalid media_id")
    if endpoint == "send":
        touser = body.get("touser")
        if not isinstance(touser, list) or not 2 <= len(touser) <= 10000:
            return error(40130, "invalid openid list size, at least two openid")
    elif not isinstance(body.get("filter"), dict):
        return error(40035, "invalid args")
    client_id = body.get("clientmsgid")
    now = state.clock()
    if client_id:
        if now - st.clientmsgids.get(client_id, -1e12) < 86400:
            return error(45065, "clientmsgid exist")
        st.clientmsgids[client_id] = now
    msg_id = 1000000000 + len(st.mass) + 1
    st.mass.append(
        {
            "endpoint": endpoint,
            "msg_id": msg_id,
            "msg_data_id": 2247483000 + len(st.mass),
            "msgtype": msgtype,
            msgtype: part,
            "clientmsgid": client_id,
            "filter": body.get("filter"),
            "touser": body.get("touser"),
            "at": now,
        }
    )
    return {
        "errcode": 0,
        "errmsg": "send job submission success",
        "msg_id": msg_id,
        "msg_data_id": st.mass[-1]["msg_data_id"],
    }


_HANDLERS = {
    "cgi-bin/menu/create": _menu_create,
    "cgi-bin/material/add_news": _add_news,
    "cgi-bin/material/batchget_material": _batchget,
    "cgi-bin/message/mass/sendall": lambda state, body: _mass(state, body, "sendall"),
    "cgi-bin/message/mass/send": lambda state, body: _mass(state, body, "send"),
}


# --- WeChat's server calling the shop ------------------------------------------------------


def sha1_signature(*parts: str) -> str:
    """WeChat's signature: SHA1 of the sorted parts concatenated."""
    return hashlib.sha1("".join(sorted(parts)).encode()).hexdigest()


def aes_encrypt(plain: str, encoding_aes_key: str, appid: str) -> str:
    """WeChat's message encryption: AES-256-CBC, key = base64(EncodingAESKey + "="), IV = its
    first 16 bytes, plaintext = 16 random bytes + length (4 bytes, network order) + message +
    appid, PKCS#7 padded to 32-byte blocks; base64."""
    key = base64.b64decode(encoding_aes_key + "=")
    msg = plain.encode()
    raw = secrets.token_bytes(16) + struct.pack(">I", len(msg)) + msg + appid.encode()
    padder = padding.PKCS7(256).padder()
    padded = padder.update(raw) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(key[:16])).encryptor()
    return base64.b64encode(encryptor.update(padded) + encryptor.finalize()).decode()


def aes_decrypt(encrypted: str, encoding_aes_key: str) -> tuple[str, str]:
    """The reverse of :func:`aes_encrypt`: ``(message, appid)``."""
    key = base64.b64decode(encoding_aes_key + "=")
    decryptor = Cipher(algorithms.AES(key), modes.CBC(key[:16])).decryptor()
    raw = decryptor.update(base64.b64decode(encrypted)) + decryptor.finalize()
    raw = raw[: -raw[-1]]
    length = struct.unpack(">I", raw[16:20])[0]
    return raw[20 : 20 + length].decode(), raw[20 + length :].decode()


def _signed_params(token: str, bad: bool) -> dict:
    timestamp, nonce = str(int(time.time())), wire.digits(10)
    signature = sha1_signature(token, timestamp, nonce)
    return {"signature": ("0" * 40) if bad else signature, "timestamp": timestamp, "nonce": nonce}


def _verify(state: SandboxState, request: Request) -> dict:
    from .control import _json as body_of

    data = body_of(request)
    url, token_ = data.get("url"), data.get("token") or DEMO_OFFICIAL_TOKEN
    if not isinstance(url, str) or not url.startswith("http"):
        raise SandboxError("url is required", 400)
    echostr = wire.digits(19)
    params = _signed_params(token_, bool(data.get("bad_signature"))) | {"echostr": echostr}
    answer = requests.get(url, params=params, timeout=10)
    return {"status": answer.status_code, "body": answer.text, "echostr": echostr}


def _send(state: SandboxState, request: Request) -> dict:
    from .control import _json as body_of

    data = body_of(request)
    url = data.get("url")
    message = data.get("message")
    if not isinstance(url, str) or not url.startswith("http") or not isinstance(message, dict):
        raise SandboxError("url and message are required", 400)
    token_ = data.get("token") or DEMO_OFFICIAL_TOKEN
    appid = data.get("appid") or DEMO_OFFICIAL_APPID
    openid = data.get("openid") or wire.new_openid()
    fields = {
        "ToUserName": data.get("to") or "gh_starmall0001",
        "FromUserName": openid,
        "CreateTime": int(time.time()),
        **message,
    }
    if fields.get("MsgType") != "event" and "MsgId" not in fields:
        fields["MsgId"] = int(wire.digits(18))
    plain = wire.to_xml(fields)
    params = _signed_params(token_, bool(data.get("bad_signature"))) | {"openid": openid}
    body = plain
    aes_key = data.get("aes_key")
    if data.get("encrypt"):
        if not isinstance(aes_key, str) or len(aes_key) != 43:
            raise SandboxError("encrypt needs the 43-character aes_key", 400)
        encrypted = aes_encrypt(plain, aes_key, appid)
        params |= {
            "encrypt_type": "aes",
            "msg_signature": sha1_signature(token_, params["timestamp"], params["nonce"], encrypted),
        }
        if data.get("bad_signature"):
            params["msg_signature"] = "0" * 40
        body = wire.to_xml({"ToUserName": fields["ToUserName"], "Encrypt": encrypted})
    started = time.monotonic()
    answer = requests.post(url, params=params, data=body.encode(), timeout=10, headers={"Content-Type": "text/xml"})
    elapsed_ms = int((time.monotonic() - started) * 1000)
    reply = None
    text = answer.text
    if answer.status_code == 200 and text.strip().startswith("<xml"):
        reply = _reply_fields(text)
        if "Encrypt" in reply and aes_key:
            expected = sha1_signature(token_, reply.get("TimeStamp", ""), reply.get("Nonce", ""), reply["Encrypt"])
            if expected != reply.get("MsgSignature"):
                raise SandboxError("the shop's encrypted reply has a bad MsgSignature", 502)
            plain_reply, reply_appid = aes_decrypt(reply["Encrypt"], aes_key)
            reply = _reply_fields(plain_reply) | {"_appid": reply_appid}
    exchange = {
        "sent": fields,
        "encrypted": bool(data.get("encrypt")),
        "status": answer.status_code,
        "body": text,
        "reply": reply,
        "elapsed_ms": elapsed_ms,
    }
    with state.lock:
        _st(state).exchanges.append(exchange)
    return exchange


def _reply_fields(text: str) -> dict:
    """The shop's reply XML as fields (news replies nest ``Articles/item``): DTDs refused."""
    if "<!DOCTYPE" in text.upper() or "<!ENTITY" in text.upper():
        raise SandboxError("the shop's reply has a DTD", 502)
    root = xmltodict.parse(text, disable_entities=True).get("xml") or {}
    return dict(root) if isinstance(root, dict) else {}


def _control(state: SandboxState, request: Request) -> dict:
    with state.lock:
        if request.method == "DELETE":
            state.extras.pop("official", None)
        st = _st(state)
        return {
            "menus": list(st.menus),
            "materials": list(st.materials.values()),
            "mass": list(st.mass),
            "exchanges": list(st.exchanges),
        }


_CONTROL = {"control": _control, "send": _send, "verify": _verify}

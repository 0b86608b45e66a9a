"""The one module of this app that imports wechatpy: the official-account server's signature,
safe-mode crypto, message parsing and replies, and the official account's APIs (menus,
permanent materials, mass sending) with the access token shared in Redis.

WeChat's hosts are replaced by ``settings.WECHAT_OFFICIAL_API_BASE`` (the sandbox by default,
``https://api.weixin.qq.com/`` in production), as ``apps/accounts/wechat.py`` does for the
mini-program.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import requests
from django.conf import settings
from wechatpy import WeChatClient, create_reply, parse_message
from wechatpy.crypto import WeChatCrypto
from wechatpy.exceptions import InvalidAppIdException, InvalidSignatureException, WeChatClientException
from wechatpy.replies import ArticlesReply, ImageReply, TextReply, VoiceReply
from wechatpy.utils import check_signature

from starmall import cache_client
from starmall.errors import WechatUnavailable

logger = logging.getLogger(__name__)


class BadSignature(Exception):
    """The request is not signed with the official account's token (or its AES part is not ours)."""


class WechatRefused(Exception):
    """WeChat answered an official-account API with an error: ``errcode`` and its text."""

    def __init__(self, errcode: int, errmsg: str) -> None:
        super().__init__(f"{errcode}: {errmsg}")
        self.errcode = errcode


# --- the server (/wechat/official) ----------------------------------------------------------


def signature_check(*, signature: str, timestamp: str, nonce: str) -> None:
    """WeChat's plain signature (SHA1 over the sorted token, timestamp, nonce); raises BadSignature."""
    try:
        check_signature(settings.WECHAT_OFFICIAL_TOKEN, signature, timestamp, nonce)
    except InvalidSignatureException as exc:
        raise BadSignature() from exc


def _crypto() -> WeChatCrypto:
    return WeChatCrypto(
        settings.WECHAT_OFFICIAL_TOKEN, settings.WECHAT_OFFICIAL_AES_KEY, settings.WECHAT_OFFICIAL_APPID
    )


def decrypt(body: bytes, *, msg_signature: str, timestamp: str, nonce: str) -> str:
    """The plaintext XML of a safe-mode message; raises BadSignature (msg_signature, appid, or a
    body that does not decrypt)."""
    if not settings.WECHAT_OFFICIAL_AES_KEY:
        raise BadSignature()
    try:
        return _crypto().decrypt_message(body, msg_signature, timestamp, nonce)
    except (InvalidSignatureException, InvalidAppIdException, KeyError, ValueError, TypeError) as exc:
        raise BadSignature() from exc
    except Exception as exc:  # noqa: BLE001 - a malformed body (xmltodict, base64, padding): not ours
        raise BadSignature() from exc


def encrypt(reply_xml: str, *, nonce: str, timestamp: str) -> str:
    """The safe-mode envelope of a reply (Encrypt, MsgSignature, TimeStamp, Nonce)."""
    return _crypto().encrypt_message(reply_xml, nonce, timestamp)


@dataclass(frozen=True)
class Inbound:
    """What the shop needs of a message or event: ``openid``, ``msg_type`` (text, image, voice,
    event...), ``event`` (subscribe, unsubscribe, scan, click; "" for messages), ``event_key``,
    ``scene`` (the channel code of a QR follow or scan), ``content`` (text), ``msg_id`` and
    ``create_time`` (epoch seconds) as the XML's text ("" when absent: ``guard.out_of_range``
    decides whether they are numbers in range), ``fields`` (every field as parsed: text, or
    dicts and lists of text for nested elements) and the parsed message for the reply."""

    openid: str
    msg_type: str
    event: str
    event_key: str
    scene: str
    content: str
    msg_id: str
    create_time: str
    fields: dict
    message: object


# The XML element each of Inbound's texts is read from (``msg_type`` and ``event`` through
# wechatpy, which names known kinds itself; ``scene`` is a part of EventKey).
SOURCES = {
    "FromUserName": "openid",
    "MsgType": "msg_type",
    "Event": "event",
    "EventKey": "event_key",
    "Content": "content",
}


def _text(fields: dict, name: str) -> str:
    """The text of a simple element ("" when absent or empty); ValueError for nested ones."""
    value = fields.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{name} is not text")
    return value


def parse(xml: str) -> Inbound:
    """Parse the plaintext XML with wechatpy (``qrscene_<scene>`` of a first follow by QR code
    becomes ``event`` "subscribe" with ``scene``; a SCAN event's EventKey is its scene).
    Raises ValueError for XML that is not a WeChat message (no MsgType, a DTD, an element the
    shop reads that holds elements instead of text). Nothing is converted or cut here."""
    upper = xml.upper()
    if "<!DOCTYPE" in upper or "<!ENTITY" in upper:
        raise ValueError("DTDs are not accepted")
    try:
        message = parse_message(xml)
    except Exception as exc:  # noqa: BLE001 - malformed XML or missing MsgType
        raise ValueError(str(exc)) from exc
    if message is None:
        raise ValueError("empty message")
    fields = getattr(message, "_data", {}) or {}
    if not isinstance(fields, dict):
        raise ValueError("not a message")
    msg_type = str(getattr(message, "type", "") or "")
    event = str(getattr(message, "event", "") or "") if msg_type == "event" else ""
    event_key = _text(fields, "EventKey")
    scene = ""
    if event == "subscribe_scan":
        event, scene = "subscribe", event_key
    elif event == "scan":
        scene = event_key
    return Inbound(
        openid=_text(fields, "FromUserName"),
        msg_type=msg_type,
        event=event,
        event_key=event_key,
        scene=scene,
        content=_text(fields, "Content") if msg_type == "text" else "",
        msg_id=_text(fields, "MsgId"),
        create_time=_text(fields, "CreateTime"),
        fields=fields,
        message=message,
    )


def reply_xml(inbound: Inbound, *, kind: str, text: str = "", media_id: str = "", articles=()) -> str:
    """A passive reply to ``inbound``: text, image / voice (a permanent material's media_id) or
    news (``[{"title", "description", "image", "url"}]``, at most 8)."""
    message = inbound.message
    if kind == "text":
        reply = TextReply(message=message, content=text)
    elif kind == "image":
        reply = ImageReply(message=message, media_id=media_id)
    elif kind == "voice":
        reply = VoiceReply(message=message, media_id=media_id)
    else:
        reply = ArticlesReply(
            message=message,
            articles=[
                {
                    "title": a.get("title", ""),
                    "description": a.get("description", ""),
                    "image": a.get("image", ""),
                    "url": a.get("url", ""),
                }
                for a in list(articles)[:8]
            ],
        )
    return create_reply(reply, message=message, render=True)


# --- the official account's APIs --------------------------------------------------------------


class _Client(WeChatClient):
    """WeChatClient whose token URL follows ``WECHAT_OFFICIAL_API_BASE`` too."""

    def fetch_access_token(self):
        return self._fetch_access_token(
            url=settings.WECHAT_OFFICIAL_API_BASE + "cgi-bin/token",
            params={"grant_type": "client_credential", "appid": self.appid, "secret": self.secret},
        )


def client() -> WeChatClient:
    """A client of the official account (its own appid and secret), token kept in Redis."""
    from wechatpy.session.redisstorage import RedisStorage

    session = RedisStorage(cache_client.redis_client(), prefix="wechatpy-official")
    c = _Client(
        settings.WECHAT_OFFICIAL_APPID,
        settings.WECHAT_OFFICIAL_SECRET,
        session=session,
        timeout=settings.WECHAT_TIMEOUT_SECONDS,
    )
    c.API_BASE_URL = settings.WECHAT_OFFICIAL_API_BASE + "cgi-bin/"
    return c


def _call(fn, *args, **kwargs) -> dict:
    """Run one API call; WeChat's refusals become WechatRefused, network errors WechatUnavailable."""
    try:
        return fn(*args, **kwargs)
    except WeChatClientException as exc:
        raise WechatRefused(int(exc.errcode or 0), str(exc.errmsg or exc)) from exc
    except requests.RequestException as exc:
        logger.warning("official account API unreachable: %s", exc)
        raise WechatUnavailable() from exc


def menu_create(buttons: list[dict]) -> dict:
    """``menu/create`` with ``{"button": buttons}``."""
    return _call(client().menu.create, {"button": buttons})


def material_add(kind: str, name: str, data: bytes) -> dict:
    """``material/add_material`` (image or voice): ``{"media_id", "url"?}``."""
    # (name, bytes), not a stream: wechatpy sends the request again after refreshing an
    # expired token, and a stream would be empty the second time
    return _call(client().material.add, kind, (name, data))


def material_add_news(articles: list[dict]) -> dict:
    """``material/add_news``: ``articles`` as WeChat's ``[{"title", "thumb_media_id", "content", ...}]``."""
    return _call(client().material.add_articles, articles)


def material_list(kind: str, offset: int = 0, count: int = 20) -> dict:
    """``material/batchget_material``: ``{"total_count", "item_count", "item"}``."""
    return _call(client().material.batchget, kind, offset, count)


def mass_send(*, openids: list[str] | None, tag_id: int | None, msg_type: str, part: dict, client_msg_id: str) -> dict:
    """One mass send: to ``openids`` (``message/mass/send``), else to a tag or everyone
    (``message/mass/sendall``); ``client_msg_id`` lets WeChat refuse a second send of it (45065).
    Returns ``{"msg_id", "msg_data_id"?}``."""
    data = {"msgtype": msg_type, msg_type: part, "send_ignore_reprint": 0, "clientmsgid": client_msg_id}
    c = client()
    if openids:
        return _call(c.message._post, "message/mass/send", data=data | {"touser": openids})
    target = {"is_to_all": tag_id is None} | ({"tag_id": tag_id} if tag_id is not None else {})
    return _call(c.message._post, "message/mass/sendall", data=data | {"filter": target})

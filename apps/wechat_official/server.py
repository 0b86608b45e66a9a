"""The official account's server (``GET, POST /wechat/official``): WeChat's signed calls in,
replies out within WeChat's 5 seconds (database work only: no outside call on this path).

Every call needs the plain signature (``WECHAT_OFFICIAL_TOKEN`` over ``timestamp`` and ``nonce``) and passes
``guard`` (freshness, mode, ranges: a message out of range is answered ``success``, stored nowhere); GET
answers ``echostr`` as is. Each message or event is stored once (:class:`InboundEvent`, UNIQUE ``dedupe_key``:
WeChat repeats a message it got no answer for), with its follow or unfollow (:class:`Follower`) and channel
QR scan (``distribution.channels.channel_scan_record``); the reply comes from staff's :class:`ReplyRule`
rows (``selectors.reply_rule_for``), with none ``success``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from apps.distribution import channels
from apps.wechat_official import guard, selectors, wechat
from apps.wechat_official.models import Follower, InboundEvent, ReplyRule

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 256 * 1024


@dataclass(frozen=True)
class Answer:
    """What the view sends back: HTTP ``status`` and ``body`` (XML or text)."""

    status: int
    body: str
    content_type: str = "text/plain; charset=utf-8"


def _error(status: int, code: str, message: str) -> Answer:
    """A refusal in the shop's error body (API.md), which is what the schema declares."""
    return Answer(
        status, json.dumps({"code": code, "message": message, "detail": {}}, ensure_ascii=False), "application/json"
    )


FORBIDDEN = _error(403, "forbidden", "签名无效。")
STALE = _error(403, "forbidden", "请求已过期或重复。")
MODE_REFUSED = _error(403, "forbidden", "消息加密方式与公众号设置不符。")
BAD_REQUEST = _error(400, "invalid", "不是有效的微信消息。")
TOO_LARGE = _error(413, "payload_too_large", "请求内容过大。")


def official_request(*, method: str, params: dict, body: bytes) -> Answer:
    """Answer one call of WeChat's server (module docstring). Never raises for bad input:
    403 for a bad, stale or repeated signature or a message the mode refuses, 400 for a body
    that is not a WeChat message, 413 for one over ``MAX_BODY_BYTES`` (the shop's JSON error
    body: WeChat reads only the status). A Redis error propagates (the view's 503: WeChat retries).
    An encrypted body's ``Encrypt`` is checked against ``msg_signature`` (else 403) and decrypted
    with ``WECHAT_OFFICIAL_AES_KEY``; its reply is encrypted."""
    signature, timestamp, nonce = (str(params.get(k) or "") for k in ("signature", "timestamp", "nonce"))
    try:
        wechat.signature_check(signature=signature, timestamp=timestamp, nonce=nonce)
    except wechat.BadSignature:
        return FORBIDDEN
    if not guard.fresh(timestamp):
        return STALE
    if method == "GET":
        return Answer(200, str(params.get("echostr") or "")) if guard.nonce_claim(nonce) else STALE
    if len(body) > MAX_BODY_BYTES:
        return TOO_LARGE
    encrypted = params.get("encrypt_type") == "aes"
    if not guard.mode_allows(encrypted=encrypted):
        return MODE_REFUSED
    try:
        xml = (
            wechat.decrypt(body, msg_signature=str(params.get("msg_signature") or ""), timestamp=timestamp, nonce=nonce)
            if encrypted
            else body
        )
    except wechat.BadSignature:
        return FORBIDDEN
    if not guard.nonce_claim(nonce):
        return STALE
    try:
        return _message(xml, encrypted=encrypted, nonce=nonce, timestamp=timestamp)
    except Exception:
        guard.nonce_release(nonce)  # nothing was kept: WeChat's retry may come with this nonce
        raise


def _message(xml: str | bytes, *, encrypted: bool, nonce: str, timestamp: str) -> Answer:
    """Read, check, store and answer one message whose call passed every check above."""
    try:
        inbound = wechat.parse(xml.decode("utf-8") if isinstance(xml, bytes) else xml)
    except (UnicodeDecodeError, ValueError):
        return BAD_REQUEST
    if not inbound.openid:
        return BAD_REQUEST
    bad_field = guard.out_of_range(inbound)
    if bad_field:
        logger.info("official account message out of range (%s): answered success, not stored", bad_field)
        return Answer(200, "success")
    rule = inbound_record(inbound, encrypted=encrypted)
    reply = _reply(inbound, rule)
    if reply is None:
        return Answer(200, "success")
    if encrypted:
        reply = wechat.encrypt(reply, nonce=nonce, timestamp=timestamp)
    return Answer(200, reply, "application/xml; charset=utf-8")


def _reply(inbound: wechat.Inbound, rule: ReplyRule | None) -> str | None:
    if rule is None:
        return None
    if rule.reply_kind == ReplyRule.ReplyKind.TEXT:
        return wechat.reply_xml(inbound, kind="text", text=rule.text) if rule.text else None
    if rule.reply_kind == ReplyRule.ReplyKind.NEWS:
        return wechat.reply_xml(inbound, kind="news", articles=rule.articles or []) if rule.articles else None
    media_id = rule.material.media_id if rule.material_id else ""
    return wechat.reply_xml(inbound, kind=rule.reply_kind, media_id=media_id) if media_id else None


DEDUPE_KEY_CHARS = InboundEvent._meta.get_field("dedupe_key").max_length


def _dedupe_key(inbound: wechat.Inbound) -> str:
    """``msg:<MsgId>`` for a message, ``evt:<openid>:<CreateTime>:<event>:<EventKey>`` for an
    event; an EventKey that would not fit the column is replaced by ``#`` and its SHA-256
    (the other parts fit: their columns and ``guard``'s ranges bound them)."""
    if inbound.msg_id:
        return f"msg:{int(inbound.msg_id)}"
    head = f"evt:{inbound.openid}:{int(inbound.create_time)}:{inbound.event}:"
    if len(head) + len(inbound.event_key) <= DEDUPE_KEY_CHARS:
        return head + inbound.event_key
    return head + "#" + hashlib.sha256(inbound.event_key.encode()).hexdigest()


@transaction.atomic
def inbound_record(inbound: wechat.Inbound, *, encrypted: bool = False) -> ReplyRule | None:
    """Store the message or event once, apply a follow / unfollow, count a channel scan; return
    the reply rule (chosen again for a repeated delivery, which changes nothing else).
    ``inbound`` has passed ``guard.out_of_range``: every value fits its column as it is."""
    rule = selectors.reply_rule_for(
        msg_type=inbound.msg_type,
        event=inbound.event,
        content=inbound.content,
        event_key=inbound.event_key,
        scene=inbound.scene,
    )
    sent_at = dt.datetime.fromtimestamp(int(inbound.create_time), dt.UTC)
    try:
        with transaction.atomic():
            row = InboundEvent.objects.create(
                dedupe_key=_dedupe_key(inbound),
                openid=inbound.openid,
                msg_type=inbound.msg_type,
                event=inbound.event,
                event_key=inbound.event_key,
                scene=inbound.scene,
                content=inbound.content,
                encrypted=encrypted,
                reply_rule=rule,
                sent_at=sent_at,
            )
    except IntegrityError:
        # A repeated delivery stops here, before a follow or a channel scan is counted again.
        return rule  # WeChat's repeat: already applied
    if inbound.event == "subscribe":
        follower_subscribe(openid=row.openid, at=sent_at, scene=inbound.scene)
    elif inbound.event == "unsubscribe":
        follower_unsubscribe(openid=row.openid, at=sent_at)
    if inbound.scene and inbound.event in ("subscribe", "scan"):
        if _channel_scan(inbound.scene):
            InboundEvent.objects.filter(pk=row.pk).update(channel_counted=True)
    return rule


def _channel_scan(scene: str) -> bool:
    """Count a scan of a channel code (``scene``: ``<code>`` or ``c=<code>``, as the QR code was
    made) with distribution's channels; True if a channel was counted. Its failure must not
    lose the reply: a savepoint, logged, False (the scene stays on the event row)."""
    try:
        with transaction.atomic():
            return bool(channels.channel_scan_record(scene))
    except Exception:  # noqa: BLE001 - the reply comes first; the scene stays on the event row
        logger.exception("channel scan %s not counted", scene)
        return False


def follower_subscribe(*, openid: str, at: dt.datetime, scene: str = "") -> None:
    """The openid follows (again): subscribed, ``subscribed_at``, the channel scene of a QR
    follow. A conditional UPDATE that leaves a row alone whose last event is newer; else an
    INSERT under the UNIQUE openid (the winner of a race is updated)."""
    values = dict(subscribed=True, subscribed_at=at, last_event_at=at, **({"scene": scene} if scene else {}))
    if Follower.objects.filter(openid=openid, last_event_at__lte=at).update(**values):
        return
    if Follower.objects.filter(openid=openid).exists():
        return  # a newer event already decided
    try:
        with transaction.atomic():
            Follower.objects.create(openid=openid, **values)
    except IntegrityError:
        Follower.objects.filter(openid=openid, last_event_at__lte=at).update(**values)


def follower_unsubscribe(*, openid: str, at: dt.datetime) -> None:
    """The openid unfollows: not subscribed, ``unsubscribed_at`` (same rules as subscribe)."""
    values = dict(subscribed=False, unsubscribed_at=at, last_event_at=at)
    if Follower.objects.filter(openid=openid, last_event_at__lte=at).update(**values):
        return
    if Follower.objects.filter(openid=openid).exists():
        return
    try:
        with transaction.atomic():
            Follower.objects.create(openid=openid, **values)
    except IntegrityError:
        Follower.objects.filter(openid=openid, last_event_at__lte=at).update(**values)

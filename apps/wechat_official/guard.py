"""What ``/wechat/official`` accepts before it stores or answers anything (API.md, corrections).

- Freshness (:func:`fresh`, :func:`nonce_claim`): ``timestamp`` within ``MAX_SKEW_SECONDS`` (300 s) of
  the shop's clock, ``nonce`` unseen for ``NONCE_SECONDS`` in the shop's Redis (one memory for every
  process and machine). Redis down: its error propagates, the view answers 503 ``service_unavailable``
  (WeChat sends the message again) and nothing is stored.
- Mode (``WECHAT_OFFICIAL_MODE``, as chosen in 公众平台): ``plaintext`` accepts only plaintext
  messages, ``safe`` only encrypted ones (``encrypt_type=aes``), ``compatible`` both.
- Ranges (:func:`out_of_range`): a message out of range is answered ``success`` and stored nowhere.
"""

from __future__ import annotations

import dataclasses
import logging
import re

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from apps.wechat_official.models import Follower, InboundEvent
from apps.wechat_official.wechat import SOURCES, Inbound
from starmall.errors import backend_errors

logger = logging.getLogger(__name__)

MAX_SKEW_SECONDS = 300
# Twice the window: a query string stays replayable until its timestamp is 300 s old, which is at
# most 600 s after it was first seen.
NONCE_SECONDS = 2 * MAX_SKEW_SECONDS
# WeChat delivers within seconds and retries for 15 s; a day covers clock drift and any delay,
# and keeps every accepted CreateTime a datetime.
CREATE_TIME_SKEW_SECONDS = 24 * 3600
MSG_ID_LIMIT = 2**64
_UNIX_SECONDS = re.compile(r"[0-9]{1,10}")
_MSG_ID = re.compile(r"[0-9]{1,20}")


def _column_limits() -> dict[str, int]:
    """``{Inbound field: characters}`` from the models' columns of the same name (the least
    when both models store it)."""
    names = {f.name for f in dataclasses.fields(Inbound)}
    limits: dict[str, int] = {}
    for model in (InboundEvent, Follower):
        for field in model._meta.concrete_fields:
            if field.name in names and field.max_length:
                limits[field.name] = min(limits.get(field.name, field.max_length), field.max_length)
    return limits


COLUMN_LIMITS = _column_limits()
FIELD_MAX_CHARS = max(COLUMN_LIMITS.values())


def fresh(timestamp: str) -> bool:
    """The signed ``timestamp`` is Unix seconds at most ``MAX_SKEW_SECONDS`` from the clock."""
    if not _UNIX_SECONDS.fullmatch(timestamp):
        return False
    return abs(int(timestamp) - timezone.now().timestamp()) <= MAX_SKEW_SECONDS


def _nonce_key(nonce: str) -> str:
    return f"wechat-official:nonce:{nonce}"


def nonce_claim(nonce: str) -> bool:
    """True the first time ``nonce`` is seen within ``NONCE_SECONDS`` (atomic across processes:
    Redis SET NX EX). Raises the cache's error when Redis is down."""
    return bool(cache.add(_nonce_key(nonce), 1, timeout=NONCE_SECONDS))


def nonce_release(nonce: str) -> None:
    """Forget a claimed nonce whose request failed inside the shop (WeChat may send it again);
    best effort: with Redis down it was never claimed."""
    try:
        cache.delete(_nonce_key(nonce))
    except backend_errors():
        logger.warning("official account nonce %s not released", nonce)


def mode_allows(*, encrypted: bool) -> bool:
    """Whether ``WECHAT_OFFICIAL_MODE`` accepts an encrypted (or a plaintext) message."""
    mode = settings.WECHAT_OFFICIAL_MODE
    return mode == "compatible" or (mode == "safe") == encrypted


def _texts(value):
    """Every text in a parsed field (nested elements are dicts, repeated ones lists)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif value is not None:
        yield str(value)


def out_of_range(inbound: Inbound) -> str | None:
    """The name of the first field no real message has, or None.

    Each field the shop stores fits its column (the ``max_length`` of the :class:`InboundEvent` and
    :class:`Follower` field of the same name; the XML element it is read from too, ``wechat.SOURCES``),
    any other element's text fits the longest of those columns, ``CreateTime`` is Unix seconds within
    ``CREATE_TIME_SKEW_SECONDS`` of the clock, ``MsgId`` (when present) a 64-bit unsigned integer.
    """
    for name, limit in COLUMN_LIMITS.items():
        if len(getattr(inbound, name)) > limit:
            return name
    for element, value in inbound.fields.items():
        limit = COLUMN_LIMITS.get(SOURCES.get(element, ""), FIELD_MAX_CHARS)
        if any(len(text) > limit for text in _texts(value)):
            return str(element)
    if not _UNIX_SECONDS.fullmatch(inbound.create_time) or (
        abs(int(inbound.create_time) - timezone.now().timestamp()) > CREATE_TIME_SKEW_SECONDS
    ):
        return "CreateTime"
    if inbound.msg_id and not (_MSG_ID.fullmatch(inbound.msg_id) and 0 < int(inbound.msg_id) < MSG_ID_LIMIT):
        return "MsgId"
    return None

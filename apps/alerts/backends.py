"""Where alerts go: pluggable backends named by dotted path in ``settings.ALERT_BACKENDS``.

A backend is a class whose instances have ``send(message: AlertMessage) -> None``: it delivers
or raises (any exception; :class:`AlertSendError` for an answer that says "not delivered").
The service (``apps.alerts.services.alert_deliver``) catches every error, records it on the
backend's :class:`~apps.alerts.models.AlertDelivery` row and retries with back-off; nothing here
reaches the code that raised the alert. ``rate_per_minute`` (None: no limit) makes the service
hold back deliveries beyond that many per minute for the backend.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

import requests
from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone
from django.utils.module_loading import import_string

from starmall.shop import alert_tag

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AlertMessage:
    """What a backend sends: the alert's ``key``, ``kind_label`` (Chinese), ``title``, ``text``
    (Chinese, plain text) and ``created_at`` (aware)."""

    key: str
    kind_label: str
    title: str
    text: str
    created_at: dt.datetime

    @property
    def time_text(self) -> str:
        """``created_at`` as "2026-12-01 10:30:00" in Shanghai time."""
        return timezone.localtime(self.created_at).strftime("%Y-%m-%d %H:%M:%S")


class AlertSendError(Exception):
    """The backend was reached but did not deliver (e.g. WeCom answered errcode != 0)."""


def _cut(text: str, limit_bytes: int) -> str:
    """``text`` cut to at most ``limit_bytes`` UTF-8 bytes (never inside a character)."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text
    return data[: limit_bytes - len("…".encode())].decode("utf-8", errors="ignore") + "…"


class LogBackend:
    """Writes the alert to the log (logger ``apps.alerts.backends``, level ERROR): always
    delivers. For a shop with nothing else configured, and beside the others."""

    rate_per_minute = None

    def send(self, message: AlertMessage) -> None:
        logger.error("ALERT sent %s [%s] %s: %s", message.key, message.kind_label, message.title, message.text)


class WeComRobotBackend:
    """An enterprise-WeChat (企业微信) group robot: ``POST ALERT_WECOM_WEBHOOK_URL`` (``https://
    qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY``) with JSON ``{"msgtype": "markdown",
    "markdown": {"content"}}`` (or ``"text"``: ``ALERT_WECOM_MSGTYPE``), answered
    ``{"errcode": 0, "errmsg": "ok"}``. WeCom's limits (群机器人配置说明): markdown content
    4096 bytes, text 2048 (longer alerts are cut), 20 messages a minute per robot
    (``rate_per_minute``; more are answered errcode 45009). ``ALERT_TIMEOUT_SECONDS`` per call.
    The key never appears in a recorded error.
    """

    rate_per_minute = 20
    CONTENT_BYTES = {"markdown": 4096, "text": 2048}

    def __init__(self) -> None:
        self.url = settings.ALERT_WECOM_WEBHOOK_URL
        self.msgtype = settings.ALERT_WECOM_MSGTYPE
        self.timeout = settings.ALERT_TIMEOUT_SECONDS

    def payload(self, message: AlertMessage) -> dict:
        """The JSON body for ``message`` (markdown: a warning-coloured title, the text, the time
        and key quoted below; text: the same lines plain)."""
        if self.msgtype == "text":
            content = (
                f"{alert_tag()}{message.title}\n{message.text}\n"
                f"类型：{message.kind_label}\n时间：{message.time_text}\n告警键：{message.key}"
            )
            return {"msgtype": "text", "text": {"content": _cut(content, self.CONTENT_BYTES["text"])}}
        content = (
            f'### <font color="warning">{alert_tag()}{message.title}</font>\n{message.text}\n'
            f"> 类型：{message.kind_label}\n> 时间：{message.time_text}\n> 告警键：{message.key}"
        )
        return {"msgtype": "markdown", "markdown": {"content": _cut(content, self.CONTENT_BYTES["markdown"])}}

    def send(self, message: AlertMessage) -> None:
        if not self.url:
            raise AlertSendError("ALERT_WECOM_WEBHOOK_URL 未设置")
        try:
            response = requests.post(self.url, json=self.payload(message), timeout=self.timeout)
            response.raise_for_status()
            answer = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise AlertSendError(self._redact(f"{type(exc).__name__}: {exc}")) from None
        if not isinstance(answer, dict) or answer.get("errcode") != 0:
            errcode = answer.get("errcode") if isinstance(answer, dict) else None
            errmsg = answer.get("errmsg", "") if isinstance(answer, dict) else str(answer)[:200]
            raise AlertSendError(self._redact(f"企业微信机器人 errcode {errcode}: {errmsg}"))

    def _redact(self, text: str) -> str:
        """``text`` with the webhook key replaced by ``***`` (the key is the robot's password)."""
        key = self.url.partition("key=")[2].split("&")[0]
        return text.replace(key, "***") if key else text


class EmailBackend:
    """One mail to ``ALERT_EMAILS`` through Django's mail (``EMAIL_URL`` / ``EMAIL_BACKEND``;
    ``EMAIL_TIMEOUT`` for SMTP), from ``DEFAULT_FROM_EMAIL``; subject "【<shop name> 告警】title" (``starmall.shop.alert_tag``)."""

    rate_per_minute = None

    def send(self, message: AlertMessage) -> None:
        recipients = list(settings.ALERT_EMAILS)
        if not recipients:
            raise AlertSendError("ALERT_EMAILS 未设置")
        body = (
            f"{message.text}\n\n类型：{message.kind_label}\n时间：{message.time_text}\n"
            f"告警键：{message.key}\n\n请在后台「告警」中查看并标记已处理。"
        )
        send_mail(f"{alert_tag()}{message.title}", body, None, recipients, fail_silently=False)


def configured() -> list[tuple[str, object]]:
    """``[(dotted path, backend instance)]`` for ``settings.ALERT_BACKENDS``, in order (read on
    every call: settings may change in tests; building a backend is cheap)."""
    return [(path, import_string(path)()) for path in settings.ALERT_BACKENDS]

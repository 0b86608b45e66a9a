"""Pluggable SMS sending (``settings.SMS_BACKEND``): a log backend for development.

A real backend (Aliyun, Tencent Cloud SMS...) implements :class:`SmsBackend.send` and is named
in ``SMS_BACKEND``; it must raise on failure so the follow-up is retried.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)


class SmsBackend:
    """Interface: ``send(phone, text, key)``; ``key`` is unique per message (for dedupe)."""

    def send(self, *, phone: str, text: str, key: str) -> None:
        raise NotImplementedError


class LogSmsBackend(SmsBackend):
    """Development: writes the message to the log instead of sending it."""

    def send(self, *, phone: str, text: str, key: str) -> None:
        logger.info("SMS to %s [%s]: %s", phone, key, text)


def backend() -> SmsBackend:
    """The configured backend instance."""
    return import_string(settings.SMS_BACKEND)()

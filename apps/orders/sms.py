"""Pluggable SMS sending (``settings.SMS_BACKEND``): the providers live in ``apps.accounts.sms``
(a lower layer: the phone verification codes use them too); this module keeps the development
log backend under the orders' logger name and :func:`backend`.

A real backend (``apps.accounts.sms.TencentSmsBackend``) is named in ``SMS_BACKEND``; it must
raise on failure so the follow-up is retried.
"""

from __future__ import annotations

import logging

from apps.accounts.sms import SmsBackend, backend

__all__ = ["LogSmsBackend", "SmsBackend", "backend"]

logger = logging.getLogger(__name__)


class LogSmsBackend(SmsBackend):
    """Development: writes the message to the log instead of sending it."""

    def send(self, *, phone: str, text: str, key: str, template: str = "", params: tuple = ()) -> None:
        logger.info("SMS to %s [%s]: %s", phone, key, text)
